#pragma once
/// @file
/// @brief A relational store on SQLite, made fault tolerant without any
/// per-table code. Its own CMake target, `strata::sqlite`.
///
///     strata::sqlite_store db("hr", "hr.db");            // or ":memory:"
///     db.schema("CREATE TABLE employee(id INTEGER PRIMARY KEY, name TEXT, salary INTEGER)");
///     auto store = std::move(db) | strata::logged(log);   // sqlite_codec, the store's codec
///     store.restore();
///     store.apply(strata::sql{"UPDATE employee SET salary = salary + ?1 WHERE salary < ?2", {100, 5000}});
///     store.flush();
///
/// Each update is SQL run by SQLite. SQLite reports every row it changes to
/// its preupdate hook (the mechanism of its session extension), and the
/// changelog gets one record per changed row:
/// the table and primary key as the record's key, the row's current values
/// as its value, or a tombstone for a deleted row. Restore writes the rows
/// back. The codec learns the rows while the update runs (`apply_observed`,
/// the observing form of the codec concept), since no code outside SQLite
/// can tell beforehand which rows a statement will change.
///
/// The store keeps one SQLite transaction open: updates run inside it (each
/// in a savepoint, so that a statement that fails leaves nothing behind),
/// reads see them, and `commit(offset)` commits them together with the
/// changelog offset (a `self_checkpointing_store`): a database on disk holds
/// exactly its last commit after a crash and restores only the changelog
/// past it.

// The preupdate hook's declarations (Debian's libsqlite3 is built with it).
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#endif

#include <strata/core/bytes.hpp>
#include <strata/core/byte_reader.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/detail/sqlite_handles.hpp>
#include <strata/stores/sqlite_values.hpp>

#include <sqlite3.h>

#include <tuple>

#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace strata {

class sqlite_codec;


/// @brief A relational store on SQLite; see the file comment.
///
/// Tables need a PRIMARY KEY (the changelog identifies rows by it; `schema`
/// refuses a table without one). The schema is the program's, not the
/// changelog's: create it with `schema()` before `restore()`, the same way
/// in every instance (with IF NOT EXISTS, for a database on disk that
/// already has it).
class sqlite_store {
public:
    using codec_type = sqlite_codec;
    using update_type = sql;

    /// @brief What the changelog needs to know of a table.
    struct table_info {
        std::vector<std::string> columns;
        std::vector<int> key_columns;  ///< indexes into `columns`, in column order
        std::string select_by_key;     ///< SELECT * ... WHERE key = ?1 ...
        std::string delete_by_key;     ///< DELETE ... WHERE key = ?1 ...
        std::string upsert;            ///< INSERT ... ON CONFLICT (key) DO UPDATE ...
    };

    /// @brief Opens (or creates) the database at `path`; ":memory:" for one in memory.
    /// @throws store_error SQLite cannot open it, with SQLite's message
    explicit sqlite_store(std::string name, std::string path = ":memory:", sqlite_options o = {})
        : name_(std::move(name)), path_(std::move(path)) {
        sqlite3* db = nullptr;
        const int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
        db_.reset(db);
        if (rc != SQLITE_OK) fail(rc, "open " + path_);
        exec(o.foreign_keys ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF");
        if (o.tune) o.tune(db_.get());
        exec(std::string("CREATE TABLE IF NOT EXISTS ") + detail::sql::meta_table +
             "(key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
        exec("BEGIN");
        (void)load_tables();
    }

    sqlite_store(sqlite_store&&) noexcept = default;
    sqlite_store& operator=(sqlite_store&&) = delete;
    /// Rolls back what was not committed, as a crash would, and closes.
    ~sqlite_store() { close(); }

    /// @brief Rolls back what was not committed and closes the connection
    /// now, as the destructor does. Any later use (but destruction) throws
    /// usage_error.
    void close() noexcept {
        if (!db_) return;
        statements_.clear();
        sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
        db_.reset();
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    /// A database on disk keeps its data; one in memory does not.
    [[nodiscard]] bool persistent() const noexcept { return path_ != ":memory:" && !path_.empty(); }

    /// @brief Runs DDL (CREATE TABLE, CREATE INDEX, ...): not logged, so
    /// every instance runs the same schema before restoring.
    /// @throws store_error SQLite rejects it
    /// @throws usage_error a table has no PRIMARY KEY
    void schema(std::string_view ddl) {
        exec(ddl);
        for (const std::string& t : load_tables())
            if (table(t).key_columns.empty())
                throw usage_error("strata::sqlite_store '" + name_ + "': table " + t +
                                  " has no PRIMARY KEY; the changelog identifies rows by it");
    }

    /// @brief Runs the update's statements in a savepoint: all of them, or
    /// (when one fails) none.
    /// @returns the rows its INSERT, UPDATE and DELETE statements changed,
    ///          as sqlite3_changes() counts them (not those changed by
    ///          triggers or foreign key actions)
    /// @throws store_error SQLite's message, naming the statement
    std::int64_t apply(const sql& u) {
        run(savepoint_);
        const sqlite3_int64 before = sqlite3_total_changes64(db());
        try {
            run(u);
            if (!observe_error_.empty()) throw usage_error(observe_error_);
        } catch (...) {
            sqlite3_exec(db(), "ROLLBACK TO strata_update; RELEASE strata_update", nullptr, nullptr, nullptr);
            throw;
        }
        const sqlite3_int64 changed = sqlite3_total_changes64(db()) - before;
        run(release_);
        return changed;
    }

    /// @brief Applies u and returns the rows it changed (inserted, updated
    /// or deleted, by cascades and triggers too), each once. SQLite reports
    /// every row change to the preupdate hook, the mechanism its session
    /// extension is built on; the hook records the primary keys of the rows.
    /// What sqlite_codec::apply_observed calls; `result` is what apply(u)
    /// returns.
    observed_update<std::vector<row_key>, std::int64_t> apply_observed(const sql& u) {
        observed_.clear();
        observe_error_.clear();
        struct hook_guard {
            sqlite_store& s;
            ~hook_guard() {
                if (s.db_) sqlite3_preupdate_hook(s.db_.get(), nullptr, nullptr);
                s.observe_error_.clear();
            }
        } guard{*this};
        sqlite3_preupdate_hook(db(), &sqlite_store::on_preupdate, this);
        const std::int64_t changed = apply(u);  // rolls u back and throws if the hook could not name a changed row
        std::sort(observed_.begin(), observed_.end(), [](const row_key& a, const row_key& b) {
            return std::tie(a.table, a.primary_key) < std::tie(b.table, b.primary_key);
        });
        observed_.erase(std::unique(observed_.begin(), observed_.end()), observed_.end());
        return {std::move(observed_), changed};
    }

    /// @brief Runs a query and returns its rows.
    /// @throws store_error SQLite rejects it
    [[nodiscard]] std::vector<std::vector<sql_value>> query(std::string_view text,
                                                            const std::vector<sql_value>& params = {}) const {
        sqlite3_stmt* s = prepared(text);
        bind(s, params);
        std::vector<std::vector<sql_value>> rows;
        int rc = SQLITE_OK;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            std::vector<sql_value> row;
            for (int i = 0, n = sqlite3_column_count(s); i < n; ++i) row.push_back(detail::sql::column(s, i));
            rows.push_back(std::move(row));
        }
        if (rc != SQLITE_DONE) fail(rc, "run '" + std::string(text) + "'", s);
        sqlite3_reset(s);
        return rows;
    }

    /// @brief The columns and primary key of `table`, from SQLite (cached until the next schema()).
    /// @throws usage_error no such table
    const table_info& table(const std::string& t) const {
        if (const auto it = tables_.find(t); it != tables_.end()) return it->second;
        table_info info;
        std::vector<std::pair<int, int>> keys;  // (position in the key, column)
        for (const auto& row : query("SELECT name, pk FROM pragma_table_info(?1) ORDER BY cid", {t})) {
            const auto pk = std::get<std::int64_t>(row.at(1).v);
            if (pk > 0) keys.emplace_back(static_cast<int>(pk), static_cast<int>(info.columns.size()));
            info.columns.push_back(std::get<std::string>(row.at(0).v));
        }
        if (info.columns.empty()) throw usage_error("strata::sqlite_store '" + name_ + "': no table " + t);
        for (const auto& [position, col] : keys) info.key_columns.push_back(col);
        std::sort(info.key_columns.begin(), info.key_columns.end());
        if (!info.key_columns.empty()) {
            info.select_by_key = "SELECT * FROM " + detail::sql::quoted(t) + where_key(info);
            info.delete_by_key = "DELETE FROM " + detail::sql::quoted(t) + where_key(info);
            info.upsert = upsert_text(t, info);
        }
        return tables_.emplace(t, std::move(info)).first->second;
    }

    /// @brief The current values of the row `k` names, or none if it does not exist.
    [[nodiscard]] std::optional<std::vector<sql_value>> row(const row_key& k) const {
        const table_info& t = table(k.table);
        auto rows = query(t.select_by_key, decode<std::vector<sql_value>>(k.primary_key));
        if (rows.empty()) return std::nullopt;
        return std::move(rows.front());
    }

    /// @brief Writes a row back from the changelog: inserted, or updated in
    /// place when its key exists (an upsert, not INSERT OR REPLACE, whose
    /// delete would cascade to the rows that refer to it).
    void put_row(const std::string& t, const std::vector<sql_value>& values) {
        const table_info& info = table(t);
        if (values.size() != info.columns.size())
            throw serde_error("row of " + t, 0,
                              std::to_string(values.size()) + " values for " + std::to_string(info.columns.size()) +
                                  " columns: the changelog was written for another schema");
        run(sql{info.upsert, values});
    }
    /// @brief Foreign keys checked at the commit rather than per statement,
    /// until then (restore: rows arrive in changelog order).
    void defer_foreign_keys() { exec("PRAGMA defer_foreign_keys = ON"); }
    /// @brief Deletes a row the changelog says is gone.
    void delete_row(const row_key& k) {
        const table_info& t = table(k.table);
        run(sql{t.delete_by_key, decode<std::vector<sql_value>>(k.primary_key)});
    }

    /// @brief Commits the open transaction together with the changelog
    /// offset below which the store holds every record; see the file comment.
    /// @throws store_error SQLite cannot commit (a deferred foreign key
    ///         violated, a full disk); the transaction stays open
    void commit(offset_t changelog_offset) {
        run(sql{std::string("INSERT OR REPLACE INTO ") + detail::sql::meta_table + " VALUES ('committed-offset', ?1)",
                {static_cast<std::int64_t>(changelog_offset)}});
        exec("COMMIT");
        exec("BEGIN");
    }
    /// @brief The offset of the last commit(), or none before the first.
    [[nodiscard]] std::optional<offset_t> committed_offset() const {
        const auto rows = query(std::string("SELECT value FROM ") + detail::sql::meta_table +
                                " WHERE key = 'committed-offset'");
        if (rows.empty()) return std::nullopt;
        return static_cast<offset_t>(std::get<std::int64_t>(rows.front().at(0).v));
    }
    /// @brief Commits the open transaction without an offset.
    void flush() {
        exec("COMMIT");
        exec("BEGIN");
    }
    /// @brief Rolls back what was not committed (an aborted transaction's updates).
    void discard() {
        exec("ROLLBACK");
        exec("BEGIN");
    }

    /// @brief The SQLite connection, for what this class does not offer.
    /// Writing through it bypasses the changelog.
    [[nodiscard]] sqlite3* handle() const noexcept { return db_.get(); }

private:
    [[nodiscard]] sqlite3* db() const {
        if (!db_) throw usage_error("strata::sqlite_store '" + name_ + "': used after close()");
        return db_.get();
    }

    /// Throws SQLite's message for `what`; resets `s` (after taking the
    /// message), so that a failed statement holds no lock.
    [[noreturn]] void fail(int rc, const std::string& what, sqlite3_stmt* s = nullptr) const {
        std::string message = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
        if (s != nullptr) sqlite3_reset(s);
        throw store_error("strata::sqlite_store '" + name_ + "': cannot " + what + ": " + message);
    }
    void check(int rc, const std::string& what) const {
        if (rc != SQLITE_OK) fail(rc, what);
    }
    void exec(std::string_view text) {
        const std::string s(text);
        char* message = nullptr;
        const int rc = sqlite3_exec(db(), s.c_str(), nullptr, nullptr, &message);
        const std::unique_ptr<char, detail::sql::free_memory> owned(message);
        if (rc != SQLITE_OK)
            throw store_error("strata::sqlite_store '" + name_ + "': cannot run '" + s +
                              "': " + (message != nullptr ? message : sqlite3_errstr(rc)));
    }

    /// A prepared statement for one statement's text, kept for reuse.
    sqlite3_stmt* prepared(std::string_view text) const {
        const std::string key(text);
        if (const auto it = statements_.find(key); it != statements_.end()) {
            sqlite3_reset(it->second.get());
            sqlite3_clear_bindings(it->second.get());
            return it->second.get();
        }
        sqlite3_stmt* s = nullptr;
        const int rc = sqlite3_prepare_v3(db(), key.data(), static_cast<int>(key.size()),
                                          SQLITE_PREPARE_PERSISTENT, &s, nullptr);
        if (rc != SQLITE_OK) fail(rc, "prepare '" + key + "'");
        if (s == nullptr) throw usage_error("strata::sqlite_store '" + name_ + "': no statement in '" + key + "'");
        return statements_.emplace(key, detail::sql::statement(s)).first->second.get();
    }

    void bind(sqlite3_stmt* s, const std::vector<sql_value>& params) const {
        const int n = sqlite3_bind_parameter_count(s);
        for (int i = 0; i < n && i < static_cast<int>(params.size()); ++i) {
            const sql_value& p = params[static_cast<std::size_t>(i)];
            int rc = SQLITE_OK;
            std::visit(
                [&](const auto& x) {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, std::monostate>) rc = sqlite3_bind_null(s, i + 1);
                    else if constexpr (std::is_same_v<T, std::int64_t>) rc = sqlite3_bind_int64(s, i + 1, x);
                    else if constexpr (std::is_same_v<T, double>) rc = sqlite3_bind_double(s, i + 1, x);
                    else if constexpr (std::is_same_v<T, std::string>)
                        rc = sqlite3_bind_text64(s, i + 1, x.data(), x.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
                    else rc = sqlite3_bind_blob64(s, i + 1, x.data(), x.size(), SQLITE_TRANSIENT);
                },
                p.v);
            if (rc != SQLITE_OK) fail(rc, "bind parameter " + std::to_string(i + 1));
        }
    }

    /// Runs every statement of u's text, each with u's parameters. A text
    /// of one statement is prepared once and kept.
    void run(const sql& u) {
        if (const auto it = statements_.find(u.text); it != statements_.end()) {
            step(it->second.get(), u);
            return;
        }
        std::string_view rest = u.text;
        bool first = true;
        while (!rest.empty()) {
            sqlite3_stmt* raw = nullptr;
            const char* tail = nullptr;
            const int rc = sqlite3_prepare_v2(db(), rest.data(), static_cast<int>(rest.size()), &raw, &tail);
            if (rc != SQLITE_OK) fail(rc, "run '" + u.text + "'");
            rest.remove_prefix(static_cast<std::size_t>(tail - rest.data()));
            if (raw == nullptr) continue;  // whitespace or a comment
            detail::sql::statement s(raw);
            const bool only = first && rest.find_first_not_of(" \t\r\n;") == std::string_view::npos;
            first = false;
            if (only) {
                step(statements_.emplace(u.text, std::move(s)).first->second.get(), u);
                return;
            }
            step(raw, u);
        }
    }

    void step(sqlite3_stmt* s, const sql& u) {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        bind(s, u.params);
        int rc = SQLITE_OK;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        }
        if (rc != SQLITE_DONE) fail(rc, "run '" + u.text + "'", s);
        sqlite3_reset(s);
    }

    /// Records the primary key of each row an update changes (old and new
    /// when an UPDATE changes the key). Runs inside SQLite: no SQL here, and
    /// no exception may leave it; a table the store does not know (created
    /// outside schema()) is an error reported after the statement.
    static void on_preupdate(void* self, sqlite3* db, int op, const char* database, const char* table_name,
                             sqlite3_int64, sqlite3_int64) {
        auto& s = *static_cast<sqlite_store*>(self);
        if (std::strcmp(database, "main") != 0 || std::strcmp(table_name, detail::sql::meta_table) == 0) return;
        try {
            const auto it = s.tables_.find(std::string_view(table_name));
            if (it == s.tables_.end() || it->second.key_columns.empty()) {
                s.observe_error_ = "strata::sqlite_store '" + s.name_ + "': the update changed table " +
                                   table_name +
                                   (it == s.tables_.end() ? ", which schema() did not create"
                                                          : ", which has no PRIMARY KEY") +
                                   "; nothing was applied";
                return;
            }
            std::vector<sql_value> before, after;
            for (const int c : it->second.key_columns) {
                sqlite3_value* v = nullptr;
                if (op != SQLITE_INSERT && sqlite3_preupdate_old(db, c, &v) == SQLITE_OK)
                    before.push_back(detail::sql::from_sqlite(v));
                if (op != SQLITE_DELETE && sqlite3_preupdate_new(db, c, &v) == SQLITE_OK)
                    after.push_back(detail::sql::from_sqlite(v));
            }
            if (op != SQLITE_INSERT) s.observed_.push_back({table_name, encode(before)});
            if (op == SQLITE_INSERT || (op == SQLITE_UPDATE && after != before))
                s.observed_.push_back({table_name, encode(after)});
        } catch (const std::exception& e) {
            s.observe_error_ = std::string("strata::sqlite_store '") + s.name_ + "': " + e.what();
        }
    }

    /// Reads what the changelog needs of every table (the preupdate hook
    /// may not run SQL); returns the tables' names.
    std::vector<std::string> load_tables() {
        tables_.clear();
        std::vector<std::string> names;
        for (const auto& row : query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE "
                                     "'sqlite_%' AND name <> ?1",
                                     {detail::sql::meta_table})) {
            names.push_back(std::get<std::string>(row.at(0).v));
            (void)table(names.back());
        }
        return names;
    }

    static std::string upsert_text(const std::string& name, const table_info& t) {
        std::string text = "INSERT INTO " + detail::sql::quoted(name) + " VALUES (";
        for (std::size_t i = 0; i < t.columns.size(); ++i) text += i == 0 ? "?" : ", ?";
        text += ") ON CONFLICT (";
        for (std::size_t i = 0; i < t.key_columns.size(); ++i)
            text += (i == 0 ? "" : ", ") + detail::sql::quoted(t.columns[static_cast<std::size_t>(t.key_columns[i])]);
        std::string set;
        for (std::size_t c = 0; c < t.columns.size(); ++c) {
            if (std::find(t.key_columns.begin(), t.key_columns.end(), static_cast<int>(c)) != t.key_columns.end())
                continue;
            const std::string col = detail::sql::quoted(t.columns[c]);
            set += (set.empty() ? "" : ", ") + col + " = excluded." + col;
        }
        return text + (set.empty() ? ") DO NOTHING" : ") DO UPDATE SET " + set);
    }

    static std::string where_key(const table_info& t) {
        std::string w = " WHERE ";
        for (std::size_t i = 0; i < t.key_columns.size(); ++i) {
            if (i > 0) w += " AND ";
            w += detail::sql::quoted(t.columns[static_cast<std::size_t>(t.key_columns[i])]) + " IS ?" +
                 std::to_string(i + 1);
        }
        return w;
    }

    std::string name_;
    std::string path_;
    std::unique_ptr<sqlite3, detail::sql::close_db> db_;
    mutable std::unordered_map<std::string, detail::sql::statement> statements_;
    mutable std::map<std::string, table_info, std::less<>> tables_;
    std::vector<row_key> observed_;  ///< rows changed by the update running under apply_observed
    std::string observe_error_;      ///< why a changed row could not be named, if so
    const sql savepoint_{"SAVEPOINT strata_update"};
    const sql release_{"RELEASE strata_update"};
};

/// @brief The codec of sqlite_store: one record per changed row, for any
/// schema. Record key: the table's name (u32 length, bytes) followed by the
/// primary key's values; value: every column's value, in column order (each
/// an `sql_value`); a deleted row is a tombstone.
class sqlite_codec {
public:
    using key_type = row_key;

    void write_key(const row_key& k, byte_buffer& out) const {
        serde<std::string>::write(k.table, out);
        append_bytes(out, k.primary_key);
    }
    bool write_value(const sqlite_store& s, const row_key& k, byte_buffer& out) const {
        const auto values = s.row(k);
        if (!values) return false;
        encode(*values, out);
        return true;
    }
    void restore(sqlite_store& s, const record_view& r) const {
        byte_reader in(r.key, "sqlite row key");
        row_key k;
        k.table = serde<std::string>::read(in);
        const auto key_values = serde<std::vector<sql_value>>::read(in);
        in.expect_end();
        k.primary_key = encode(key_values);
        // Rows come back in changelog order, or in a compacted log's order:
        // a child may arrive before its parent. Foreign keys are checked at
        // the next commit, when the restore is whole.
        s.defer_foreign_keys();
        if (r.value) s.put_row(k.table, decode<std::vector<sql_value>>(*r.value));
        else s.delete_row(k);
    }
    /// @brief The observing form: SQLite reports the rows the update changed.
    observed_update<std::vector<row_key>, std::int64_t> apply_observed(sqlite_store& s, const sql& u) const {
        return s.apply_observed(u);
    }
};

static_assert(observing_codec_for<sqlite_codec, sqlite_store, sql>);
static_assert(self_checkpointing_store<sqlite_store>);

}  // namespace strata
