// Where the logged layer's put time goes, piece by piece.
//
//   build-bench/benchmarks/put_anatomy_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// A hash_map_store<u64, u64> of 1M keys takes puts with uniform keys (the
// node a put writes is almost never in cache). Each variant adds one piece
// of what `logged` does after the put, with no changelog at all, so the
// difference between two rows is the cost of one piece:
//   bare                   put only
//   serial                 put, and the next put's key waits for this put's
//                          value: one full cache miss per put, no overlap
//   get                    put, then get(k) (write_value reads the value back)
//   encode_resize          put, then encode(k) and encode(v) into two reused
//                          byte_buffers, as log_key does (vector::resize, then
//                          one store per byte)
//   encode_bswap_array     put, then k and v byte-swapped into fixed arrays with
//                          one 8 B store each
//   get_encode             get + encode_resize: log_key without the append
//   logged_noop_log        `store | logged(log)` with a changelog whose append
//                          does nothing
// Names: put_anatomy/variant:<v>.

#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using u64 = std::uint64_t;
using store_t = strata::hash_map_store<u64, u64>;
constexpr u64 keys = 1'000'000;
constexpr std::size_t stream_len = std::size_t{1} << 20;

struct noop_log {
    strata::offset_t end = 0;
    void append(const strata::record_view&) { ++end; }
    strata::offset_t flush() { return end; }
    strata::offset_t end_offset() const { return end; }
    std::vector<strata::record_view> replay(strata::offset_t) const { return {}; }
};

struct bare {
    store_t s{"s"};
    void put(u64 k, u64 v) { s.put(k, v); }
};
struct serial {
    store_t s{"s"};
    u64 prev = 0;
    u64 zero = 0;  // set at run time, so the dependency stays
    void put(u64 k, u64 v) {
        s.put(k + (prev & zero), v);
        prev = *s.get(k);
    }
};
struct get {
    store_t s{"s"};
    u64 sink = 0;
    void put(u64 k, u64 v) {
        s.put(k, v);
        sink += *s.get(k);
    }
};
struct encode_resize {
    store_t s{"s"};
    strata::byte_buffer kb, vb;
    void put(u64 k, u64 v) {
        s.put(k, v);
        kb.clear();
        vb.clear();
        strata::encode(k, kb);
        strata::encode(v, vb);
        benchmark::DoNotOptimize(kb.data());
        benchmark::DoNotOptimize(vb.data());
    }
};
struct encode_bswap_array {
    store_t s{"s"};
    std::array<std::byte, 8> kb{}, vb{};
    void put(u64 k, u64 v) {
        s.put(k, v);
        const u64 a = __builtin_bswap64(k), b = __builtin_bswap64(v);
        std::memcpy(kb.data(), &a, 8);
        std::memcpy(vb.data(), &b, 8);
        benchmark::DoNotOptimize(kb.data());
        benchmark::DoNotOptimize(vb.data());
    }
};
struct get_encode {
    store_t s{"s"};
    strata::byte_buffer kb, vb;
    void put(u64 k, u64 v) {
        s.put(k, v);
        kb.clear();
        vb.clear();
        strata::encode(k, kb);
        if (const auto x = s.get(k)) strata::encode(*x, vb);
        benchmark::DoNotOptimize(kb.data());
        benchmark::DoNotOptimize(vb.data());
    }
};
struct logged_noop_log {
    noop_log log;
    decltype(store_t("s") | strata::logged(log)) s = store_t("s") | strata::logged(log);
    void put(u64 k, u64 v) { s.put(k, v); }
};

template <class V>
void bench(benchmark::State& state) {
    V v;
    for (u64 k = 0; k < keys; ++k) v.put(k, k);
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<u64> d(0, keys - 1);
    std::vector<u64> ks(stream_len);
    for (auto& k : ks) k = d(rng);
    std::size_t i = 0;
    u64 n = 0;
    for (auto _ : state) {
        v.put(ks[i], n++);
        i = (i + 1) & (stream_len - 1);
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(bench<bare>)->Name("put_anatomy/variant:bare");
BENCHMARK(bench<serial>)->Name("put_anatomy/variant:serial");
BENCHMARK(bench<get>)->Name("put_anatomy/variant:get");
BENCHMARK(bench<encode_resize>)->Name("put_anatomy/variant:encode_resize");
BENCHMARK(bench<encode_bswap_array>)->Name("put_anatomy/variant:encode_bswap_array");
BENCHMARK(bench<get_encode>)->Name("put_anatomy/variant:get_encode");
BENCHMARK(bench<logged_noop_log>)->Name("put_anatomy/variant:logged_noop_log");

BENCHMARK_MAIN();
