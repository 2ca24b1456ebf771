// expect: strata::cached: over a store that is not key-value
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

#include "use_after_mistake.hpp"

int main() {
    auto s = example::employee_table("employees") | strata::cached();
    return compile_fail::use_table_stack(s);  // used on after the mistake: no further error may follow
}
