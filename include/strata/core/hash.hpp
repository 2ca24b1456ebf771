#pragma once
/// @file
/// @brief The hash strata's hashed containers use by default.

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

}  // namespace strata
