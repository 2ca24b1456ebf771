// expect: strata: the left operand of `|` is not a state store
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <map>

int main() {
    strata::memory_log log;
    std::map<int, int> not_a_store;
    auto s = not_a_store | strata::logged(log) | strata::cached();
    // Used on after the mistake: no further error may follow.
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}
