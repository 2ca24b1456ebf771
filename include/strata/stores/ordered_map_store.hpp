#pragma once
/// @file
/// @brief An ordered in-memory key-value store over std::map.

#include <strata/core/concepts.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <range/v3/view/all.hpp>
#include <range/v3/view/subrange.hpp>

namespace strata {

/// @brief An in-memory key-value store with ordered iteration; models
/// `ordered_kv_store`. Not persistent: after a restart it is rebuilt from the
/// changelog, starting at offset 0.
///
/// @tparam K key type, ordered by Compare
/// @tparam V mapped type
template <class K, class V, class Compare = std::less<K>>
class ordered_map_store {
public:
    using key_type = K;
    using mapped_type = V;
    using map_type = std::map<K, V, Compare>;
    using put_type = put_op<K, V>;
    using erase_type = erase_op<K>;

    explicit ordered_map_store(std::string name) : name_(std::move(name)) {}

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

    /// @brief Entries with lo <= key <= hi, ascending, as a range-v3 view of
    /// `std::pair<const K, V>`. Invalidated by writes to the store.
    [[nodiscard]] auto range(const K& lo, const K& hi) const {
        auto first = map_.lower_bound(lo);
        auto last = map_.upper_bound(hi);
        if (map_.key_comp()(hi, lo)) last = first;  // empty, never an inverted range
        return ranges::subrange(first, last);
    }
    /// @brief Every entry, ascending, as a range-v3 view.
    [[nodiscard]] auto all() const { return ranges::views::all(map_); }

    [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
    [[nodiscard]] bool empty() const noexcept { return map_.empty(); }
    void clear() noexcept { map_.clear(); }

    /// @brief Equal contents (names are not compared).
    friend bool operator==(const ordered_map_store& a, const ordered_map_store& b) {
        return a.map_ == b.map_;
    }

private:
    std::string name_;
    map_type map_;
};

}  // namespace strata
