// expect: strata: the left operand of `|` is not a state store
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <map>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log log;
    std::map<int, int> not_a_store;
    auto s = not_a_store | strata::logged(log) | strata::cached();
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
