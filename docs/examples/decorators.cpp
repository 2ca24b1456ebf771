// Composing decorators: pipes, direct calls, reusable policies, decorate()
// in any order; reaching through a stack with base(), innermost(), layer<T>
// and query(); and what the cache saves: N updates to one key between two
// flushes cost one changelog record.
//
// Usage: decorators [--quick]   (--quick is accepted; the example is small anyway)

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <cstdint>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

using scores = strata::ordered_map_store<std::int64_t, std::string>;

}  // namespace

int main(int argc, char** argv) try {
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) != "--quick") throw std::invalid_argument("usage: decorators [--quick]");

    strata::metrics::registry registry;
    strata::memory_log log_a, log_b, log_c, log_d;

    // [pipe]
    auto a = scores("a") | strata::logged(log_a) | strata::cached() | strata::metered(registry);
    // [pipe]

    // [direct]
    auto b = strata::metered(strata::cached(strata::logged(scores("b"), log_b)), registry);
    // [direct]

    // [policy]
    // A policy is a closure made of closures: define it once, apply it to many stores.
    const auto policy = strata::cached({.max_bytes = 1 << 20}) | strata::metered(registry);
    auto c = scores("c") | strata::logged(log_c) | policy;
    // [policy]

    // [decorate]
    // Any order in, the one valid order out: logged, cached, metered.
    auto d = strata::decorate(scores("d"), strata::metered(registry), strata::logged(log_d), strata::cached());
    static_assert(std::is_same_v<decltype(d), decltype(a)>);
    // [decorate]
    static_assert(std::is_same_v<decltype(b), decltype(a)> && std::is_same_v<decltype(c), decltype(a)>,
                  "every way of building the stack gives the same type");

    // [types]
    using stack = decltype(a);
    static_assert(stack::kind == strata::layer_kind::metered);
    static_assert(std::is_same_v<stack::inner_type::inner_type::inner_type, scores>);
    static_assert(strata::kv_store<stack> && strata::ordered_kv_store<stack>);  // decorators forward the kv interface
    static_assert(strata::has_layer_v<stack, strata::layer_kind::cached>);
    // [types]

    for (std::int64_t k = 0; k < 30; ++k) {
        a.put(k, "player-" + std::to_string(k));
        b.put(k, "player-" + std::to_string(k));
        c.put(k, "player-" + std::to_string(k));
        d.put(k, "player-" + std::to_string(k));
    }

    // [coalesce]
    // 1000 updates to one hot key between two flushes...
    for (int i = 0; i < 1000; ++i) a.put(7, "score " + std::to_string(i));
    a.flush();
    // ...cost one record for that key (plus one for each of the 30 keys put before).
    const strata::cache_stats stats = strata::layer<strata::cached_store>(a).stats();
    // [coalesce]
    check(log_a.append_count() == 30, "30 keys, 30 records, however many updates");
    check(stats.flushed_records == 30, "the cache flushed one record per dirty key");
    std::cout << "store a: 1030 puts, " << log_a.append_count() << " records; cache: " << stats.entries
              << " entries, " << stats.hits << " hits, " << stats.misses << " misses\n";

    // [no-cache]
    strata::memory_log uncached_log;
    auto uncached = scores("uncached") | strata::logged(uncached_log);
    for (int i = 0; i < 1000; ++i) uncached.put(7, "score " + std::to_string(i));
    uncached.flush();  // uncached_log.append_count() == 1000: a record per update
    // [no-cache]
    check(uncached_log.append_count() == 1000, "without the cache every update is a record");

    // [base]
    auto& cache = a.base();           // metered -> cached
    auto& logger = cache.base();      // cached -> logged
    const scores& bottom = strata::innermost(a);
    std::cout << "dirty keys: " << cache.dirty_count() << ", records written: " << logger.records_written()
              << ", entries: " << bottom.size() << "\n";
    // [base]
    check(cache.dirty_count() == 0 && logger.records_written() == 30 && bottom.size() == 30, "base() reaches each layer");

    // [layer]
    // By type: the user's store, or a full decorator type.
    check(strata::layer<scores>(a).size() == 30, "layer<scores>");
    // By template: the first layer from the outside that instantiates it.
    auto& logged_layer = strata::layer<strata::logged_store>(a);
    check(logged_layer.changelog().end_offset() == 30, "layer<logged_store>");
    // [layer]

    // [query]
    // Read-only access to the store's own interface; sees every update applied so far.
    const auto top_ten = a.query([](const scores& s) {
        const auto r = s.range(0, 9);
        return std::distance(r.begin(), r.end());
    });
    // [query]
    check(top_ten == 10, "query sees the inner store");
    check(strata::query(a, [](const scores& s) { return *s.get(7); }) == "score 999", "the free query()");

    // Each stack behaves as the bare store would.
    check(b.get(3) == c.get(3) && c.get(3) == d.get(3) && d.get(3) == "player-3", "equal stacks, equal answers");

    std::cout << (failures == 0 ? "decorators: all checks passed\n" : "decorators: CHECKS FAILED\n");
    return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "decorators: " << e.what() << "\n";
    return 2;
}
