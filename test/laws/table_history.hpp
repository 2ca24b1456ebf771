#pragma once
// Random histories of multi-row updates on the relational table of
// docs/examples (INSERT, UPDATE ... WHERE, DELETE ... WHERE), mirrored on a
// plain map: the workload of the table laws, shared by every suite that runs
// them (in memory, on the file log, on Kafka).

#include "kv_history.hpp"
#include "stacks.hpp"

#include <relational_table.hpp>

#include <catch2/catch.hpp>

#include <strata/decorators/all.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace laws {

using example::delete_where;
using example::employee;
using example::insert_row;
using example::update_where;
using example::where;

using table_model = std::map<std::int64_t, employee>;
inline const char* const departments[] = {"eng", "ops", "sales", "legal"};

template <class S>
const table_model& table_contents(const S& s) {
    return strata::innermost(s).rows();
}

/// A random history of multi-row updates, mirrored on a plain map by loops
/// that share no code with the table or its index. Calls `flushed()` right
/// after each flush of s.
template <class S, class Flushed = no_flush_hook>
void run_table_history(S& s, table_model& m, std::uint64_t seed, int steps, Flushed flushed = {}) {
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
                REQUIRE(s.apply(insert_row{e}) == 1);
                break;
            }
            case 4:
            case 5: {  // UPDATE employees SET salary = salary + r WHERE department = d
                const std::int64_t raise = amount(rng);
                std::size_t rows = 0;
                for (auto& [k, e] : m)
                    if (e.department == d) e.salary += raise, ++rows;
                // The store's result comes back through every layer.
                REQUIRE(s.apply(update_where{where{.department = d}, [raise](employee& e) { e.salary += raise; }}) ==
                        rows);
                break;
            }
            case 6: {  // UPDATE ... SET department = d WHERE salary > limit (moves rows between index keys)
                const std::int64_t limit = 1000 + amount(rng);
                std::size_t rows = 0;
                for (auto& [k, e] : m)
                    if (e.salary > limit) e.department = d, ++rows;
                REQUIRE(s.apply(update_where{where{.predicate = [limit](const employee& e) { return e.salary > limit; }},
                                             [d](employee& e) { e.department = d; }}) == rows);
                break;
            }
            case 7: {  // DELETE FROM employees WHERE department = d AND salary < limit
                const std::int64_t limit = 1000 + amount(rng);
                const std::size_t rows = std::erase_if(
                    m, [&](const auto& kv) { return kv.second.department == d && kv.second.salary < limit; });
                REQUIRE(s.apply(delete_where{where{.department = d,
                                                   .predicate = [limit](const employee& e) { return e.salary < limit; }}}) ==
                        rows);
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
                REQUIRE(s.apply(delete_where{where{.id = k}}) == m.erase(k));
            }
        }
    }
}

/// A restored table equals the model, and its secondary index is rebuilt too.
template <class S>
void check_table_restored(const S& s, const table_model& m) {
    REQUIRE(table_contents(s) == m);
    for (const char* d : departments) {
        std::int64_t payroll = 0;
        for (const auto& [k, row] : m)
            if (row.department == d) payroll += row.salary;
        REQUIRE(strata::innermost(s).payroll(d) == payroll);
    }
}

/// The decoration law over a table stack fixture (stacks.hpp), seeds first..last.
template <class Fixture>
void table_model_law(std::uint64_t first, std::uint64_t last, int steps) {
    check_model_law<Fixture, table_model>(
        first, last, [steps](auto& s, table_model& m, std::uint64_t seed) { run_table_history(s, m, seed, steps); },
        [](const auto& s, const table_model& m) { REQUIRE(table_contents(s) == m); });
}

/// The restore law over a table stack fixture with a changelog, seeds first..last.
template <class Fixture>
void table_restore_law(std::uint64_t first, std::uint64_t last, int steps) {
    for (std::uint64_t seed = first; seed <= last; ++seed)
        check_restore_law<Fixture, table_model>(
            [&](auto& s, table_model& m) { run_table_history(s, m, seed, steps); },
            [](const auto& s, const table_model& m) { check_table_restored(s, m); });
}

}  // namespace laws
