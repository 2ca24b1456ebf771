#pragma once
/// @file
/// @brief Time arithmetic the stores that keep data for a retention share
/// (window, session, versioned): how far back from their stream time they
/// keep, without overflowing near the ends of the int64 range.

#include <cstdint>
#include <limits>

namespace strata::detail {

/// a - b, held at the int64 range's ends rather than overflowing (a stream
/// time near the range's start less a retention).
[[nodiscard]] constexpr std::int64_t minus_saturating(std::int64_t a, std::int64_t b) noexcept {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
    return r;
}

}  // namespace strata::detail
