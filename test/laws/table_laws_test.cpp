// The laws, for a store that is not key-value: the relational table of
// docs/examples, whose updates (INSERT, UPDATE ... WHERE, DELETE ... WHERE)
// touch many rows at once.

#include <catch2/catch.hpp>

#include "stacks.hpp"
#include "table_history.hpp"

using namespace laws;

TEMPLATE_LIST_TEST_CASE("table law: a decorated table behaves as the bare one", "[laws][table]", table_stacks) {
    table_model_law<TestType>(1, 10, 300);
}

TEMPLATE_LIST_TEST_CASE("table law: restore of the changelog of a history gives its state", "[laws][table][restore]",
                        with_changelog_t<table_stacks>) {
    table_restore_law<TestType>(50, 60, 400);
}

TEMPLATE_LIST_TEST_CASE("table law: after a crash between two flushes, restore gives the state of the last flush",
                        "[laws][table][restore][crash]", with_changelog_t<table_stacks>) {
    int lost = 0;
    for (std::uint64_t seed = 70; seed <= 75; ++seed) {
        INFO("seed " << seed);
        lost += check_crash_law<TestType, table_model>(
            [&](auto& s, table_model& m, auto flushed) { run_table_history(s, m, seed, 300, flushed); },
            [](const auto& s, const table_model& m) { check_table_restored(s, m); });
    }
    REQUIRE(lost > 0);  // the crashes did lose updates: this is not a clean stop
}

TEST_CASE("a multi-row update writes one record per touched row, with that row's current state", "[table]") {
    env e;
    auto s = employee_table("employees") | strata::logged(e.log, table_codec{});
    for (std::int64_t i = 1; i <= 6; ++i)
        s.apply(insert_row{employee{i, "e" + std::to_string(i), i % 2 ? "eng" : "ops", 100 * i}});
    REQUIRE(e.log.records().size() == 6);

    s.apply(update_where{where{.department = "eng"}, [](employee& x) { x.salary += 1; }});
    const auto& recs = e.log.records();
    REQUIRE(recs.size() == 9);  // rows 1, 3, 5
    for (std::size_t i = 6; i < 9; ++i) {
        const auto row = strata::decode<employee>(*recs[i].value);
        REQUIRE(row.department == "eng");
        REQUIRE(row.salary == 100 * row.id + 1);
        REQUIRE(strata::decode<std::int64_t>(recs[i].key) == row.id);
    }

    s.apply(delete_where{where{.department = "ops"}});
    REQUIRE(e.log.records().size() == 12);  // rows 2, 4, 6
    for (std::size_t i = 9; i < 12; ++i) REQUIRE(e.log.records()[i].is_tombstone());
    REQUIRE(strata::innermost(s).size() == 3);
}

TEST_CASE("the cache writes one record per touched row per flush", "[table][cached]") {
    env e;
    auto s = employee_table("employees") | strata::logged(e.log, table_codec{}) | strata::cached();
    for (std::int64_t i = 1; i <= 4; ++i) s.apply(insert_row{employee{i, "e", "eng", 100}});
    for (int round = 0; round < 50; ++round)
        s.apply(update_where{where{.department = "eng"}, [](employee& x) { x.salary += 10; }});
    REQUIRE(e.log.records().empty());
    s.flush();
    REQUIRE(e.log.records().size() == 4);
    for (const auto& r : e.log.records()) REQUIRE(strata::decode<employee>(*r.value).salary == 600);
}
