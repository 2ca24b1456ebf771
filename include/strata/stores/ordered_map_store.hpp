#pragma once
/// @file
/// @brief An ordered in-memory key-value store over std::map.

#include <strata/stores/detail/map_store_base.hpp>

#include <functional>
#include <map>
#include <string>

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
class ordered_map_store : public detail::map_store_base<std::map<K, V, Compare>> {
    using base_t = detail::map_store_base<std::map<K, V, Compare>>;

public:
    using base_t::base_t;

    /// @brief Entries with lo <= key <= hi, ascending, as a range-v3 view of
    /// `std::pair<const K, V>`. Invalidated by writes to the store.
    [[nodiscard]] auto range(const K& lo, const K& hi) const {
        auto first = this->map_.lower_bound(lo);
        auto last = this->map_.upper_bound(hi);
        if (this->map_.key_comp()(hi, lo)) last = first;  // empty, never an inverted range
        return ranges::subrange(first, last);
    }
    /// @brief Every entry, ascending, as a range-v3 view.
    [[nodiscard]] auto all() const { return ranges::views::all(this->map_); }
};

}  // namespace strata
