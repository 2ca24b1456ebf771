// Cost of strata's serdes and of the kv changelog codec.
//
//   build-bench/benchmarks/serde_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// encode: `strata::encode(v, buf)` into a buffer cleared and reused between
// calls (the way the logged layer calls it). decode: `strata::decode<T>`
// from the bytes of one encoded value. Types: u64; a std::string of 100 B
// (raw bytes at the top level); a Hana struct of 4 fields (u64, i32, double,
// a 12 B string); a std::vector<u64> of 16 elements.
// kv_codec: write_key and write_value (which reads the key's value from the
// store: a lookup) into reused buffers, and restore (decode key and value,
// put into the store) of a record, for u64 -> u64 and u64 -> 100 B string,
// over a hash_map_store of 4096 keys (in cache: the codec's cost, not the
// map's misses).

#include <strata/codec/kv_codec.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <benchmark/benchmark.h>
#include <boost/hana.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;

struct order {
    BOOST_HANA_DEFINE_STRUCT(order, (std::uint64_t, id), (std::int32_t, quantity), (double, price),
                             (std::string, symbol));
};

template <class T>
T sample();
template <>
u64 sample<u64>() { return 0x0123456789abcdefULL; }
template <>
std::string sample<std::string>() { return std::string(100, 'x'); }
template <>
order sample<order>() { return order{42, 7, 101.25, "STRATA-ORDER"}; }
template <>
std::vector<u64> sample<std::vector<u64>>() {
    std::vector<u64> v(16);
    for (u64 i = 0; i < 16; ++i) v[i] = i * 0x9e3779b97f4a7c15ULL;
    return v;
}

template <class T>
void bench_encode(benchmark::State& state) {
    const T v = sample<T>();
    strata::byte_buffer buf;
    for (auto _ : state) {
        buf.clear();
        strata::encode(v, buf);
        benchmark::DoNotOptimize(buf.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
    state.counters["encoded_bytes"] = static_cast<double>(buf.size());
}

template <class T>
void bench_decode(benchmark::State& state) {
    const strata::byte_buffer bytes = strata::encode(sample<T>());
    for (auto _ : state) {
        T v = strata::decode<T>(bytes);
        benchmark::DoNotOptimize(v);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}

constexpr u64 store_keys = 4096;

template <class V>
V value_for(u64 k) {
    if constexpr (std::is_same_v<V, u64>) return k;
    else return std::string(100, static_cast<char>('a' + k % 26));
}

template <class V>
strata::hash_map_store<u64, V> filled_store() {
    strata::hash_map_store<u64, V> s("s");
    for (u64 k = 0; k < store_keys; ++k) s.put(k, value_for<V>(k));
    return s;
}

template <class V>
void bench_write_key(benchmark::State& state) {
    const strata::kv_codec<u64, V> codec;
    strata::byte_buffer buf;
    u64 k = 0;
    for (auto _ : state) {
        buf.clear();
        codec.write_key(k, buf);
        k = (k + 1) & (store_keys - 1);
        benchmark::DoNotOptimize(buf.data());
    }
    state.SetItemsProcessed(state.iterations());
}

template <class V>
void bench_write_value(benchmark::State& state) {
    const strata::kv_codec<u64, V> codec;
    const auto store = filled_store<V>();
    strata::byte_buffer buf;
    u64 k = 0;
    for (auto _ : state) {
        buf.clear();
        benchmark::DoNotOptimize(codec.write_value(store, k, buf));
        k = (k + 1) & (store_keys - 1);
        benchmark::DoNotOptimize(buf.data());
    }
    state.SetItemsProcessed(state.iterations());
}

template <class V>
void bench_restore(benchmark::State& state) {
    const strata::kv_codec<u64, V> codec;
    auto store = filled_store<V>();
    // Pre-encoded records for every key, so the loop times restore() alone.
    std::vector<strata::byte_buffer> keys, vals;
    for (u64 k = 0; k < store_keys; ++k) {
        keys.push_back(strata::encode(k));
        vals.push_back(strata::encode(value_for<V>(k + 1)));
    }
    u64 k = 0;
    for (auto _ : state) {
        codec.restore(store, strata::record_view{keys[k], strata::bytes_view(vals[k])});
        k = (k + 1) & (store_keys - 1);
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(bench_encode<u64>)->Name("serde/op:encode/type:u64");
BENCHMARK(bench_decode<u64>)->Name("serde/op:decode/type:u64");
BENCHMARK(bench_encode<std::string>)->Name("serde/op:encode/type:string100");
BENCHMARK(bench_decode<std::string>)->Name("serde/op:decode/type:string100");
BENCHMARK(bench_encode<order>)->Name("serde/op:encode/type:hana_struct4");
BENCHMARK(bench_decode<order>)->Name("serde/op:decode/type:hana_struct4");
BENCHMARK(bench_encode<std::vector<u64>>)->Name("serde/op:encode/type:vector_u64_16");
BENCHMARK(bench_decode<std::vector<u64>>)->Name("serde/op:decode/type:vector_u64_16");

BENCHMARK(bench_write_key<u64>)->Name("kv_codec/op:write_key/value:8");
BENCHMARK(bench_write_value<u64>)->Name("kv_codec/op:write_value/value:8");
BENCHMARK(bench_restore<u64>)->Name("kv_codec/op:restore/value:8");
BENCHMARK(bench_write_value<std::string>)->Name("kv_codec/op:write_value/value:100");
BENCHMARK(bench_restore<std::string>)->Name("kv_codec/op:restore/value:100");

BENCHMARK_MAIN();
