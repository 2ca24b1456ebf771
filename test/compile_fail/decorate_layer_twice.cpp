// expect: strata::decorate: a layer is given twice
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

int main() {
    auto s = strata::decorate(strata::hash_map_store<int, int>("s"), strata::cached(), strata::cached());
    // Used on after the mistake: no further error may follow.
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}
