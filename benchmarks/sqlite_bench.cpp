// The SQLite store's update rate, with and without logging, against SQLite
// used directly.
//
//   build-bench/benchmarks/sqlite_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Workload: an in-memory database with one table
// item(id INTEGER PRIMARY KEY, value TEXT), filled with 100,000 rows of
// 100-byte values, then single-row updates `UPDATE item SET value = ?1
// WHERE id = ?2` on ids uniform over the rows, a commit every 10,000
// updates. Timing per iteration of 100 updates; counters ns_per_op, p50_ns,
// p99_ns. Variants:
//
//   raw            one prepared statement, sqlite3_bind/step/reset, COMMIT + BEGIN at the commit
//   strata_bare    sqlite_store::apply(sql{...}) (a savepoint per update), flush at the commit
//   strata_logged  sqlite_store | logged(log): also an SQLite session per update and the changed
//                  row read back for its record; log = a changelog that only copies bytes
//   strata_full    sqlite_store | logged(log) | cached | metered(registry)

#include <strata/decorators/all.hpp>
#include <strata/stores/sqlite_store.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;
constexpr u64 rows = 100'000;
constexpr u64 commit_every = 10'000;
constexpr std::size_t stream_len = std::size_t{1} << 20;
constexpr int batch = 100;
using clock_type = std::chrono::steady_clock;
constexpr const char* update_text = "UPDATE item SET value = ?1 WHERE id = ?2";

using bench::value_of;

strata::sqlite_store filled() {
    strata::sqlite_store db("items");
    db.schema("CREATE TABLE item(id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    for (u64 id = 0; id < rows; ++id)
        db.apply(strata::sql{"INSERT INTO item VALUES (?1, ?2)", {static_cast<std::int64_t>(id), value_of(id)}});
    db.flush();
    return db;
}

/// SQLite used directly: one prepared statement, a transaction per commit.
struct raw_db {
    sqlite3* db = nullptr;
    sqlite3_stmt* update = nullptr;
    raw_db() {
        bench::check(sqlite3_open(":memory:", &db) == SQLITE_OK, "open");
        exec("CREATE TABLE item(id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
        exec("BEGIN");
        sqlite3_stmt* insert = nullptr;
        bench::check(sqlite3_prepare_v2(db, "INSERT INTO item VALUES (?1, ?2)", -1, &insert, nullptr) == SQLITE_OK,
                     "prepare");
        for (u64 id = 0; id < rows; ++id) {
            sqlite3_bind_int64(insert, 1, static_cast<sqlite3_int64>(id));
            sqlite3_bind_text(insert, 2, value_of(id).data(), static_cast<int>(value_of(id).size()), SQLITE_STATIC);
            bench::check(sqlite3_step(insert) == SQLITE_DONE, "insert");
            sqlite3_reset(insert);
        }
        sqlite3_finalize(insert);
        exec("COMMIT");
        exec("BEGIN");
        bench::check(sqlite3_prepare_v2(db, update_text, -1, &update, nullptr) == SQLITE_OK, "prepare");
    }
    raw_db(raw_db&& o) noexcept : db(std::exchange(o.db, nullptr)), update(std::exchange(o.update, nullptr)) {}
    ~raw_db() {
        if (update != nullptr) sqlite3_finalize(update);
        if (db != nullptr) sqlite3_close(db);
    }
    void exec(const char* text) { bench::check(sqlite3_exec(db, text, nullptr, nullptr, nullptr) == SQLITE_OK, text); }
    void apply(const strata::sql& u) {
        const auto& v = std::get<std::string>(u.params[0].v);
        sqlite3_bind_text(update, 1, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
        sqlite3_bind_int64(update, 2, std::get<std::int64_t>(u.params[1].v));
        bench::check(sqlite3_step(update) == SQLITE_DONE, "update");
        sqlite3_reset(update);
    }
    void flush() {
        exec("COMMIT");
        exec("BEGIN");
    }
};

template <class Make>
void bench_updates(benchmark::State& state, Make make) {
    bench::discarding_log log;
    strata::metrics::registry reg;
    auto store = make(log, reg);
    const auto ids = bench::key_stream(rows, false, stream_len, 42);
    std::size_t i = 0;
    u64 n = 0;
    double total_ns = 0;
    bench::percentiles p;
    p.samples.reserve(1 << 16);
    strata::sql u{update_text, {value_of(0), std::int64_t{0}}};
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        for (int j = 0; j < batch; ++j) {
            u.params[0] = value_of(n);
            u.params[1] = static_cast<std::int64_t>(ids[i]);
            store.apply(u);
            i = (i + 1) & (stream_len - 1);
            if (++n % commit_every == 0) store.flush();
        }
        const double ns = static_cast<double>((clock_type::now() - t0).count());
        total_ns += ns;
        p.samples.push_back(ns / batch);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
    p.report(state, total_ns, static_cast<double>(n));
}

void register_all() {
    auto reg = [](const std::string& name, auto make) {
        benchmark::RegisterBenchmark(("sqlite/op:update/store:" + name).c_str(),
                                     [=](benchmark::State& s) { bench_updates(s, make); })
            ->UseRealTime();
    };
    reg("raw", [](auto&, auto&) { return raw_db(); });
    reg("strata_bare", [](auto&, auto&) { return filled(); });
    reg("strata_logged", [](auto& log, auto&) { return filled() | strata::logged(log); });
    reg("strata_full",
        [](auto& log, auto& r) { return filled() | strata::logged(log) | strata::cached() | strata::metered(r); });
}

}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
