// Restore from the file changelog through the logged layer.
//
//   STRATA_BENCH_DIR=build-bench/tmp build-bench/benchmarks/restore_bench --benchmark_repetitions=3
//
// A file_log holding N records (u64 keys 0..N-1, each written once: a
// compacted changelog; values of 8 B (u64) or 100 B (std::string)) is built
// once per configuration, outside the timing. Each pass then drops the
// log's pages from the page cache (fdatasync + POSIX_FADV_DONTNEED), opens
// the log (which reads each sealed segment's index and scans the active
// segment frame by frame: here, with one record per key and 64 MiB segments,
// up to the whole log below 1.4M records of 8 B values), builds
// `store | logged(log)` and calls restore(). Stores: ordered_map_store,
// hash_map_store, and for reference the replay alone with no store, and the
// store alone with no log (hashed_puts: the same N puts into an empty
// hash_map_store, growing as a restore makes it grow): a restore costs at
// least the sum of those two.
//
// The benchmark time is restore() alone (manual time). Counters:
//   records_per_second, bytes_per_second   of restore(), bytes on disk
//   open_s      opening the log: the cold read and check of every frame
//   ready_s     open + restore: time until the store is ready
// Names: restore/store:<ordered|hashed|replay_only|hashed_puts>/value:<8|100>/records:<n>.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/logged.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using u64 = std::uint64_t;
using bench::bench_dir;
using bench::clock_type;
using bench::seconds_since;

template <class V>
constexpr int value_size() {
    return std::is_same_v<V, u64> ? 8 : 100;
}

/// The directory of the changelog with n records of V, built on first use.
template <class V>
fs::path changelog_dir(u64 n) {
    static std::set<u64> built;
    const fs::path dir = bench_dir() / ("restore_" + std::to_string(value_size<V>()) + "_" + std::to_string(n));
    if (built.insert(n).second) {
        fs::remove_all(dir);
        strata::file_log log(dir);
        strata::byte_buffer key, value;
        const std::string text(100, 'v');
        for (u64 i = 0; i < n; ++i) {
            key.clear();
            value.clear();
            strata::encode(i, key);
            if constexpr (std::is_same_v<V, u64>) strata::encode(i, value);
            else strata::encode(text, value);
            log.append(strata::record_view{key, strata::bytes_view(value)});
            if ((i + 1) % 100'000 == 0) log.flush();
        }
        log.flush();
    }
    return dir;
}


enum class target { ordered, hashed, replay_only, hashed_puts };

template <class V>
void bench_restore(benchmark::State& state, target t, u64 n) {
    const fs::path dir = changelog_dir<V>(n);
    const u64 bytes = bench::dir_bytes(dir);
    double open_s = 0, ready_s = 0;
    u64 restored = 0;
    for (auto _ : state) {
        bench::drop_dir_page_cache(dir);
        const auto t0 = clock_type::now();
        strata::file_log log(dir);
        const double opened = seconds_since(t0);
        // Timed inside each branch: the store's destruction (freeing N
        // entries) is not part of the restore.
        double restore_s = 0;
        const auto t1 = clock_type::now();
        if (t == target::ordered) {
            auto store = strata::ordered_map_store<u64, V>("s") | strata::logged(log);
            restored = store.restore().records_done;
            restore_s = seconds_since(t1);
            benchmark::DoNotOptimize(store.base().size());
        } else if (t == target::hashed) {
            auto store = strata::hash_map_store<u64, V>("s") | strata::logged(log);
            restored = store.restore().records_done;
            restore_s = seconds_since(t1);
            benchmark::DoNotOptimize(store.base().size());
        } else if (t == target::hashed_puts) {
            // The values a restore decodes: the key's own number, or the text.
            const std::string text(100, 'v');
            strata::hash_map_store<u64, V> store("s");
            for (u64 i = 0; i < n; ++i) {
                if constexpr (std::is_same_v<V, u64>) store.put(i, i);
                else store.put(i, text);
            }
            restore_s = seconds_since(t1);
            restored = store.size();
            benchmark::DoNotOptimize(store.size());
        } else {
            u64 sum = 0;
            restored = 0;
            for (const strata::record_view r : log.replay(0)) {
                ++restored;
                sum += r.key.size();
            }
            restore_s = seconds_since(t1);
            benchmark::DoNotOptimize(sum);
        }
        state.SetIterationTime(restore_s);
        open_s += opened;
        ready_s += opened + restore_s;
        if (restored != n) throw std::runtime_error("restored a wrong record count");
    }
    const double iters = static_cast<double>(state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(n) * state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
    state.counters["records_per_second"] =
        benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["open_s"] = open_s / iters;
    state.counters["ready_s"] = ready_s / iters;
    state.counters["log_MB"] = static_cast<double>(bytes) / 1e6;
}

template <class V>
void register_size(u64 n) {
    const std::string tail = "/value:" + std::to_string(value_size<V>()) + "/records:" + std::to_string(n);
    for (auto [name, t] : {std::pair{"ordered", target::ordered}, std::pair{"hashed", target::hashed},
                           std::pair{"replay_only", target::replay_only},
                           std::pair{"hashed_puts", target::hashed_puts}}) {
        benchmark::RegisterBenchmark(("restore/store:" + std::string(name) + tail).c_str(),
                                     [=](benchmark::State& s) { bench_restore<V>(s, t, n); })
            ->UseManualTime()
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (const u64 n : {100'000ULL, 300'000ULL, 1'000'000ULL, 3'000'000ULL}) register_size<std::string>(n);
    register_size<u64>(1'000'000);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
