// expect: strata::logged: no changelog codec for this store
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

int main() {
    strata::memory_log log;
    auto s = example::employee_table("employees") | strata::logged(log);
    (void)s;
}
