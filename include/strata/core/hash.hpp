#pragma once
/// @file
/// @brief The hash strata's hashed containers use by default.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

#include <boost/container_hash/hash.hpp>

namespace strata {

/// @brief std::hash<K> where the standard library has one, else boost::hash<K>
/// (tuples, pairs, and types with a `hash_value` overload). std::hash comes
/// first: libstdc++ knows it is cheap for integers and strings and then
/// keeps no hash code in each node, which makes lookups measurably faster.
template <class K>
using default_hash_t =
    std::conditional_t<std::is_default_constructible_v<std::hash<K>>, std::hash<K>, boost::hash<K>>;

namespace detail {

/// @brief A hash with its bits spread, for tables that take a slot from the
/// low bits: std::hash of an integer is the integer itself, so keys that
/// differ only in high bits would share a slot. Fibonacci hashing's
/// multiplier, then a fold of the high bits into the low ones.
[[nodiscard]] constexpr std::size_t spread_hash(std::size_t hash) noexcept {
    const std::uint64_t h = static_cast<std::uint64_t>(hash) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace detail

}  // namespace strata
