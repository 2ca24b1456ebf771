#pragma once
/// @file
/// @brief `multi_table_codec`: the codec of a store with several tables,
/// composed from one small codec per table.
///
/// A changelog codec has one key type, while a relational store usually
/// holds several tables, each with its own primary key. Write one codec per
/// table, as for a store with one table (key_type, write_key, write_value,
/// restore, and touched for the updates that change that table), and
/// compose them:
///
///     using shop_codec = strata::multi_table_codec<customer_codec, order_codec>;
///
/// Its key is `std::variant<customer_codec::key_type, order_codec::key_type>`
/// (alternative i for table i, even when two tables share a key type). A
/// record key is one byte, the table's position in the list, then the
/// table codec's own record key; the value is the table codec's. So a table
/// is identified by its position: add new tables at the end, and never
/// reorder or remove one while a changelog written with the old list must
/// still restore.
///
/// An update's touched keys are those of every table codec that has a
/// `touched` for it, in list order: an update that changes rows of two
/// tables (an order and its customer's balance) is one update, logged as
/// one record per changed row of either table.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace strata {

namespace detail {
template <class C, class S, class U>
concept table_codec_touches = requires(const C& c, const S& s, const U& u) {
    { c.touched(s, u) } -> std::ranges::input_range;
};
}  // namespace detail

/// @brief The codec of a store with several tables: table i's units are
/// kept by `TableCodecs...[i]` (see the file comment for the format).
/// @tparam TableCodecs one codec per table, each a changelog_codec for the store
template <class... TableCodecs>
class multi_table_codec {
    static_assert(sizeof...(TableCodecs) >= 1 && sizeof...(TableCodecs) <= 256,
                  "strata::multi_table_codec: give it between 1 and 256 table codecs");

public:
    /// @brief A unit of state: a row of table i, as alternative i.
    using key_type = std::variant<typename TableCodecs::key_type...>;

    multi_table_codec() = default;
    explicit multi_table_codec(TableCodecs... codecs) : codecs_(std::move(codecs)...) {}

    /// @brief The key of a row of table I, e.g. `codec.key<1>(order_id)`.
    template <std::size_t I, class K>
    [[nodiscard]] static key_type key(K&& k) {
        return key_type(std::in_place_index<I>, std::forward<K>(k));
    }

    /// @brief The rows u touches in every table whose codec has a
    /// `touched(store, u)`, table by table, before u is applied.
    template <class Store, class U>
        requires(detail::table_codec_touches<TableCodecs, Store, U> || ...)
    [[nodiscard]] std::vector<key_type> touched(const Store& s, const U& u) const {
        std::vector<key_type> keys;
        for_each_table([&]<std::size_t I>(const auto& codec) {
            if constexpr (detail::table_codec_touches<std::remove_cvref_t<decltype(codec)>, Store, U>)
                for (auto&& k : codec.touched(s, u)) keys.emplace_back(std::in_place_index<I>, k);
        });
        return keys;
    }

    /// @brief The table's position, one byte, then its codec's record key.
    void write_key(const key_type& k, byte_buffer& out) const {
        out.push_back(static_cast<std::byte>(k.index()));
        visit_table(k, [&](const auto& codec, const auto& table_key) { codec.write_key(table_key, out); });
    }

    /// @brief The row's current state, as its table's codec writes it.
    template <class Store>
    bool write_value(const Store& s, const key_type& k, byte_buffer& out) const {
        return visit_table(k, [&](const auto& codec, const auto& table_key) -> bool {
            return codec.write_value(s, table_key, out);
        });
    }

    /// @brief Restores the record through the codec of the table its first
    /// byte names.
    /// @throws serde_error an empty key, or a table byte past the last table
    template <class Store>
    void restore(Store& s, const record_view& r) const {
        if (r.key.empty())
            throw serde_error("strata::multi_table_codec key", 0, "an empty record key has no table byte");
        const auto table = std::to_integer<std::size_t>(r.key[0]);
        if (table >= sizeof...(TableCodecs))
            throw serde_error("strata::multi_table_codec key", 0,
                              "table byte " + std::to_string(table) + ", but the codec has " +
                                  std::to_string(sizeof...(TableCodecs)) + " table(s)");
        record_view inner = r;
        inner.key = r.key.subspan(1);
        for_each_table([&]<std::size_t I>(const auto& codec) {
            if (I == table) codec.restore(s, inner);
        });
    }

    /// @brief The codec of table I.
    template <std::size_t I>
    [[nodiscard]] const auto& table() const noexcept {
        return std::get<I>(codecs_);
    }

private:
    template <class F>
    void for_each_table(F&& f) const {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (f.template operator()<I>(std::get<I>(codecs_)), ...);
        }(std::index_sequence_for<TableCodecs...>{});
    }

    template <class F>
    decltype(auto) visit_table(const key_type& k, F&& f) const {
        return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
            using result = decltype(f(std::get<0>(codecs_), std::get<0>(k)));
            if constexpr (std::is_void_v<result>) {
                ((k.index() == I ? (f(std::get<I>(codecs_), std::get<I>(k)), true) : false) || ...);
            } else {
                result r{};
                ((k.index() == I ? (r = f(std::get<I>(codecs_), std::get<I>(k)), true) : false) || ...);
                return r;
            }
        }(std::index_sequence_for<TableCodecs...>{});
    }

    std::tuple<TableCodecs...> codecs_;
};

}  // namespace strata
