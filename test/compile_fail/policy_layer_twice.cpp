// expect: strata: this layer is already in the store stack
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/hash_map_store.hpp>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log log;
    strata::metrics::registry r;
    auto policy = strata::cached() | strata::metered(r);
    auto s = strata::hash_map_store<int, int>("s") | strata::logged(log) | strata::cached() | policy;
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
