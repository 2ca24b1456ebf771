#pragma once
/// @file
/// @brief What crosses a sqlite_store's interface (sqlite_store.hpp): one
/// SQLite value (`sql_value`) and its serde, an update (`sql`), a row as the
/// changelog names it (`row_key`), and how the store opens its database
/// (`sqlite_options`).

#include <strata/core/bytes.hpp>
#include <strata/core/byte_reader.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/encode.hpp>

#include <sqlite3.h>

#include <boost/container_hash/hash.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace strata {

/// @brief One SQLite value: NULL, INTEGER, REAL, TEXT or BLOB.
struct sql_value {
    std::variant<std::monostate, std::int64_t, double, std::string, byte_buffer> v;

    sql_value() = default;  ///< NULL
    sql_value(std::nullptr_t) {}
    template <std::integral I>
        requires(!std::same_as<I, bool>)
    sql_value(I i) : v(static_cast<std::int64_t>(i)) {}
    template <std::floating_point F>
    sql_value(F d) : v(static_cast<double>(d)) {}
    sql_value(std::string s) : v(std::move(s)) {}
    sql_value(const char* s) : v(std::string(s)) {}
    sql_value(byte_buffer b) : v(std::move(b)) {}

    [[nodiscard]] bool is_null() const noexcept { return std::holds_alternative<std::monostate>(v); }
    friend bool operator==(const sql_value&, const sql_value&) = default;
};

/// @brief A tag byte (0 NULL, 1 INTEGER, 2 REAL, 3 TEXT, 4 BLOB), then the
/// value as its own serde writes it.
template <>
struct serde<sql_value> {
    static constexpr std::size_t min_size = 1;
    static void write(const sql_value& x, byte_buffer& out) {
        out.push_back(static_cast<std::byte>(x.v.index()));
        std::visit(
            [&](const auto& alt) {
                using T = std::decay_t<decltype(alt)>;
                if constexpr (!std::is_same_v<T, std::monostate>) serde<T>::write(alt, out);
            },
            x.v);
    }
    [[nodiscard]] static sql_value read(byte_reader& in) {
        switch (static_cast<unsigned>(in.take(1)[0])) {
            case 0: return {};
            case 1: return serde<std::int64_t>::read(in);
            case 2: return serde<double>::read(in);
            case 3: return serde<std::string>::read(in);
            case 4: return serde<byte_buffer>::read(in);
            default: in.fail("an SQL value's type tag is not 0 to 4");
        }
    }
};

/// @brief An update: SQL statements, with parameters bound to `?1`, `?2`, ...
/// of each statement.
struct sql {
    std::string text;
    std::vector<sql_value> params = {};
};

/// @brief One row, identified for the changelog: its table and its primary
/// key values (encoded, so that keys compare and hash as bytes).
struct row_key {
    std::string table;
    byte_buffer primary_key;  ///< encode(std::vector<sql_value>) of the key columns, in column order
    friend bool operator==(const row_key&, const row_key&) = default;
    friend std::size_t hash_value(const row_key& k) {
        std::size_t h = boost::hash_value(k.table);
        boost::hash_combine(h, boost::hash_range(k.primary_key.begin(), k.primary_key.end()));
        return h;
    }
};

/// @brief How a sqlite_store opens its database.
struct sqlite_options {
    bool foreign_keys = true;  ///< PRAGMA foreign_keys
    /// Any other setting, run after opening (e.g. PRAGMAs, user functions).
    std::function<void(sqlite3*)> tune = {};
};

}  // namespace strata
