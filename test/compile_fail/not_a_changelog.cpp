// expect: strata::logged: the argument is not a changelog
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <vector>

#include "use_after_mistake.hpp"

int main() {
    std::vector<int> not_a_log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(not_a_log);
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
