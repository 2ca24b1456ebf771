// expect: strata::layer<T>(store): this store stack has no such layer
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

int main() {
    strata::memory_log log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(log);
    auto& c = strata::layer<strata::cached_store>(s);
    // Used on after the mistake: no further error may follow.
    const auto hits = c.stats();
    c.flush();
    (void)hits;
}
