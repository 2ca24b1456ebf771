// expect: strata::cached: over a store that is not key-value
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

int main() {
    auto s = example::employee_table("employees") | strata::cached();
    (void)s;
}
