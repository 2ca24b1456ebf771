// The laws, for a store that is not key-value: the relational table of
// docs/examples, whose updates (INSERT, UPDATE ... WHERE, DELETE ... WHERE)
// touch many rows at once.

#include <catch2/catch.hpp>

#include "kv_history.hpp"
#include "stacks.hpp"

#include <map>
#include <random>

using namespace laws;
using example::delete_where;
using example::employee;
using example::insert_row;
using example::update_where;
using example::where;

namespace {

using model = std::map<std::int64_t, employee>;
const char* const departments[] = {"eng", "ops", "sales", "legal"};

template <class S>
const model& contents(const S& s) {
    return strata::innermost(s).rows();
}

/// A random history of multi-row updates, mirrored on a plain map by loops
/// that share no code with the table or its index. Calls `flushed()` right
/// after each flush of s.
template <class S, class Flushed = laws::no_flush_hook>
void run_history(S& s, model& m, std::uint64_t seed, int steps, Flushed flushed = {}) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> id(1, 30), amount(-50, 500);
    std::uniform_int_distribution<int> op(0, 9), dept(0, 3);
    for (int i = 0; i < steps; ++i) {
        const std::string d = departments[dept(rng)];
        switch (op(rng)) {
            case 0:
            case 1:
            case 2:
            case 3: {
                employee e{id(rng), "emp" + std::to_string(i), d, 1000 + amount(rng)};
                m[e.id] = e;
                s.apply(insert_row{e});
                break;
            }
            case 4:
            case 5: {  // UPDATE employees SET salary = salary + r WHERE department = d
                const std::int64_t raise = amount(rng);
                for (auto& [k, e] : m)
                    if (e.department == d) e.salary += raise;
                s.apply(update_where{where{.department = d}, [raise](employee& e) { e.salary += raise; }});
                break;
            }
            case 6: {  // UPDATE ... SET department = d WHERE salary > limit (moves rows between index keys)
                const std::int64_t limit = 1000 + amount(rng);
                for (auto& [k, e] : m)
                    if (e.salary > limit) e.department = d;
                s.apply(update_where{where{.predicate = [limit](const employee& e) { return e.salary > limit; }},
                                     [d](employee& e) { e.department = d; }});
                break;
            }
            case 7: {  // DELETE FROM employees WHERE department = d AND salary < limit
                const std::int64_t limit = 1000 + amount(rng);
                std::erase_if(m, [&](const auto& kv) { return kv.second.department == d && kv.second.salary < limit; });
                s.apply(delete_where{where{.department = d, .predicate = [limit](const employee& e) { return e.salary < limit; }}});
                break;
            }
            case 8:
                if constexpr (requires { s.flush(); }) {
                    s.flush();
                    flushed();
                }
                break;
            default: {  // DELETE one row by key
                const std::int64_t k = id(rng);
                m.erase(k);
                s.apply(delete_where{where{.id = k}});
            }
        }
    }
}

/// A restored table equals the model, and its secondary index is rebuilt too.
template <class S>
void check_restored(const S& s, const model& m) {
    REQUIRE(contents(s) == m);
    for (const char* d : departments) {
        std::int64_t payroll = 0;
        for (const auto& [k, row] : m)
            if (row.department == d) payroll += row.salary;
        REQUIRE(strata::innermost(s).payroll(d) == payroll);
    }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("table law: a decorated table behaves as the bare one", "[laws][table]", table_stacks) {
    check_model_law<TestType, model>(
        1, 10, [](auto& s, model& m, std::uint64_t seed) { run_history(s, m, seed, 300); },
        [](const auto& s, const model& m) { REQUIRE(contents(s) == m); });
}

TEMPLATE_LIST_TEST_CASE("table law: restore of the changelog of a history gives its state", "[laws][table][restore]",
                        with_changelog_t<table_stacks>) {
    for (std::uint64_t seed = 50; seed <= 60; ++seed)
        check_restore_law<TestType, model>([&](auto& s, model& m) { run_history(s, m, seed, 400); },
                                           [](const auto& s, const model& m) { check_restored(s, m); });
}

TEMPLATE_LIST_TEST_CASE("table law: after a crash between two flushes, restore gives the state of the last flush",
                        "[laws][table][restore][crash]", with_changelog_t<table_stacks>) {
    int lost = 0;
    for (std::uint64_t seed = 70; seed <= 75; ++seed) {
        INFO("seed " << seed);
        lost += check_crash_law<TestType, model>(
            [&](auto& s, model& m, auto flushed) { run_history(s, m, seed, 300, flushed); },
            [](const auto& s, const model& m) { check_restored(s, m); });
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
