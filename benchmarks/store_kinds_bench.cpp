// What each store kind's put and read cost, next to the key-value store:
// window, session, timestamped and versioned stores, bare and logged.
//
//   build-bench/benchmarks/store_kinds_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   (scripts/bench.sh builds it and runs every benchmark; docs/benchmarks-runtime.md has the figures)
//
// Workload: 100,000 keys (u64), values u64, a pre-drawn uniform stream of
// keys. Time moves on by 1 ms per operation, as records arrive in a stream:
// the window store puts into the window of that time (1 s windows, 1 min
// retention), the session store aggregates into sessions (gap 10 s), the
// timestamped store puts the value with the time, the versioned store puts
// a version at that time (1 min history). Reads: the key-value and
// timestamped stores' find, the window store's fetch(key, the last minute)
// (a vector of up to 60 windows), the session store's find_sessions over
// the last gap, the versioned store's get_as_of(key, 30 s ago); counter
// `found` is the share of reads that found something. Each store is filled first by
// the same stream. The logged stacks write to a changelog that copies each
// record into one reused buffer and forgets it every 10,000 operations (the
// flush inside the timed region): strata's own cost, without a disk.
//
// Names: store_kinds/op:<put|read>/kind:<kv|timestamped|window|session|versioned>/stack:<bare|logged>;
// counter ns_per_op.

#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>
#include <strata/stores/session_store.hpp>
#include <strata/stores/timestamped.hpp>
#include <strata/stores/versioned_store.hpp>
#include <strata/stores/window_store.hpp>
#include <strata/stores/windowed_aggregation.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;
using namespace std::chrono_literals;
constexpr u64 keys = 100'000;
constexpr std::size_t stream_len = std::size_t{1} << 20;
constexpr u64 commit_every = 10'000;
constexpr std::int64_t window_ms = 1000;

const std::vector<u64>& stream() {
    static const std::vector<u64> s = bench::key_stream(keys, false, stream_len, 42);
    return s;
}

enum class kind { kv, timestamped, window, session, versioned };
const char* name_of(kind k) {
    switch (k) {
        case kind::kv: return "kv";
        case kind::timestamped: return "timestamped";
        case kind::window: return "window";
        case kind::session: return "session";
        case kind::versioned: return "versioned";
    }
    return "?";
}

/// The store of each kind, and how one operation of the stream reaches it.
template <kind K>
struct workload;

template <>
struct workload<kind::kv> {
    static auto make() { return strata::ordered_map_store<u64, u64>("kv"); }
    template <class S>
    void put(S& s, u64 k, std::int64_t t) { s.put(k, static_cast<u64>(t)); }
    template <class S>
    bool read(const S& s, u64 k, std::int64_t) { return s.find(k) != nullptr; }
};

template <>
struct workload<kind::timestamped> {
    static auto make() { return strata::ordered_map_store<u64, strata::timestamped<u64>>("timestamped"); }
    template <class S>
    void put(S& s, u64 k, std::int64_t t) { s.put(k, {static_cast<u64>(t), t}); }
    template <class S>
    bool read(const S& s, u64 k, std::int64_t) { return s.find(k) != nullptr; }
};

template <>
struct workload<kind::window> {
    static auto make() {
        return strata::window_store<u64, u64>("window", {.window_size = std::chrono::milliseconds(window_ms),
                                                         .retention = 1min});
    }
    template <class S>
    void put(S& s, u64 k, std::int64_t t) {
        s.apply(strata::window_put<u64, u64>{{k, t / window_ms * window_ms}, static_cast<u64>(t)});
    }
    /// The key's windows of the last minute (an interactive query's fetch).
    template <class S>
    bool read(const S& s, u64 k, std::int64_t t) {
        return !strata::innermost(s).fetch(k, t - 60'000, t).empty();
    }
};

template <>
struct workload<kind::session> {
    static auto make() { return strata::session_store<u64, u64>("session", {.retention = 1min}); }
    /// One aggregator per store: sessions merge as records of a key come within the gap.
    strata::session_aggregator aggregator{strata::session_windows::with_gap(10s)};
    template <class S>
    void put(S& s, u64 k, std::int64_t t) {
        aggregator.aggregate(
            s, k, t, u64{0}, [](u64 n) { return n + 1; }, [](u64 a, u64 b) { return a + b; });
    }
    template <class S>
    bool read(const S& s, u64 k, std::int64_t t) {
        return !strata::innermost(s).find_sessions(k, t - 10'000, t).empty();
    }
};

template <>
struct workload<kind::versioned> {
    static auto make() { return strata::versioned_store<u64, u64>("versioned", {.history_retention = 1min}); }
    template <class S>
    void put(S& s, u64 k, std::int64_t t) {
        s.apply(strata::versioned_put<u64, u64>{k, static_cast<u64>(t), t});
    }
    template <class S>
    bool read(const S& s, u64 k, std::int64_t t) {
        return strata::innermost(s).get_as_of(k, t - 30'000).has_value();
    }
};

template <kind K, bool Logged>
void run(benchmark::State& state, bool reads) {
    using w = workload<K>;
    w work;
    bench::discarding_log log;
    auto stack = [&] {
        if constexpr (Logged) return w::make() | strata::logged(log);
        else return w::make();
    }();
    const auto& keys_in = stream();
    std::int64_t now = 1'700'000'000'000;
    for (std::size_t i = 0; i < stream_len; ++i) work.put(stack, keys_in[i], ++now);  // fill
    if constexpr (Logged) stack.flush();

    std::size_t i = 0;
    u64 ops = 0, found = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        for (int b = 0; b < 100; ++b) {
            const u64 k = keys_in[i];
            i = (i + 1) & (stream_len - 1);
            if (reads) {
                found += work.read(stack, k, now) ? 1 : 0;
            } else {
                work.put(stack, k, ++now);
                if constexpr (Logged)
                    if (++ops % commit_every == 0) stack.flush();
            }
        }
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(found);
    state.counters["ns_per_op"] = ns / static_cast<double>(state.iterations() * 100);
    if (reads) state.counters["found"] = static_cast<double>(found) / static_cast<double>(state.iterations() * 100);
}

template <kind K>
void register_kind() {
    for (const bool reads : {false, true}) {
        const std::string op = reads ? "read" : "put";
        benchmark::RegisterBenchmark(("store_kinds/op:" + op + "/kind:" + name_of(K) + "/stack:bare").c_str(),
                                     [reads](benchmark::State& s) { run<K, false>(s, reads); });
        benchmark::RegisterBenchmark(("store_kinds/op:" + op + "/kind:" + name_of(K) + "/stack:logged").c_str(),
                                     [reads](benchmark::State& s) { run<K, true>(s, reads); });
    }
}

}  // namespace

int main(int argc, char** argv) {
    register_kind<kind::kv>();
    register_kind<kind::timestamped>();
    register_kind<kind::window>();
    register_kind<kind::session>();
    register_kind<kind::versioned>();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
