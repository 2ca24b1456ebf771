// expect: strata: this layer is already in the store stack
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/hash_map_store.hpp>

int main() {
    strata::memory_log log;
    strata::metrics::registry r;
    auto policy = strata::cached() | strata::metered(r);
    auto s = strata::hash_map_store<int, int>("s") | strata::logged(log) | strata::cached() | policy;
    // Used on after the mistake: no further error may follow.
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}
