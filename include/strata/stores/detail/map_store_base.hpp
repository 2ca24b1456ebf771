#pragma once
/// @file
/// @brief What the in-memory kv stores share: a name and a standard map.

#include <strata/core/concepts.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata::detail {

/// @brief A kv store over a standard associative container Map
/// (std::map or detail::flat_map): the point operations and updates;
/// each store adds its own iteration.
template <class Map>
class map_store_base {
public:
    using key_type = typename Map::key_type;
    using mapped_type = typename Map::mapped_type;
    using map_type = Map;
    using put_type = put_op<key_type, mapped_type>;
    using erase_type = erase_op<key_type>;

    explicit map_store_base(std::string name) : name_(std::move(name)) {}

    [[nodiscard]] std::string_view name() const noexcept { return name_; }

    [[nodiscard]] std::optional<mapped_type> get(const key_type& key) const { return optional_of(find(key)); }
    /// @brief The stored value of key, or null; valid until the store changes.
    [[nodiscard]] const mapped_type* find(const key_type& key) const {
        auto it = map_.find(key);
        return it == map_.end() ? nullptr : &it->second;
    }
    void put(const key_type& key, const mapped_type& value) { map_.insert_or_assign(key, value); }
    void put(key_type&& key, mapped_type&& value) { map_.insert_or_assign(std::move(key), std::move(value)); }
    bool erase(const key_type& key) { return map_.erase(key) != 0; }

    void apply(const put_type& u) { put(u.key, u.value); }
    void apply(const erase_type& u) { erase(u.key); }

    [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
    [[nodiscard]] bool empty() const noexcept { return map_.empty(); }
    void clear() noexcept { map_.clear(); }

    /// @brief Equal contents (names are not compared).
    friend bool operator==(const map_store_base& a, const map_store_base& b) { return a.map_ == b.map_; }

protected:
    std::string name_;
    Map map_;
};

}  // namespace strata::detail
