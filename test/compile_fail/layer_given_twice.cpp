// expect: strata: this layer is already in the store stack
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

int main() {
    strata::memory_log a, b;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(a) | strata::logged(b);
    (void)s;
}
