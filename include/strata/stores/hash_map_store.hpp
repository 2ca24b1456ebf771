#pragma once
/// @file
/// @brief A hashed in-memory key-value store over std::unordered_map.

#include <strata/core/hash.hpp>
#include <strata/stores/detail/map_store_base.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
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

    /// @brief A hint that `keys` are looked up soon: starts fetching their
    /// entries' memory, all keys' at once, so that the cache misses overlap
    /// instead of coming one after another. A restore announces the keys of
    /// the next records before it applies them (see restore_from).
    void prefetch(std::span<const typename base_t::key_type> keys) const noexcept {
        // In steps over all keys, each step a short loop whose loads do not
        // depend on each other: the processor keeps many of them in flight.
        constexpr std::size_t step = 16;
        std::array<std::size_t, step> buckets{};
        std::array<const void*, step> entries{};
        for (std::size_t first = 0; first < keys.size(); first += step) {
            const std::size_t n = std::min(step, keys.size() - first);
            for (std::size_t i = 0; i < n; ++i) buckets[i] = this->map_.bucket(keys[first + i]);
            for (std::size_t i = 0; i < n; ++i) {  // reads the bucket's slot
                const auto it = this->map_.begin(buckets[i]);
                entries[i] = it != this->map_.end(buckets[i]) ? std::addressof(*it) : nullptr;
            }
            for (std::size_t i = 0; i < n; ++i)
                if (entries[i] != nullptr) __builtin_prefetch(entries[i], 1);
        }
    }
};

}  // namespace strata
