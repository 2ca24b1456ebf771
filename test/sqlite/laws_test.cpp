// The store laws (strata/testing/store_laws.hpp) over the SQLite store and
// its observing codec: random SQL over two tables with a foreign key and a
// cascade. A stack behaves as the bare database, restore gives the state a
// history left, and after a crash restore gives the state of the last
// flush: in memory over the memory log, and on disk over the file log,
// where the reopened database keeps its last commit and restores the tail.

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/sqlite_store.hpp>
#include <strata/testing/store_laws.hpp>

#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

using strata::sql;
using strata::sql_value;

namespace {

constexpr const char* schema = R"(
    CREATE TABLE IF NOT EXISTS department(name TEXT PRIMARY KEY, budget INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS employee(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                                        department TEXT NOT NULL REFERENCES department(name) ON DELETE CASCADE,
                                        salary INTEGER NOT NULL);
)";
const char* const departments[] = {"eng", "ops", "sales", "hr"};

strata::sqlite_store database(const std::string& path = ":memory:") {
    strata::sqlite_store db("hr", path);
    db.schema(schema);
    return db;
}

/// Updates that cannot fail: new departments, employees of departments that
/// exist, raises by department, deletes by salary, whole departments
/// deleted (with their employees, by cascade), a few rows per update or many.
sql random_update(std::mt19937_64& r) {
    const std::string d = departments[r() % 4];
    const auto id = static_cast<std::int64_t>(r() % 40);
    const auto amount = static_cast<std::int64_t>(r() % 300);
    switch (r() % 8) {
        case 0: return sql{"INSERT OR REPLACE INTO department VALUES (?1, ?2)", {d, amount}};
        case 1:
        case 2:
        case 3:
            return sql{"INSERT OR REPLACE INTO employee SELECT ?1, ?2, ?3, ?4 "
                       "WHERE EXISTS (SELECT 1 FROM department WHERE name = ?3)",
                       {id, "e" + std::to_string(id), d, 1000 + amount}};
        case 4: return sql{"UPDATE employee SET salary = salary + ?1 WHERE department = ?2", {amount, d}};
        case 5: return sql{"DELETE FROM employee WHERE salary < ?1", {1000 + amount}};
        case 6: return sql{"DELETE FROM department WHERE name = ?1", {d}};
        default: return sql{"UPDATE department SET budget = budget + 1; UPDATE employee SET name = name || '+' WHERE id = ?1", {id}};
    }
}

/// Both tables, every row, in key order.
auto contents = [](const auto& s) {
    const strata::sqlite_store& db = strata::innermost(s);
    auto all = db.query("SELECT 'd', name, budget, NULL FROM department ORDER BY name");
    for (auto& row : db.query("SELECT 'e', id, name, department, salary FROM employee ORDER BY id"))
        all.push_back(std::move(row));
    return all;
};

}  // namespace

TEST_CASE("sqlite law: a logged, cached, metered database behaves as the bare one", "[sqlite][laws]") {
    strata::memory_log log;
    strata::metrics::registry registry;
    auto make = [&] { return database() | strata::logged(log) | strata::cached() | strata::metered(registry); };
    REQUIRE_NOTHROW(strata::testing::check_store_decoration_law(make, [] { return database(); }, random_update,
                                                                contents, {.first_seed = 1, .last_seed = 4}));
}

TEST_CASE("sqlite law: restore of the changelog of a history gives its state", "[sqlite][laws][restore]") {
    strata::memory_log log;
    auto make = [&] { return database() | strata::logged(log) | strata::cached(); };
    REQUIRE_NOTHROW(
        strata::testing::check_store_restore_law(make, random_update, contents, {.first_seed = 1, .last_seed = 4}));
}

TEST_CASE("sqlite law: after a crash, restore gives the state of the last flush", "[sqlite][laws][crash]") {
    SECTION("in memory, over the memory log") {
        strata::memory_log log;
        auto make = [&] { return database() | strata::logged(log) | strata::cached(); };
        REQUIRE_NOTHROW(strata::testing::check_store_crash_law(make, [&] { log.drop_unflushed(); }, random_update,
                                                               contents, {.first_seed = 1, .last_seed = 4}));
    }
    SECTION("on disk, over the file log: the database reopens at its last commit") {
        test_support::temp_dir dir;
        std::optional<strata::file_log> file;
        auto file_log = [&]() -> strata::file_log& {
            if (!file) file.emplace(dir.path() / "log");
            return *file;
        };
        auto make = [&] { return database((dir.path() / "hr.db").string()) | strata::logged(file_log()); };
        REQUIRE_NOTHROW(strata::testing::check_store_crash_law(make, [&] { file.reset(); }, random_update, contents,
                                                               {.first_seed = 1, .last_seed = 4}));
    }
}
