// Write coalescing of the cache layer: changelog records per update, and
// updates/s, for `hash_map_store | logged(log) | cached(opts)`.
//
//   build-bench/benchmarks/cache_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Workload: 1M u64 keys, already present; updates are puts of u64 values
// with keys uniform or Zipf(0.99) over the key space; the store is flushed
// (a commit: every dirty key writes its record) every `flush_every` updates,
// inside the timed region. The changelog copies records into a reused
// buffer and forgets them at flush, so the rate is strata's own.
// Cache sizes 1 MiB and 10 MiB (Kafka Streams' default
// statestore.cache.max.bytes), and no cache at all (one record per update).
//
// Counters:
//   records_per_update   changelog records / updates (1.0 = no coalescing)
//   evictions_per_update dirty entries written early because the cache was full
//   updates_per_second   the rate
// Names: cache/cache:<0|1MiB|10MiB>/dist:<uniform|zipf>/flush_every:<n>.

#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;
constexpr u64 keys = 1'000'000;
constexpr std::size_t stream_len = std::size_t{1} << 21;


std::vector<u64> key_stream(bool zipf) { return bench::key_stream(keys, zipf, stream_len, 7); }

/// Counts records, copies their bytes into a buffer dropped at flush.
using counting_log = bench::discarding_log;

template <class Store>
void fill(Store& store) {
    for (u64 k = 0; k < keys; ++k) store.put(k, k);
    store.flush();
}

template <class Store>
void run(benchmark::State& state, Store& store, counting_log& log, bool zipf, u64 flush_every) {
    const auto ks = key_stream(zipf);
    const auto records_before = log.end;
    u64 n = 0;
    std::size_t i = 0;
    for (auto _ : state) {
        store.put(ks[i], n);
        i = (i + 1) & (stream_len - 1);
        if (++n % flush_every == 0) store.flush();
    }
    store.flush();  // the records still dirty belong to these updates
    const double updates = static_cast<double>(n);
    state.counters["records_per_update"] = static_cast<double>(log.end - records_before) / updates;
    state.counters["updates_per_second"] = benchmark::Counter(updates, benchmark::Counter::kIsRate);
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
}

void bench_cached(benchmark::State& state, std::size_t cache_bytes, bool zipf, u64 flush_every) {
    counting_log log;
    auto store = strata::hash_map_store<u64, u64>("s") | strata::logged(log) |
                 strata::cached(strata::cached_options{cache_bytes});
    fill(store);
    const auto before = store.stats();
    run(state, store, log, zipf, flush_every);
    const auto s = store.stats();
    state.counters["evictions_per_update"] =
        static_cast<double>(s.dirty_evictions - before.dirty_evictions) / static_cast<double>(state.iterations());
    state.counters["cache_entries"] = static_cast<double>(s.entries);
}

void bench_uncached(benchmark::State& state, bool zipf, u64 flush_every) {
    counting_log log;
    auto store = strata::hash_map_store<u64, u64>("s") | strata::logged(log);
    fill(store);
    run(state, store, log, zipf, flush_every);
    state.counters["evictions_per_update"] = 0;
}

}  // namespace

int main(int argc, char** argv) {
    for (const bool zipf : {false, true}) {
        const std::string dist = zipf ? "zipf" : "uniform";
        for (const u64 every : {1'000ULL, 10'000ULL, 100'000ULL, 1'000'000ULL}) {
            const std::string tail = "/dist:" + dist + "/flush_every:" + std::to_string(every);
            benchmark::RegisterBenchmark(("cache/cache:0" + tail).c_str(),
                                         [=](benchmark::State& s) { bench_uncached(s, zipf, every); })
                ->Iterations(2'000'000);
            for (const std::size_t mib : {1, 10}) {
                benchmark::RegisterBenchmark(
                    ("cache/cache:" + std::to_string(mib) + "MiB" + tail).c_str(),
                    [=](benchmark::State& s) { bench_cached(s, mib << 20, zipf, every); })
                    ->Iterations(2'000'000);
            }
        }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
