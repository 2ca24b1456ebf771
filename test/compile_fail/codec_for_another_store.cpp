// expect: strata::logged: the codec is missing write_value(const Store&, const key_type&, byte_buffer&) const -> bool for this store type
// expect: example::table_codec
// A kv store logged through the relational table's codec: one error, which
// names the member that does not fit, not four.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <relational_table.hpp>

int main() {
    strata::memory_log log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(log, example::table_codec{}) | strata::cached();
    // Used on after the mistake: no further error may follow.
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}
