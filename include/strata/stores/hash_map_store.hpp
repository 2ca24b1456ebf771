#pragma once
/// @file
/// @brief A hashed in-memory key-value store over an open-addressing table.

#include <strata/core/hash.hpp>
#include <strata/stores/detail/flat_map.hpp>
#include <strata/stores/detail/map_store_base.hpp>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include <range/v3/view/all.hpp>

namespace strata {

/// @brief An in-memory key-value store with O(1) point access; models
/// `kv_store` (not `ordered_kv_store`: `all()` is in no particular order).
/// Keys hash with std::hash where it exists and boost::hash otherwise, so
/// tuples and pairs work as keys too (see default_hash_t).
///
/// The entries live in the table itself (detail::flat_map): a get costs one
/// cache miss and a put of a new key allocates nothing but what the key and
/// value own. The price is that entries move when the table grows, so a
/// view from all() is invalidated by any write, and K and V need a noexcept
/// move constructor.
template <class K, class V, class Hash = default_hash_t<K>, class KeyEqual = std::equal_to<K>>
class hash_map_store : public detail::map_store_base<detail::flat_map<K, V, Hash, KeyEqual>> {
    using base_t = detail::map_store_base<detail::flat_map<K, V, Hash, KeyEqual>>;

public:
    using base_t::base_t;

    /// @brief Every entry (a `std::pair<K, V>`), in unspecified order, as a
    /// range-v3 view. Invalidated by writes to the store.
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

    /// @brief A hint that `keys` are looked up soon: starts loading their
    /// slots, all at once, so that the cache misses overlap instead of
    /// coming one after another. A restore announces the keys of the next
    /// records before it applies them (see restore_from).
    void prefetch(std::span<const typename base_t::key_type> keys) const noexcept {
        for (const auto& key : keys) this->map_.prefetch(key);
    }
    /// @brief prefetch() of one key.
    void prefetch(const typename base_t::key_type& key) const noexcept { this->map_.prefetch(key); }
};

}  // namespace strata
