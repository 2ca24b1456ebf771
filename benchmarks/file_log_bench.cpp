// The file changelog against the disk it sits on, measured in the same run.
//
//   STRATA_BENCH_DIR=build-bench/tmp build-bench/benchmarks/file_log_bench --benchmark_repetitions=3
//
// file_log: 1M records (8 B key, 100 B value: 137 B frames), appended and
// flushed (write + fdatasync) every 10'000 records; then replayed from
// offset 0. The disk baselines write and read a plain file of the same size
// in the same directory (same filesystem):
//   disk write, sync per chunk   chunks of the bytes of 10'000 frames, each
//                                write(2) + fdatasync: the file log's own pattern
//   disk write, sync at end      8 MiB write(2)s, one fdatasync: the bandwidth
//   disk read, cold / warm       8 MiB read(2)s; cold drops the file's pages
//                                first (fdatasync, then posix_fadvise
//                                POSIX_FADV_DONTNEED), warm reads from the page cache
// Replay is measured cold and warm the same way; its time is opening the log
// (which reads the index of each sealed segment and every frame of the
// active one) plus replaying it, and the counter open_s is the opening alone.
// The log is never compacted here (auto_compact off: every key is written
// once anyway). file_log_open_bench measures opening by log size.
//
// Each benchmark is one timed pass (manual time: setup excluded); run it with
// repetitions. Counters: records_per_second; bytes_per_second counts bytes
// on disk (frames, headers and checksums included); payload_MBps counts key
// and value bytes only.

#include <strata/changelog/file_log.hpp>
#include <strata/serde/encode.hpp>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using u64 = std::uint64_t;
using bench::bench_dir;
using bench::check;
using bench::clock_type;
using bench::seconds_since;

constexpr u64 records = 1'000'000;
constexpr u64 flush_every = 10'000;
constexpr std::size_t value_bytes = 100;
constexpr std::size_t key_bytes = 8;
constexpr std::size_t io_chunk = 8u << 20;

/// Writes the benchmark's changelog into `dir` (emptied first).
/// @returns the bytes on disk
u64 write_log(const fs::path& dir) {
    fs::remove_all(dir);
    strata::file_log log(dir, {.auto_compact = false});
    const strata::byte_buffer value(value_bytes, std::byte{0x5a});
    strata::byte_buffer key;
    for (u64 i = 0; i < records; ++i) {
        key.clear();
        strata::encode(i, key);
        log.append(strata::record_view{key, strata::bytes_view(value)});
        if ((i + 1) % flush_every == 0) log.flush();
    }
    log.flush();
    u64 bytes = 0;
    for (const auto& p : log.segment_paths()) bytes += fs::file_size(p);
    return bytes;
}

void report(benchmark::State& state, u64 bytes) {
    state.SetItemsProcessed(static_cast<std::int64_t>(records) * state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
    state.counters["records_per_second"] =
        benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["payload_MBps"] = benchmark::Counter(
        static_cast<double>(records * (key_bytes + value_bytes)) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
}

void bench_append_flush(benchmark::State& state) {
    const fs::path dir = bench_dir() / "file_log_append";
    u64 bytes = 0;
    for (auto _ : state) {
        fs::remove_all(dir);
        const auto t0 = clock_type::now();
        bytes = write_log(dir);  // the remove_all inside is of an empty path: free
        state.SetIterationTime(seconds_since(t0));
    }
    report(state, bytes);
    fs::remove_all(dir);
}

void bench_replay(benchmark::State& state, bool cold) {
    const fs::path dir = bench_dir() / "file_log_replay";
    const u64 bytes = write_log(dir);
    double open_s = 0;
    for (auto _ : state) {
        std::vector<fs::path> segs;
        {
            strata::file_log probe(dir);
            segs = probe.segment_paths();
        }
        if (cold)
            for (const auto& p : segs) bench::drop_page_cache(p);
        // Opening reads every frame of the active segment, so part of the
        // replay after it reads from the page cache: the time that compares
        // with one read of the file from the disk is open + replay.
        const auto t0 = clock_type::now();
        strata::file_log log(dir);
        open_s += seconds_since(t0);
        u64 n = 0, sum = 0;
        for (const strata::record_view r : log.replay(0)) {
            ++n;
            sum += r.key.size() + (r.value ? r.value->size() : 0);
        }
        state.SetIterationTime(seconds_since(t0));
        check(n == records, "replay count");
        benchmark::DoNotOptimize(sum);
    }
    report(state, bytes);
    state.counters["open_s"] = open_s / static_cast<double>(state.iterations());
    fs::remove_all(dir);
}

/// The file log's byte count, to write the same amount of plain data.
u64 log_bytes() {
    const fs::path dir = bench_dir() / "file_log_size";
    const u64 b = write_log(dir);
    fs::remove_all(dir);
    return b;
}

void bench_disk_write(benchmark::State& state, bool sync_per_chunk) {
    const u64 bytes = log_bytes();
    const std::size_t chunk = sync_per_chunk ? static_cast<std::size_t>(bytes / (records / flush_every)) : io_chunk;
    const std::vector<char> buf(chunk, 'z');
    const fs::path file = bench_dir() / "disk_write.dat";
    for (auto _ : state) {
        fs::remove(file);
        const auto t0 = clock_type::now();
        const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        check(fd >= 0, "open");
        for (u64 done = 0; done < bytes;) {
            const std::size_t n = static_cast<std::size_t>(std::min<u64>(chunk, bytes - done));
            const ssize_t w = ::write(fd, buf.data(), n);
            check(w == static_cast<ssize_t>(n), "write");
            done += n;
            if (sync_per_chunk) check(::fdatasync(fd) == 0, "fdatasync");
        }
        if (!sync_per_chunk) check(::fdatasync(fd) == 0, "fdatasync");
        ::close(fd);
        state.SetIterationTime(seconds_since(t0));
    }
    report(state, bytes);
    fs::remove(file);
}

void bench_disk_read(benchmark::State& state, bool cold) {
    const u64 bytes = log_bytes();
    const fs::path file = bench_dir() / "disk_read.dat";
    {
        const std::vector<char> buf(io_chunk, 'r');
        const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        check(fd >= 0, "open");
        for (u64 done = 0; done < bytes;) {
            const std::size_t n = static_cast<std::size_t>(std::min<u64>(io_chunk, bytes - done));
            check(::write(fd, buf.data(), n) == static_cast<ssize_t>(n), "write");
            done += n;
        }
        check(::fdatasync(fd) == 0, "fdatasync");
        ::close(fd);
    }
    std::vector<char> buf(io_chunk);
    for (auto _ : state) {
        if (cold) bench::drop_page_cache(file);
        const auto t0 = clock_type::now();
        const int fd = ::open(file.c_str(), O_RDONLY);
        check(fd >= 0, "open");
        u64 total = 0;
        for (;;) {
            const ssize_t r = ::read(fd, buf.data(), buf.size());
            check(r >= 0, "read");
            if (r == 0) break;
            total += static_cast<u64>(r);
        }
        ::close(fd);
        state.SetIterationTime(seconds_since(t0));
        check(total == bytes, "read size");
    }
    report(state, bytes);
    fs::remove(file);
}

}  // namespace

BENCHMARK(bench_append_flush)->Name("file_log/op:append_flush")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_disk_write, sync_per_chunk, true)->Name("disk/op:write_sync_per_chunk")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_disk_write, sync_at_end, false)->Name("disk/op:write_sync_at_end")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_replay, cold, true)->Name("file_log/op:replay_cold")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_disk_read, cold, true)->Name("disk/op:read_cold")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_replay, warm, false)->Name("file_log/op:replay_warm")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_disk_read, warm, false)->Name("disk/op:read_warm")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
