// expect: strata::decorate: a layer is given twice
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include "use_after_mistake.hpp"

int main() {
    auto s = strata::decorate(strata::hash_map_store<int, int>("s"), strata::cached(), strata::cached());
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
