// expect: strata::logged: no changelog codec for this store
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log log;
    auto s = example::employee_table("employees") | strata::logged(log) | strata::cached();
    return compile_fail::use_table_stack(s);  // used on after the mistake: no further error may follow
}
