// The SQLite store: SQL updates logged one record per changed row through
// SQLite's session extension, restore, the committed offset kept in the
// database, and the errors of bad SQL, violated constraints, tables
// without a primary key and records that do not decode.

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/sqlite_store.hpp>

#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using strata::sql;
using strata::sql_value;
using rows = std::vector<std::vector<sql_value>>;

namespace {

constexpr const char* hr_schema = R"(
    CREATE TABLE IF NOT EXISTS department(name TEXT PRIMARY KEY, budget INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS employee(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                          department TEXT NOT NULL REFERENCES department(name) ON DELETE CASCADE,
                          salary INTEGER NOT NULL CHECK (salary > 0));
    CREATE INDEX IF NOT EXISTS employee_by_department ON employee(department);
)";

strata::sqlite_store hr(const std::string& path = ":memory:") {
    strata::sqlite_store db("hr", path);
    db.schema(hr_schema);
    return db;
}

rows everything(const strata::sqlite_store& db) {
    rows all = db.query("SELECT 'd', name, budget, NULL FROM department ORDER BY name");
    for (auto& r : db.query("SELECT 'e', id, name, department, salary FROM employee ORDER BY id")) all.push_back(r);
    return all;
}

/// The record keys of a changelog's records, decoded to (table, first key value) for reading.
std::vector<std::string> tables_of(const strata::memory_log& log) {
    std::vector<std::string> out;
    for (const strata::record_view r : log.replay(0)) {
        strata::byte_reader in(r.key);
        out.push_back(strata::serde<std::string>::read(in) + (r.value ? "" : " (deleted)"));
    }
    return out;
}

}  // namespace

static_assert(strata::self_checkpointing_store<strata::sqlite_store>);
static_assert(strata::observing_codec_for<strata::sqlite_codec, strata::sqlite_store, sql>);
static_assert(!strata::changelog_codec_for<strata::sqlite_codec, strata::sqlite_store, sql>);

TEST_CASE("sqlite store: one record per changed row, cascades included", "[sqlite]") {
    strata::memory_log log;
    auto s = hr() | strata::logged(log);
    s.apply(sql{"INSERT INTO department VALUES ('eng', 100), ('ops', 50)"});
    s.apply(sql{"INSERT INTO employee VALUES (1, 'ada', 'eng', 10), (2, 'bob', 'ops', 20), (3, 'cy', 'eng', 30)"});
    CHECK(log.end_offset() == 5);
    // One UPDATE, two rows.
    s.apply(sql{"UPDATE employee SET salary = salary + ?1 WHERE department = ?2", {5, "eng"}});
    CHECK(log.end_offset() == 7);
    // Deleting a department deletes its employees (ON DELETE CASCADE): three tombstones.
    s.apply(sql{"DELETE FROM department WHERE name = 'eng'"});
    CHECK(log.end_offset() == 10);
    const auto t = tables_of(log);
    CHECK(std::count(t.begin(), t.end(), "employee (deleted)") == 2);
    CHECK(std::count(t.begin(), t.end(), "department (deleted)") == 1);
    CHECK(strata::innermost(s).query("SELECT name FROM employee") == rows{{"bob"}});
}

TEST_CASE("sqlite store: a primary key that changes logs the old row's tombstone and the new row", "[sqlite]") {
    strata::memory_log log;
    auto s = hr() | strata::logged(log);
    s.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
    s.apply(sql{"INSERT INTO employee VALUES (1, 'ada', 'eng', 10)"});
    s.apply(sql{"UPDATE employee SET id = 7 WHERE id = 1"});
    auto fresh = hr() | strata::logged(log);
    fresh.restore();
    CHECK(strata::innermost(fresh).query("SELECT id, name FROM employee") == rows{{7, "ada"}});
}

TEST_CASE("sqlite store: restore rebuilds every table from the changelog, also compacted", "[sqlite][restore]") {
    strata::memory_log log;
    rows want;
    {
        auto s = hr() | strata::logged(log) | strata::cached();
        s.apply(sql{"INSERT INTO department VALUES ('eng', 100), ('ops', 50), ('hr', 10)"});
        for (int i = 0; i < 200; ++i)
            s.apply(sql{"INSERT INTO employee VALUES (?1, ?2, ?3, ?4)",
                        {i, "e" + std::to_string(i), i % 3 == 0 ? "eng" : i % 3 == 1 ? "ops" : "hr", 100 + i}});
        s.apply(sql{"UPDATE employee SET salary = salary * 2 WHERE id % 7 = 0"});
        s.apply(sql{"DELETE FROM employee WHERE salary > 250 AND department = 'ops'"});
        s.apply(sql{"DELETE FROM department WHERE name = 'hr'"});
        s.apply(sql{"UPDATE department SET budget = budget + 1"});
        s.flush();
        want = everything(strata::innermost(s));
    }
    REQUIRE(want.size() > 100);
    auto fresh = hr() | strata::logged(log);
    CHECK(fresh.restore().records_done == log.end_offset());
    CHECK(everything(strata::innermost(fresh)) == want);

    log.compact();  // latest record per row: children may now come before their parents
    auto from_compacted = hr() | strata::logged(log);
    from_compacted.restore();
    from_compacted.flush();  // the deferred foreign key checks pass at the commit
    CHECK(everything(strata::innermost(from_compacted)) == want);
}

TEST_CASE("sqlite store: a statement that fails changes neither the store nor the changelog", "[sqlite][errors]") {
    strata::memory_log log;
    auto s = hr() | strata::logged(log);
    s.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
    s.apply(sql{"INSERT INTO employee VALUES (1, 'ada', 'eng', 10)"});
    const rows before = everything(strata::innermost(s));
    const auto records = log.end_offset();

    auto fails_with = [&](const sql& u, const std::string& message) {
        try {
            s.apply(u);
            FAIL("the update did not fail: " << u.text);
        } catch (const strata::store_error& e) {
            const std::string what = e.what();
            CHECK(what.find("'hr'") != std::string::npos);
            CHECK(what.find(message) != std::string::npos);
        }
        CHECK(everything(strata::innermost(s)) == before);
        CHECK(log.end_offset() == records);
        CHECK_FALSE(s.failed());
    };
    fails_with(sql{"UPDATE employe SET salary = 1"}, "no such table: employe");
    fails_with(sql{"INSERT INTO employee VALUES (2, 'bob', 'eng', -5)"}, "CHECK constraint failed");
    fails_with(sql{"INSERT INTO employee VALUES (1, 'dup', 'eng', 5)"}, "UNIQUE constraint failed");
    fails_with(sql{"INSERT INTO employee VALUES (3, 'cy', 'nowhere', 5)"}, "FOREIGN KEY constraint failed");
    // Several statements: the second fails, the first is undone too.
    fails_with(sql{"UPDATE employee SET salary = 99; INSERT INTO employee VALUES (1, 'x', 'eng', 1)"},
               "UNIQUE constraint failed");
    fails_with(sql{"SELEC 1"}, "syntax error");

    s.apply(sql{"UPDATE employee SET salary = 11 WHERE id = 1"});  // and it goes on
    CHECK(log.end_offset() == records + 1);
}

TEST_CASE("sqlite store: a table without a primary key is refused", "[sqlite][errors]") {
    strata::sqlite_store db("s");
    CHECK_THROWS_WITH(db.schema("CREATE TABLE notes(text TEXT)"),
                      Catch::Contains("table notes has no PRIMARY KEY"));
}

TEST_CASE("sqlite store: on disk, a crash keeps the last commit and restore reads only the tail",
          "[sqlite][restore]") {
    test_support::temp_dir dir;
    const auto path = (dir.path() / "hr.db").string();
    strata::memory_log log;
    rows committed;
    {
        auto s = hr(path) | strata::logged(log);
        s.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
        s.apply(sql{"INSERT INTO employee VALUES (1, 'ada', 'eng', 10)"});
        CHECK(s.flush() == 2);
        committed = everything(strata::innermost(s));
        s.apply(sql{"INSERT INTO employee VALUES (2, 'bob', 'eng', 20)"});
        (void)s.changelog().flush();  // in the changelog, not committed to the database: then a crash
    }
    {
        strata::sqlite_store reopened("hr", path);
        CHECK(reopened.committed_offset() == std::optional<strata::offset_t>(2));
        CHECK(everything(reopened) == committed);
    }
    auto s = hr(path) | strata::logged(log);
    const auto p = s.restore();
    CHECK(p.from == 2);
    CHECK(p.records_done == 1);
    CHECK(strata::innermost(s).query("SELECT name FROM employee ORDER BY id") == rows{{"ada"}, {"bob"}});
}

TEST_CASE("sqlite store: a record that does not decode fails restore and names its offset", "[sqlite][errors]") {
    strata::memory_log log;
    {
        auto s = hr() | strata::logged(log);
        s.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
        s.flush();
    }
    const std::string key = "bad", value = "\x09";
    log.append(strata::record_view{strata::as_bytes(key), strata::as_bytes(value)});
    log.flush();
    auto fresh = hr() | strata::logged(log);
    try {
        fresh.restore();
        FAIL("a bad record was restored");
    } catch (const strata::restore_error& e) {
        CHECK(e.offset() == 1);
    }
    CHECK(strata::innermost(fresh).query("SELECT name FROM department") == rows{{"eng"}});
}

TEST_CASE("sqlite store: an update that changes a table schema() did not create is undone and refused",
          "[sqlite][errors]") {
    strata::memory_log log;
    auto s = hr() | strata::logged(log);
    s.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
    const auto records = log.end_offset();
    // DDL through apply: the new table is unknown to the changelog's codec.
    try {
        s.apply(sql{"CREATE TABLE audit(id INTEGER PRIMARY KEY, what TEXT); INSERT INTO audit VALUES (1, 'x')"});
        FAIL("an update of an unknown table was logged");
    } catch (const strata::usage_error& e) {
        CHECK(std::string(e.what()).find("table audit, which schema() did not create") != std::string::npos);
    }
    CHECK(log.end_offset() == records);
    CHECK(strata::innermost(s).query("SELECT count(*) FROM sqlite_schema WHERE name = 'audit'") == rows{{0}});
}

TEST_CASE("sqlite store: close() rolls back what was not committed and refuses later use", "[sqlite]") {
    test_support::temp_dir dir;
    const auto path = (dir.path() / "hr.db").string();
    auto first = hr(path);
    first.apply(sql{"INSERT INTO department VALUES ('eng', 100)"});
    first.commit(1);
    first.apply(sql{"INSERT INTO department VALUES ('ops', 50)"});  // not committed
    first.close();
    CHECK_THROWS_AS(first.apply(sql{"DELETE FROM department"}), strata::usage_error);
    auto second = hr(path);
    second.apply(sql{"INSERT INTO department VALUES ('hr', 10)"});  // no lock left behind
    CHECK(second.query("SELECT name FROM department ORDER BY name") == rows{{"eng"}, {"hr"}});
}
