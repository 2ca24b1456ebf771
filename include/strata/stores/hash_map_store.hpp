#pragma once
/// @file
/// @brief A hashed in-memory key-value store over std::unordered_map.

#include <strata/core/concepts.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/container_hash/hash.hpp>
#include <range/v3/view/all.hpp>

namespace strata {

/// @brief An in-memory key-value store with O(1) point access; models
/// `kv_store` (not `ordered_kv_store`: `all()` is in no particular order).
/// Keys hash with boost::hash, so tuples, pairs and strings work as keys.
template <class K, class V, class Hash = boost::hash<K>, class KeyEqual = std::equal_to<K>>
class hash_map_store {
public:
    using key_type = K;
    using mapped_type = V;
    using map_type = std::unordered_map<K, V, Hash, KeyEqual>;
    using put_type = put_op<K, V>;
    using erase_type = erase_op<K>;

    explicit hash_map_store(std::string name) : name_(std::move(name)) {}

    [[nodiscard]] std::string_view name() const noexcept { return name_; }

    [[nodiscard]] std::optional<V> get(const K& key) const {
        auto it = map_.find(key);
        if (it == map_.end()) return std::nullopt;
        return it->second;
    }
    void put(const K& key, const V& value) { map_.insert_or_assign(key, value); }
    void put(K&& key, V&& value) { map_.insert_or_assign(std::move(key), std::move(value)); }
    bool erase(const K& key) { return map_.erase(key) != 0; }

    void apply(const put_type& u) { put(u.key, u.value); }
    void apply(const erase_type& u) { erase(u.key); }

    /// @brief Every entry, in unspecified order, as a range-v3 view.
    [[nodiscard]] auto all() const { return ranges::views::all(map_); }

    [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
    [[nodiscard]] bool empty() const noexcept { return map_.empty(); }
    void clear() noexcept { map_.clear(); }
    /// @brief Pre-sizes the table, e.g. before a restore of a known size.
    void reserve(std::size_t n) { map_.reserve(n); }

    friend bool operator==(const hash_map_store& a, const hash_map_store& b) {
        return a.map_ == b.map_;
    }

private:
    std::string name_;
    map_type map_;
};

}  // namespace strata
