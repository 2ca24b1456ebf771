// How strata's costs grow with the state: one key count per process (so the
// memory figures start from a clean heap), run by scripts/bench.sh for 1M,
// 10M and 50M keys.
//
//   STRATA_BENCH_SCALE_KEYS=10000000 STRATA_BENCH_DIR=build-bench/tmp build-bench/benchmarks/scale_bench
//
// With n = STRATA_BENCH_SCALE_KEYS (default 1,000,000), u64 keys [0, n) and
// u64 values, hash_map_store:
//   scale/op:write   `store | logged(file_log)`: n puts, a flush every 100k;
//                    updates/s (the log then holds one record per key)
//   scale/op:restore the page cache dropped, open the log, restore a fresh
//                    store; open_s, restore_s, records/s; store_bytes_per_key:
//                    heap bytes in use that the restored store added, over n
//                    (malloc's own count, mallinfo2: resident memory would
//                    count the pages an earlier benchmark freed as reused);
//                    peak_over_store: the most heap in use the restore added
//                    (sampled at every progress report, every 10k records)
//                    over what the store keeps
//   scale/op:put, scale/op:get  2M operations with uniform keys on the
//                    restored store, bare and under logged (a changelog that
//                    only copies bytes) | cached | metered; mean ns/op
// All times are measured once per process (Iterations(1), manual time).

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <malloc.h>

namespace {

namespace fs = std::filesystem;
using u64 = std::uint64_t;
using store_t = strata::hash_map_store<u64, u64>;
using bench::clock_type;
using bench::seconds_since;

u64 key_count() {
    const char* env = std::getenv("STRATA_BENCH_SCALE_KEYS");
    return env && *env ? std::stoull(env) : 1'000'000;
}

/// Bytes the heap has handed out and not taken back (small blocks and mmapped ones).
double heap_in_use() {
    const struct mallinfo2 m = ::mallinfo2();
    return static_cast<double>(m.uordblks + m.hblkhd);
}

/// Samples the heap at every progress report of a restore.
struct heap_sampler {
    double* peak;
    void on_restore_start(const strata::restore_progress&) {}
    void on_batch_restored(const strata::restore_progress&) { *peak = std::max(*peak, heap_in_use()); }
    void on_restore_end(const strata::restore_progress&) { *peak = std::max(*peak, heap_in_use()); }
};

fs::path log_dir() { return bench::bench_dir() / ("scale_" + std::to_string(key_count())); }

void bench_write(benchmark::State& state) {
    const u64 n = key_count();
    for (auto _ : state) {
        fs::remove_all(log_dir());
        strata::file_log log(log_dir());
        auto s = store_t("s") | strata::logged(log);
        const auto t0 = clock_type::now();
        for (u64 k = 0; k < n; ++k) {
            s.put(k, k);
            if ((k + 1) % 100'000 == 0) s.flush();
        }
        s.flush();
        state.SetIterationTime(seconds_since(t0));
    }
    state.counters["updates_per_second"] =
        benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

/// The restored store, kept for the put and get benchmarks that follow.
store_t& restored() {
    static store_t s("s");
    return s;
}

void bench_restore(benchmark::State& state) {
    const u64 n = key_count();
    for (auto _ : state) {
        bench::drop_dir_page_cache(log_dir());
        restored() = store_t("s");  // an earlier repetition's store, freed before counting
        const double before = heap_in_use();
        double peak = before;
        const auto t0 = clock_type::now();
        strata::file_log log(log_dir());
        const double open_s = seconds_since(t0);
        auto s = store_t("s") | strata::logged(log);
        const auto t1 = clock_type::now();
        const auto p = s.restore(heap_sampler{&peak});
        const double restore_s = seconds_since(t1);
        if (p.records_done != n) throw std::runtime_error("restored a wrong record count");
        state.SetIterationTime(restore_s);
        restored() = std::move(s).base();
        const double kept = heap_in_use() - before;
        state.counters["open_s"] = open_s;
        state.counters["restore_s"] = restore_s;
        state.counters["store_bytes_per_key"] = kept / static_cast<double>(n);
        state.counters["peak_over_store"] = (peak - before) / kept;
    }
    state.counters["records_per_second"] =
        benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

template <class Stack>
void time_ops(benchmark::State& state, Stack& s, bool put) {
    const u64 n = key_count();
    constexpr std::size_t ops = 2'000'000;
    const auto keys = bench::key_stream(n, false, ops, 7);
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        u64 sum = 0;
        for (std::size_t i = 0; i < ops; ++i) {
            if (put) s.put(keys[i], i);
            else sum += s.get(keys[i]).value_or(0);
            if ((i + 1) % 10'000 == 0) {
                if constexpr (requires { s.flush(); }) s.flush();
            }
        }
        benchmark::DoNotOptimize(sum);
        state.SetIterationTime(seconds_since(t0));
    }
    state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(ops) * 1e-9,
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

void bench_ops(benchmark::State& state, bool put, bool full_stack) {
    if (restored().size() != key_count()) throw std::runtime_error("run scale/op:restore first");
    if (!full_stack) return time_ops(state, restored(), put);
    bench::discarding_log log;
    strata::metrics::registry reg;
    auto s = std::move(restored()) | strata::logged(log) | strata::cached() | strata::metered(reg);
    time_ops(state, s, put);
    restored() = std::move(s).base().base().base();
}

}  // namespace

int main(int argc, char** argv) {
    const std::string keys = "/keys:" + std::to_string(key_count());
    auto reg = [](const std::string& name, auto fn) {
        benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
    };
    reg("scale/op:write" + keys, bench_write);
    reg("scale/op:restore" + keys, bench_restore);
    for (const bool put : {true, false})
        for (const bool full : {false, true})
            reg(std::string("scale/op:") + (put ? "put" : "get") + "/store:" + (full ? "full_stack" : "bare") + keys,
                [=](benchmark::State& s) { bench_ops(s, put, full); });
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
