// expect: strata: layers out of order
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::cached() | strata::logged(log);
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
