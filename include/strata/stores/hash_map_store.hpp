#pragma once
/// @file
/// @brief A hashed in-memory key-value store over std::unordered_map.

#include <strata/core/hash.hpp>
#include <strata/stores/detail/map_store_base.hpp>

#include <functional>
#include <string>
#include <unordered_map>

#include <range/v3/view/all.hpp>

namespace strata {

/// @brief An in-memory key-value store with O(1) point access; models
/// `kv_store` (not `ordered_kv_store`: `all()` is in no particular order).
/// Keys hash with std::hash where it exists and boost::hash otherwise, so
/// tuples and pairs work as keys too (see default_hash_t).
template <class K, class V, class Hash = default_hash_t<K>, class KeyEqual = std::equal_to<K>>
class hash_map_store : public detail::map_store_base<std::unordered_map<K, V, Hash, KeyEqual>> {
    using base_t = detail::map_store_base<std::unordered_map<K, V, Hash, KeyEqual>>;

public:
    using base_t::base_t;

    /// @brief Every entry, in unspecified order, as a range-v3 view.
    [[nodiscard]] auto all() const { return ranges::views::all(this->map_); }

    /// @brief Pre-sizes the table, e.g. before a restore of a known size.
    void reserve(std::size_t n) { this->map_.reserve(n); }
};

}  // namespace strata
