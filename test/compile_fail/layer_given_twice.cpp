// expect: strata: this layer is already in the store stack
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log a, b;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(a) | strata::logged(b) | strata::cached();
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
