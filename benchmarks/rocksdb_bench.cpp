// The RocksDB store against RocksDB used directly, and what the logged layer
// adds to it.
//
//   build-bench/benchmarks/rocksdb_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Workload: a database filled with keys [0, keys) (u64, keys from
// STRATA_BENCH_ROCKSDB_KEYS, default 1000000) and 100-byte string values,
// then puts or gets over a pre-drawn stream of 2^20 keys, uniform over
// [0, keys). Every 10'000 operations a commit: the store's flush (its batch
// to the database, one write), or for raw RocksDB the equivalent. Timing
// per iteration of 100 operations; counters ns_per_op, p50_ns, p99_ns.
//
// Writes do not fsync in any variant (sync_on_flush = false, WriteOptions
// sync = false): an fsync per commit costs the same in each and would
// measure the disk. The variants:
//
//   raw_put          DB::Put per operation (each a write to the WAL and memtable)
//   raw_batch        a rocksdb::WriteBatch per commit, DB::Write at the commit
//   raw_batch_index  a WriteBatchWithIndex per commit (what lets reads see
//                    unflushed writes), DB::Write at the commit: the ceiling
//                    of a store whose reads see its own writes
//   strata_bare      rocksdb_store<u64, string>, flush at the commit
//   strata_logged    rocksdb_store | logged(log), log = a changelog that only
//                    copies each record's bytes (as in store_ops_bench)
//   strata_full      rocksdb_store | logged(log) | cached() | metered(registry)
//
// Gets read committed data (raw: DB::Get; strata: GetFromBatchAndDB over an
// empty batch, its cost included).

#include <strata/decorators/all.hpp>
#include <strata/stores/rocksdb_store.hpp>

#include <rocksdb/utilities/write_batch_with_index.h>

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;
using kv = strata::rocksdb_store<u64, std::string>;
constexpr u64 commit_every = 10'000;
constexpr std::size_t stream_len = std::size_t{1} << 20;
constexpr int batch = 100;
using clock_type = std::chrono::steady_clock;

using bench::value_of;

strata::rocksdb_options bench_options() {
    strata::rocksdb_options o;
    o.sync_on_flush = false;
    return o;
}

/// A fresh directory for one benchmark's database.
std::filesystem::path fresh_dir(const std::string& name) {
    const auto d = bench::bench_dir() / ("rocksdb-" + name);
    std::filesystem::remove_all(d);
    return d;
}

/// RocksDB used directly, with the same options the store sets.
struct raw_db {
    std::unique_ptr<rocksdb::DB> db;
    enum class mode { put, batch, batch_index } m;
    rocksdb::WriteBatch wb;
    rocksdb::WriteBatchWithIndex wbi{rocksdb::BytewiseComparator(), 0, true};
    std::string key;

    raw_db(const std::filesystem::path& dir, mode how) : m(how) {
        const strata::rocksdb_options so = bench_options();
        rocksdb::Options o;
        o.create_if_missing = true;
        o.write_buffer_size = so.write_buffer_bytes;
        o.max_write_buffer_number = so.max_write_buffers;
        o.compression = so.compression;
        rocksdb::BlockBasedTableOptions t;
        t.block_cache = rocksdb::NewLRUCache(so.block_cache_bytes);
        t.cache_index_and_filter_blocks = true;
        o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
        std::filesystem::create_directories(dir);
        rocksdb::DB* p = nullptr;
        bench::check(rocksdb::DB::Open(o, dir.string(), &p).ok(), "rocksdb open");
        db.reset(p);
    }
    /// The key as the store writes it: big-endian, so both order alike.
    const std::string& encode(u64 k) {
        key.resize(8);
        for (int i = 7; i >= 0; --i, k >>= 8) key[static_cast<std::size_t>(i)] = static_cast<char>(k & 0xff);
        return key;
    }
    void put(u64 k, const std::string& v) {
        switch (m) {
            case mode::put: bench::check(db->Put(rocksdb::WriteOptions(), encode(k), v).ok(), "put"); break;
            case mode::batch: wb.Put(encode(k), v); break;
            case mode::batch_index: wbi.Put(encode(k), v); break;
        }
    }
    void flush() {
        if (m == mode::batch) {
            bench::check(db->Write(rocksdb::WriteOptions(), &wb).ok(), "write");
            wb.Clear();
        } else if (m == mode::batch_index) {
            bench::check(db->Write(rocksdb::WriteOptions(), wbi.GetWriteBatch()).ok(), "write");
            wbi.Clear();
        }
    }
    std::string get(u64 k) {
        std::string v;
        (void)db->Get(rocksdb::ReadOptions(), encode(k), &v);
        return v;
    }
};

using bench::percentiles;

template <class Make, class Op>
void bench_ops(benchmark::State& state, Make make, u64 keys, Op op) {
    bench::discarding_log log;
    strata::metrics::registry reg;
    auto store = make(log, reg);
    for (u64 k = 0; k < keys; ++k) {
        store.put(k, value_of(k));
        if ((k + 1) % commit_every == 0) store.flush();
    }
    store.flush();
    const auto ks = bench::key_stream(keys, false, stream_len, 42);
    std::size_t i = 0;
    u64 n = 0;
    double total_ns = 0;
    percentiles p;
    p.samples.reserve(1 << 16);
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        for (int j = 0; j < batch; ++j) {
            op(store, ks[i], n);
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

void register_all(u64 keys) {
    const std::string suffix = "/keys:" + std::to_string(keys);
    auto reg = [&](const std::string& name, auto make) {
        benchmark::RegisterBenchmark(("rocksdb/op:put/store:" + name + suffix).c_str(), [=](benchmark::State& s) {
            bench_ops(s, make, keys, [](auto& store, u64 k, u64 n) { store.put(k, value_of(n)); });
        })->UseRealTime();
        benchmark::RegisterBenchmark(("rocksdb/op:get/store:" + name + suffix).c_str(), [=](benchmark::State& s) {
            bench_ops(s, make, keys, [](auto& store, u64 k, u64) { benchmark::DoNotOptimize(store.get(k)); });
        })->UseRealTime();
    };
    reg("raw_put", [](auto&, auto&) { return raw_db(fresh_dir("raw_put"), raw_db::mode::put); });
    reg("raw_batch", [](auto&, auto&) { return raw_db(fresh_dir("raw_batch"), raw_db::mode::batch); });
    reg("raw_batch_index", [](auto&, auto&) { return raw_db(fresh_dir("raw_batch_index"), raw_db::mode::batch_index); });
    reg("strata_bare", [](auto&, auto&) { return kv("s", fresh_dir("strata_bare"), bench_options()); });
    reg("strata_logged",
        [](auto& log, auto&) { return kv("s", fresh_dir("strata_logged"), bench_options()) | strata::logged(log); });
    reg("strata_full", [](auto& log, auto& r) {
        return kv("s", fresh_dir("strata_full"), bench_options()) | strata::logged(log) | strata::cached() |
               strata::metered(r);
    });
}

}  // namespace

int main(int argc, char** argv) {
    const char* env = std::getenv("STRATA_BENCH_ROCKSDB_KEYS");
    register_all(env && *env ? std::strtoull(env, nullptr, 10) : 1'000'000);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
