// Per-operation cost of strata's stores, bare and under decorator stacks.
//
//   cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_BENCHMARKS=ON
//   cmake --build build-bench --target store_ops_bench
//   build-bench/benchmarks/store_ops_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Keys are u64 drawn uniformly from [0, keys); values are u64. The logged
// stacks write to a changelog that copies each record into one reused
// buffer and forgets it at every simulated commit (every 10'000
// operations): strata's own cost, without a disk or a broker.

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using u64 = std::uint64_t;
constexpr u64 commit_every = 10'000;

std::vector<u64> random_keys(u64 keys, std::size_t n) {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<u64> d(0, keys - 1);
    std::vector<u64> out(n);
    for (auto& k : out) k = d(rng);
    return out;
}

/// A changelog that copies records into a buffer and drops them at flush.
struct discarding_log {
    strata::byte_buffer buffer;
    strata::offset_t end = 0;
    void append(const strata::record_view& r) {
        strata::append_bytes(buffer, r.key);
        if (r.value) strata::append_bytes(buffer, *r.value);
        ++end;
    }
    strata::offset_t flush() {
        buffer.clear();
        return end;
    }
    strata::offset_t end_offset() const { return end; }
    std::vector<strata::record_view> replay(strata::offset_t) const { return {}; }
};
static_assert(strata::changelog<discarding_log>);

template <class Make>
void bench_put(benchmark::State& state, Make make) {
    const u64 keys = static_cast<u64>(state.range(0));
    discarding_log log;
    strata::metrics::registry reg;
    auto store = make(log, reg);
    for (u64 k = 0; k < keys; ++k) store.put(k, k);
    if constexpr (requires { store.flush(); }) store.flush();
    const auto ks = random_keys(keys, 1 << 20);
    std::size_t i = 0;
    u64 n = 0;
    for (auto _ : state) {
        store.put(ks[i], n);
        i = (i + 1) & ((1 << 20) - 1);
        if (++n % commit_every == 0) {
            if constexpr (requires { store.flush(); }) store.flush();
        }
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
}

template <class Make>
void bench_get(benchmark::State& state, Make make) {
    const u64 keys = static_cast<u64>(state.range(0));
    discarding_log log;
    strata::metrics::registry reg;
    auto store = make(log, reg);
    for (u64 k = 0; k < keys; ++k) store.put(k, k);
    if constexpr (requires { store.flush(); }) store.flush();
    const auto ks = random_keys(keys, 1 << 20);
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(store.get(ks[i]));
        i = (i + 1) & ((1 << 20) - 1);
    }
    state.SetItemsProcessed(state.iterations());
}

using hashed = strata::hash_map_store<u64, u64>;
using ordered = strata::ordered_map_store<u64, u64>;

const auto bare_hashed = [](auto&, auto&) { return hashed("s"); };
const auto logged_hashed = [](auto& log, auto&) { return hashed("s") | strata::logged(log); };
const auto full_hashed = [](auto& log, auto& reg) {
    return hashed("s") | strata::logged(log) | strata::cached() | strata::metered(reg);
};
const auto bare_ordered = [](auto&, auto&) { return ordered("s"); };
const auto full_ordered = [](auto& log, auto& reg) {
    return ordered("s") | strata::logged(log) | strata::cached() | strata::metered(reg);
};

}  // namespace

BENCHMARK_CAPTURE(bench_put, hashed_bare, bare_hashed)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_put, hashed_logged, logged_hashed)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_put, hashed_full_stack, full_hashed)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_put, ordered_bare, bare_ordered)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_put, ordered_full_stack, full_ordered)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_get, hashed_bare, bare_hashed)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_get, hashed_full_stack, full_hashed)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_get, ordered_bare, bare_ordered)->Arg(10'000)->Arg(1'000'000);
BENCHMARK_CAPTURE(bench_get, ordered_full_stack, full_ordered)->Arg(10'000)->Arg(1'000'000);

BENCHMARK_MAIN();
