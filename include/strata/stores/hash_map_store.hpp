#pragma once
/// @file
/// @brief A hashed in-memory key-value store over std::unordered_map.

#include <strata/core/hash.hpp>
#include <strata/stores/detail/map_store_base.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

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

    /// @brief The value under `key`, default-constructed first when `key` is
    /// absent, for the caller to assign at once. A restore writes a record's
    /// value into it (kv_codec::restore), so overwriting a key reuses the
    /// storage of its old value instead of building a new one and freeing
    /// the old.
    [[nodiscard]] typename base_t::mapped_type& value_for_overwrite(typename base_t::key_type&& key) {
        return this->map_.try_emplace(std::move(key)).first->second;
    }

    /// @brief A hint that `key` is looked up soon: starts fetching its
    /// entry's memory. A restore announces several keys before it applies
    /// them (see restore_from), so their cache misses overlap.
    void prefetch(const typename base_t::key_type& key) const noexcept {
        const std::size_t b = this->map_.bucket(key);
        const auto it = this->map_.begin(b);
        if (it != this->map_.end(b)) __builtin_prefetch(std::addressof(*it), 1);
    }
};

}  // namespace strata
