#pragma once
/// @file
/// @brief Length and count prefixes for variable-size values, and the
/// smallest size a value can encode to.
///
/// Every variable-size value nested in another one (a string in a struct, the
/// elements of a vector) starts with a 32-bit big-endian length or count, so
/// that the reader knows where it ends. A length read from untrusted bytes is
/// checked against the bytes that remain before anything is allocated: a
/// garbage prefix like 0xFFFFFFFF throws `serde_error` instead of reserving
/// gigabytes.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/arithmetic.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace strata {

namespace detail::serdes {
template <class S>
concept has_min_size = requires {
    { S::min_size } -> std::convertible_to<std::size_t>;
};
}  // namespace detail::serdes

/// @brief The fewest bytes any value of T encodes to: `serde<T>::min_size`
/// when the serde declares it, else 0 (unknown).
///
/// Lets a reader reject a count that cannot fit in the remaining bytes before
/// it reserves memory for it. A user serde should declare `min_size` if its
/// values are never empty.
template <class T>
[[nodiscard]] constexpr std::size_t min_encoded_size() noexcept {
    if constexpr (detail::serdes::has_min_size<serde<T>>) return static_cast<std::size_t>(serde<T>::min_size);
    else return 0;
}

namespace detail::serdes {

/// The size of a length or count prefix.
inline constexpr std::size_t length_prefix_size = sizeof(std::uint32_t);

/// Writes n as a u32 length prefix. A value too big for the prefix is a
/// caller error, found before any byte is written.
inline void write_length(std::size_t n, byte_buffer& out, std::string_view what) {
    if (n > std::numeric_limits<std::uint32_t>::max()) {
        throw usage_error("strata: cannot encode " + std::string(what) + " of " + std::to_string(n) +
                          " elements: a length prefix holds at most 2^32 - 1");
    }
    write_big_endian(static_cast<std::uint32_t>(n), out);
}

/// Reads a u32 length prefix counting elements that each take at least
/// min_each bytes, and throws (at the prefix's offset) if that many cannot
/// fit in what remains. With min_each == 0 nothing can be checked up front;
/// the caller then must not reserve more than the remaining bytes.
/// How many elements beyond the remaining bytes a count may name when its
/// elements can encode to no bytes at all (a struct with no fields): such a
/// count cannot be checked against the input, and an unchecked one from
/// corrupt bytes allocated 4 GiB. Larger counts are refused as corrupt.
inline constexpr std::size_t max_elements_beyond_input = 4096;

[[nodiscard]] inline std::size_t read_length(byte_reader& in, std::size_t min_each, std::string_view what) {
    const std::size_t at = in.position();
    const std::size_t n = read_big_endian<std::uint32_t>(in);
    if (min_each == 0 && n > in.remaining() + max_elements_beyond_input) {
        throw serde_error(in.type_name(), at,
                          std::string(what) + " " + std::to_string(n) + " is more than the " +
                              std::to_string(in.remaining()) + " bytes left could hold; elements that may encode to " +
                              "no bytes are limited to that plus " + std::to_string(max_elements_beyond_input) +
                              " (corrupt or truncated input)");
    }
    if (min_each > 0 && n > in.remaining() / min_each) {
        throw serde_error(in.type_name(), at,
                          std::string(what) + " " + std::to_string(n) + " needs at least " +
                              std::to_string(n) + " x " + std::to_string(min_each) +
                              " bytes but only " + std::to_string(in.remaining()) +
                              " remain (corrupt or truncated input)");
    }
    return n;
}

}  // namespace detail::serdes

}  // namespace strata
