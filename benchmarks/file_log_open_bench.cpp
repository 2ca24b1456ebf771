// What opening a file log costs as it grows, and what restoring from a
// checkpoint near its end costs.
//
//   STRATA_BENCH_DIR=build-bench/tmp build-bench/benchmarks/file_log_open_bench
//   STRATA_BENCH_OPEN_100M=1 ...   adds the 100M-record log (about 4.5 GB on
//                                  disk, several minutes to write)
//
// The log holds N records (u64 keys 0..N-1, 8-byte u64 values, 45 B frames,
// as restore_bench writes them), flushed every 10'000 records into 64 MiB
// segments. It is written once per N (not timed) into the scratch directory
// and removed at the end of the run.
//   open_cold     the constructor alone, after dropping every file of the
//                 log from the page cache (fdatasync + POSIX_FADV_DONTNEED)
//   open_warm     the constructor alone, files in the page cache
//   restore_tail  cold: the constructor, then replay(N - 1000) to its end: a
//                 restore from a checkpoint 1000 records before the end
// Counters: read_MB is the bytes the log's files hold (what an open that
// checks every frame reads).
//
// Compaction: 10M updates of 1M keys (key i % 1M, 8-byte values), flushed
// every 10'000 updates into 64 MiB segments:
//   append_compact/auto_compact:<0|1>/keys:<k>
//                         append + flush throughput with automatic compaction
//                         off and on, over 1M keys (each updated 10 times) or
//                         10M (each written once: compaction finds nothing to
//                         drop, its cost alone); with it on, compact_s is the time of the
//                         flushes that ran a compaction, cleaned_MBps the bytes
//                         those compactions read over that time
//   compact_all           compact() of the same log written without automatic
//                         compaction: cleaned_MBps = bytes read / time

#include <strata/changelog/file_log.hpp>
#include <strata/serde/encode.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using u64 = std::uint64_t;
using bench::check;
using bench::clock_type;
using bench::seconds_since;

constexpr u64 flush_every = 10'000;

fs::path log_dir(u64 n) { return bench::bench_dir() / ("file_log_open_" + std::to_string(n)); }

/// Writes the log of n records once per run.
/// @returns its bytes on disk
u64 ensure_log(u64 n) {
    static std::map<u64, u64> written;
    if (const auto it = written.find(n); it != written.end()) return it->second;
    const fs::path dir = log_dir(n);
    fs::remove_all(dir);
    {
        strata::file_log log(dir);
        strata::byte_buffer key, value;
        for (u64 i = 0; i < n; ++i) {
            key.clear();
            value.clear();
            strata::encode(i, key);
            strata::encode(i, value);
            log.append(strata::record_view{key, strata::bytes_view(value)});
            if ((i + 1) % flush_every == 0) log.flush();
        }
        log.flush();
    }
    const u64 bytes = bench::dir_bytes(dir);
    written[n] = bytes;
    return bytes;
}

void drop_cache(u64 n) { bench::drop_dir_page_cache(log_dir(n)); }

void bench_open(benchmark::State& state, bool cold) {
    const auto n = static_cast<u64>(state.range(0));
    const u64 bytes = ensure_log(n);
    for (auto _ : state) {
        if (cold) drop_cache(n);
        const auto t0 = clock_type::now();
        strata::file_log log(log_dir(n));
        state.SetIterationTime(seconds_since(t0));
        check(log.durable_offset() == n, "open: durable end");
    }
    state.counters["read_MB"] = static_cast<double>(bytes) / 1e6;
}

void bench_restore_tail(benchmark::State& state) {
    const auto n = static_cast<u64>(state.range(0));
    const u64 bytes = ensure_log(n);
    constexpr u64 tail = 1000;
    for (auto _ : state) {
        drop_cache(n);
        const auto t0 = clock_type::now();
        strata::file_log log(log_dir(n));
        u64 got = 0;
        for (const strata::record_view r : log.replay(n - tail)) {
            ++got;
            benchmark::DoNotOptimize(r.key.data());
        }
        state.SetIterationTime(seconds_since(t0));
        check(got == tail, "restore_tail: record count");
    }
    state.counters["read_MB"] = static_cast<double>(bytes) / 1e6;
}

constexpr u64 updates = 10'000'000;

/// Appends the compaction workload; @returns the seconds spent in flushes
/// that ran a compaction.
double write_updates(strata::file_log& log, u64 update_keys = 1'000'000) {
    strata::byte_buffer key, value;
    double compact_s = 0;
    for (u64 i = 0; i < updates; ++i) {
        key.clear();
        value.clear();
        strata::encode(i % update_keys, key);
        strata::encode(i, value);
        log.append(strata::record_view{key, strata::bytes_view(value)});
        if ((i + 1) % flush_every == 0) {
            const std::size_t passes = log.compaction_totals().passes;
            const auto t0 = clock_type::now();
            log.flush();
            if (log.compaction_totals().passes != passes) compact_s += seconds_since(t0);
        }
    }
    log.flush();
    return compact_s;
}

void report_compaction(benchmark::State& state, const strata::compaction_stats& c, double seconds) {
    state.counters["passes"] = static_cast<double>(c.passes);
    state.counters["read_MB"] = static_cast<double>(c.bytes_read) / 1e6;
    state.counters["rewritten_MB_before"] = static_cast<double>(c.bytes_before) / 1e6;
    state.counters["rewritten_MB_after"] = static_cast<double>(c.bytes_after) / 1e6;
    state.counters["compact_s"] = seconds;
    state.counters["cleaned_MBps"] = seconds > 0 ? static_cast<double>(c.bytes_read) / 1e6 / seconds : 0.0;
}

void bench_append_compact(benchmark::State& state) {
    const bool compact = state.range(0) != 0;
    const auto keys = static_cast<u64>(state.range(1));
    const fs::path dir = bench::bench_dir() / "file_log_compact";
    for (auto _ : state) {
        fs::remove_all(dir);
        const auto t0 = clock_type::now();
        strata::file_log log(dir, {.auto_compact = compact});
        const double compact_s = write_updates(log, keys);
        state.SetIterationTime(seconds_since(t0));
        report_compaction(state, log.compaction_totals(), compact_s);
        u64 bytes = 0;
        for (const auto& p : log.segment_paths()) bytes += fs::file_size(p);
        state.counters["log_MB_at_end"] = static_cast<double>(bytes) / 1e6;
    }
    state.counters["records_per_second"] =
        benchmark::Counter(static_cast<double>(updates), benchmark::Counter::kIsIterationInvariantRate);
    fs::remove_all(dir);
}

void bench_compact_all(benchmark::State& state) {
    const fs::path dir = bench::bench_dir() / "file_log_compact_all";
    for (auto _ : state) {
        fs::remove_all(dir);
        {
            strata::file_log log(dir, {.auto_compact = false});
            write_updates(log);
        }
        strata::file_log log(dir, {.auto_compact = false});
        const auto t0 = clock_type::now();
        const auto stats = log.compact();
        const double s = seconds_since(t0);
        state.SetIterationTime(s);
        report_compaction(state, stats, s);
    }
    fs::remove_all(dir);
}

void sizes(benchmark::internal::Benchmark* b) {
    b->Arg(1'000'000)->Arg(10'000'000);
    if (const char* e = std::getenv("STRATA_BENCH_OPEN_100M"); e && std::string(e) == "1") b->Arg(100'000'000);
}

}  // namespace

BENCHMARK_CAPTURE(bench_open, cold, true)->Name("file_log_open/op:open_cold")->ArgName("records")->Apply(sizes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_open, warm, false)->Name("file_log_open/op:open_warm")->ArgName("records")->Apply(sizes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(bench_restore_tail)->Name("file_log_open/op:restore_tail_cold")->ArgName("records")->Apply(sizes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

BENCHMARK(bench_append_compact)->Name("file_log_open/op:append_compact")->ArgNames({"auto_compact", "keys"})->Args({0, 1'000'000})->Args({1, 1'000'000})->Args({0, 10'000'000})->Args({1, 10'000'000})->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(bench_compact_all)->Name("file_log_open/op:compact_all")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    for (const auto n : {1'000'000ULL, 10'000'000ULL, 100'000'000ULL}) fs::remove_all(log_dir(n));
    return 0;
}
