// expect: strata: the left operand of `|` is not a state store
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <map>

int main() {
    strata::memory_log log;
    std::map<int, int> not_a_store;
    auto s = not_a_store | strata::logged(log);
    (void)s;
}
