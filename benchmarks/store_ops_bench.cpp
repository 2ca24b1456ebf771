// Per-operation cost of strata's stores, bare and under each decorator stack,
// next to the raw containers doing the same operations.
//
//   scripts/bench.sh                       # everything, see docs/benchmarks.md
//   build-bench/benchmarks/store_ops_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Workload: the store is first filled with keys [0, keys) (u64), then every
// operation takes its key from a pre-drawn stream of 2^20 keys, uniform or
// Zipf(0.99) over [0, keys) (Zipf ranks are scattered over the key space by
// a fixed bijection, so hot keys are not neighbours). Values are u64 (8 B)
// or std::string of 100 B. The logged stacks write to a changelog that copies
// each record into one reused buffer and forgets it at every simulated
// commit, every 10'000 operations: strata's own cost, without a disk or a
// broker. The commit (cache flush) is inside the timed region.
//
// Timing is batched: one benchmark iteration is 100 operations, timed with
// steady_clock; the counters are
//   ns_per_op   total timed ns / operations
//   p50_ns, p99_ns  per-operation time of the median and 99th percentile batch
// The raw containers' get is a find that reads the value in place; strata's
// get returns std::optional<V> by value (a copy; for 100 B strings, an
// allocation).
//
// Benchmark names: store_ops/op:<put|get>/store:<s>/value:<8|100>/dist:<uniform|zipf>/keys:<n>.
// Key counts come from STRATA_BENCH_KEYS (comma separated, default 1000000);
// key counts of 5M and more run a reduced set (8 B values; the stores bare,
// metered, logged and under the full stack; the raw hash maps), to keep
// memory and time in bounds.

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>
#include <boost/unordered_map.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using u64 = std::uint64_t;
constexpr u64 commit_every = 10'000;
constexpr std::size_t stream_len = std::size_t{1} << 20;
constexpr int batch = 100;


enum class dist { uniform, zipf };

std::vector<u64> key_stream(u64 keys, dist d) {
    return bench::key_stream(keys, d == dist::zipf, stream_len, 42);
}
using bench::discarding_log;

// ---- values: u64 or a 100 B string
template <class V>
struct values;
template <>
struct values<u64> {
    static constexpr int bytes = 8;
    u64 operator()(u64 n) const { return n; }
};
template <>
struct values<std::string> {
    static constexpr int bytes = 100;
    std::vector<std::string> pool;
    values() {
        for (int i = 0; i < 16; ++i) pool.emplace_back(100, static_cast<char>('a' + i));
    }
    const std::string& operator()(u64 n) const { return pool[n & 15]; }
};

// ---- raw containers behind the store interface the benchmark uses
template <class Map>
struct raw_map {
    Map map;
    template <class K, class V>
    void put(const K& k, const V& v) { map.insert_or_assign(k, v); }
    template <class K>
    auto find(const K& k) const { return map.find(k); }
    auto end() const { return map.end(); }
};

template <class S>
constexpr bool is_raw = requires(const S& s) { s.map; };

template <class S>
void flush_if(S& s) {
    if constexpr (requires { s.flush(); }) s.flush();
}

using bench::percentiles;

using clock_type = std::chrono::steady_clock;

/// Fills a store with `keys` keys, then times `op(store, key, n)` over the
/// key stream in batches of `batch` operations, committing every
/// `commit_every` operations (a read may evict a dirty cache entry and write
/// its record, so reads commit on the same schedule as puts).
template <class V, class Make, class Op>
void bench_ops(benchmark::State& state, Make make, u64 keys, dist d, Op op) {
    discarding_log log;
    strata::metrics::registry reg;
    values<V> val;
    auto store = make(log, reg);
    for (u64 k = 0; k < keys; ++k) store.put(k, val(k));
    flush_if(store);
    const auto ks = key_stream(keys, d);
    std::size_t i = 0;
    u64 n = 0;
    double total_ns = 0;
    percentiles p;
    p.samples.reserve(1 << 16);
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        for (int j = 0; j < batch; ++j) {
            op(store, ks[i], val, n);
            i = (i + 1) & (stream_len - 1);
            if (++n % commit_every == 0) flush_if(store);
        }
        const double ns = static_cast<double>((clock_type::now() - t0).count());
        total_ns += ns;
        p.samples.push_back(ns / batch);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
    p.report(state, total_ns, static_cast<double>(n));
}

template <class V, class Make>
void bench_put(benchmark::State& state, Make make, u64 keys, dist d) {
    bench_ops<V>(state, make, keys, d, [](auto& store, u64 k, values<V>& val, u64 n) { store.put(k, val(n)); });
}

template <class V, class Make>
void bench_get(benchmark::State& state, Make make, u64 keys, dist d) {
    bench_ops<V>(state, make, keys, d, [](auto& store, u64 k, values<V>&, u64) {
        if constexpr (is_raw<std::remove_reference_t<decltype(store)>>) {
            auto it = store.find(k);
            if (it != store.end()) benchmark::DoNotOptimize(it->second);
        } else {
            benchmark::DoNotOptimize(store.get(k));
        }
    });
}

template <class V>
struct stores {
    using hashed = strata::hash_map_store<u64, V>;
    using ordered = strata::ordered_map_store<u64, V>;

    static void register_all(u64 keys, dist d, bool reduced) {
        const std::string suffix = std::string("/value:") + std::to_string(values<V>::bytes) +
                                   "/dist:" + (d == dist::uniform ? "uniform" : "zipf") +
                                   "/keys:" + std::to_string(keys);
        auto reg = [&](const char* store, auto make) {
            benchmark::RegisterBenchmark(
                (std::string("store_ops/op:put/store:") + store + suffix).c_str(),
                [=](benchmark::State& s) { bench_put<V>(s, make, keys, d); })
                ->UseRealTime();
            benchmark::RegisterBenchmark(
                (std::string("store_ops/op:get/store:") + store + suffix).c_str(),
                [=](benchmark::State& s) { bench_get<V>(s, make, keys, d); })
                ->UseRealTime();
        };
        reg("std_unordered_map", [](auto&, auto&) { return raw_map<std::unordered_map<u64, V>>{}; });
        reg("boost_unordered_map", [](auto&, auto&) { return raw_map<boost::unordered_map<u64, V>>{}; });
        reg("hashed_bare", [](auto&, auto&) { return hashed("s"); });
        reg("hashed_metered", [](auto&, auto& r) { return hashed("s") | strata::metered(r); });
        // The meter counting every operation and timing none: what counting alone costs.
        reg("hashed_metered_untimed",
            [](auto&, auto& r) { return hashed("s") | strata::metered(r, {.time_one_in = 1u << 30}); });
        reg("hashed_logged", [](auto& log, auto&) { return hashed("s") | strata::logged(log); });
        reg("hashed_logged_cached",
            [](auto& log, auto&) { return hashed("s") | strata::logged(log) | strata::cached(); });
        reg("hashed_full_stack", [](auto& log, auto& r) {
            return hashed("s") | strata::logged(log) | strata::cached() | strata::metered(r);
        });
        reg("ordered_bare", [](auto&, auto&) { return ordered("s"); });
        reg("ordered_metered", [](auto&, auto& r) { return ordered("s") | strata::metered(r); });
        reg("ordered_logged", [](auto& log, auto&) { return ordered("s") | strata::logged(log); });
        reg("ordered_full_stack", [](auto& log, auto& r) {
            return ordered("s") | strata::logged(log) | strata::cached() | strata::metered(r);
        });
        if (reduced) return;
        reg("std_map", [](auto&, auto&) { return raw_map<std::map<u64, V>>{}; });
        reg("ordered_logged_cached",
            [](auto& log, auto&) { return ordered("s") | strata::logged(log) | strata::cached(); });
    }
};

std::vector<u64> key_counts() {
    std::vector<u64> out;
    const char* env = std::getenv("STRATA_BENCH_KEYS");
    std::stringstream in(env && *env ? env : "1000000");
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(std::stoull(item));
    return out;
}

/// What the metered layer pays per clock read: it reads steady_clock twice per operation.
void bench_steady_clock(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(clock_type::now());
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
    for (const u64 keys : key_counts()) {
        const bool reduced = keys >= 5'000'000;
        for (const dist d : {dist::uniform, dist::zipf}) {
            stores<u64>::register_all(keys, d, reduced);
            if (!reduced) stores<std::string>::register_all(keys, d, false);
        }
    }
    benchmark::RegisterBenchmark("store_ops/steady_clock_now", bench_steady_clock);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
