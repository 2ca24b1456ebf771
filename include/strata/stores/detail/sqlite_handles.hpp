#pragma once
/// @file
/// @brief SQLite's handles owned (the connection, a statement, memory it
/// allocated), its values read as `sql_value`, and identifiers quoted: what
/// sqlite_store.hpp builds on.

#include <strata/core/bytes.hpp>
#include <strata/stores/sqlite_values.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace strata {

namespace detail::sql {

struct close_db {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct finalize {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
struct free_memory {
    void operator()(void* p) const noexcept { sqlite3_free(p); }
};
using statement = std::unique_ptr<sqlite3_stmt, finalize>;

inline sql_value from_sqlite(sqlite3_value* v) {
    switch (sqlite3_value_type(v)) {
        case SQLITE_INTEGER: return static_cast<std::int64_t>(sqlite3_value_int64(v));
        case SQLITE_FLOAT: return sqlite3_value_double(v);
        case SQLITE_TEXT:
            return std::string(reinterpret_cast<const char*>(sqlite3_value_text(v)),
                               static_cast<std::size_t>(sqlite3_value_bytes(v)));
        case SQLITE_BLOB: {
            const auto* p = static_cast<const std::byte*>(sqlite3_value_blob(v));
            return byte_buffer(p, p + sqlite3_value_bytes(v));
        }
        default: return {};
    }
}

inline sql_value column(sqlite3_stmt* s, int i) { return from_sqlite(sqlite3_column_value(s, i)); }

/// "name" with its quotes doubled: an identifier SQLite reads as written.
inline std::string quoted(std::string_view name) {
    std::string q = "\"";
    for (char c : name) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + '"';
}

inline constexpr const char* meta_table = "strata_meta";

}  // namespace detail::sql

}  // namespace strata
