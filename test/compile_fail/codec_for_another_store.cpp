// expect: strata::logged: the codec is missing write_value(const Store&, const key_type&, byte_buffer&) const -> bool for this store type
// expect: example::table_codec
// A kv store logged through the relational table's codec: one error, which
// names the member that does not fit, not four.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <relational_table.hpp>

#include "use_after_mistake.hpp"

int main() {
    strata::memory_log log;
    auto s = strata::ordered_map_store<int, int>("s") | strata::logged(log, example::table_codec{}) | strata::cached();
    compile_fail::use_kv_stack(s);  // used on after the mistake: no further error may follow
}
