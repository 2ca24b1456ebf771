// expect: strata: layers out of order
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

int main() {
    strata::memory_log log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::cached() | strata::logged(log);
    (void)s;
}
