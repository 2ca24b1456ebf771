// expect: strata::decorate: a layer is given twice
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

int main() {
    auto s = strata::decorate(strata::hash_map_store<int, int>("s"), strata::cached(), strata::cached());
    (void)s;
}
