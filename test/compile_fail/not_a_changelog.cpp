// expect: strata::logged: the argument is not a changelog
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <vector>

int main() {
    std::vector<int> not_a_log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(not_a_log);
    // Used on after the mistake: no further error may follow.
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}
