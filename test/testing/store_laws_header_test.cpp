// The public law checkers for any store (strata/testing/store_laws.hpp):
// they pass over the relational table of docs/examples under strata's
// decorators, and catch a codec or a changelog that breaks a law.

#include <strata/testing/store_laws.hpp>

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>

#include <relational_table.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <variant>

using namespace example;

namespace {

using update = std::variant<insert_row, update_where, delete_where>;
const char* const departments[] = {"eng", "ops", "sales"};

/// INSERTs, UPDATE ... WHERE department, DELETE ... WHERE salary: the
/// multi-row updates of the table, over few ids so that rows are hit often.
update random_update(std::mt19937_64& r) {
    const std::string d = departments[r() % 3];
    const auto id = static_cast<std::int64_t>(r() % 25);
    const auto amount = static_cast<std::int64_t>(r() % 400);
    switch (r() % 6) {
        case 0:
        case 1:
        case 2: return insert_row{employee{id, "e" + std::to_string(id), d, 1000 + amount}};
        case 3: return update_where{where{.department = d}, [amount](employee& e) { e.salary += amount; }};
        case 4:
            return delete_where{
                where{.department = d, .predicate = [amount](const employee& e) { return e.salary < 1000 + amount; }}};
        default: return delete_where{where{.id = id}};
    }
}

/// The table's rows: what the laws compare.
auto rows = [](const auto& s) { return strata::innermost(s).rows(); };

/// A codec that forgets DELETEs: they write no record, so restore brings the
/// deleted rows back.
struct delete_forgetting_codec : table_codec {
    using table_codec::touched;
    std::vector<std::int64_t> touched(const employee_table&, const delete_where&) const { return {}; }
};

/// A table whose UPDATEs add one to every salary they touch.
class off_by_one_table : public employee_table {
public:
    using employee_table::apply;
    using employee_table::employee_table;
    std::size_t apply(const update_where& u) {
        const std::vector<std::int64_t> ids = select_ids(u.filter);
        for (std::int64_t id : ids) {
            employee changed = *find(id);
            u.set(changed);
            changed.salary += 1;  // an off-by-one in the update path
            upsert(std::move(changed));
        }
        return ids.size();
    }
};

}  // namespace

TEST_CASE("the public store laws hold over the relational table under strata's decorators", "[testing][laws]") {
    strata::metrics::registry registry;
    const strata::testing::store_law_options o{.first_seed = 1, .last_seed = 5, .steps = 300};

    strata::memory_log log;
    auto make = [&] {
        return employee_table("employees") | strata::logged(log, table_codec{}) | strata::cached() |
               strata::metered(registry);
    };
    REQUIRE_NOTHROW(strata::testing::check_store_decoration_law(
        make, [] { return employee_table("employees"); }, random_update, rows, o));

    strata::memory_log restore_log;  // the restore law wants a changelog that starts empty
    auto make_restoring = [&] {
        return employee_table("employees") | strata::logged(restore_log, table_codec{}) | strata::cached();
    };
    REQUIRE_NOTHROW(strata::testing::check_store_restore_law(make_restoring, random_update, rows, o));

    // The crash law on the file log: a crash closes it without a flush and
    // reopens it from its directory.
    test_support::temp_dir dir;
    std::optional<strata::file_log> file;
    auto file_log = [&]() -> strata::file_log& {
        if (!file) file.emplace(dir.path() / "log");
        return *file;
    };
    auto make_on_file = [&] {
        return employee_table("employees") | strata::logged(file_log(), table_codec{}) | strata::cached();
    };
    REQUIRE_NOTHROW(
        strata::testing::check_store_crash_law(make_on_file, [&] { file.reset(); }, random_update, rows, o));
}

TEST_CASE("the public store laws catch a store that differs from the bare one", "[testing][laws]") {
    strata::memory_log log;
    auto make = [&] { return off_by_one_table("employees") | strata::logged(log, table_codec{}); };
    REQUIRE_THROWS_WITH(strata::testing::check_store_decoration_law(
                            make, [] { return employee_table("employees"); }, random_update, rows),
                        Catch::Contains("a decorated store behaves as the bare one") &&
                            Catch::Contains("state differs"));
}

TEST_CASE("the public store laws catch a codec that forgets an update", "[testing][laws]") {
    strata::memory_log log;
    auto make = [&] { return employee_table("employees") | strata::logged(log, delete_forgetting_codec{}); };
    REQUIRE_THROWS_WITH(strata::testing::check_store_restore_law(make, random_update, rows),
                        Catch::Contains("restore of the changelog of a history gives its state"));
}

TEST_CASE("the public store laws catch a changelog whose flush makes nothing durable", "[testing][laws]") {
    strata::memory_log log;
    auto make = [&] { return employee_table("employees") | strata::logged(log, table_codec{}); };
    REQUIRE_THROWS_WITH(
        strata::testing::check_store_crash_law(make, [&] { log = strata::memory_log{}; }, random_update, rows),
        Catch::Contains("state of the last flush"));
}
