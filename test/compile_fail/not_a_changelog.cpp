// expect: strata::logged: the argument is not a changelog
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <vector>

int main() {
    std::vector<int> not_a_log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(not_a_log);
    (void)s;
}
