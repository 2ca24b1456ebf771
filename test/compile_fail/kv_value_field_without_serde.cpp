// expect: strata: a field of a BOOST_HANA_DEFINE_STRUCT type has no serde
// expect: Struct = {anonymous}::position
// expect: {"venue"}
// expect: FieldType = {anonymous}::venue_handle
// A kv store whose value is a Hana struct with a field that has no serde:
// one error naming that field, not advice to define the struct with
// BOOST_HANA_DEFINE_STRUCT (it is one), and nothing more as the stack is used.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>

namespace {
struct venue_handle {
    void* socket = nullptr;
};
struct position {
    BOOST_HANA_DEFINE_STRUCT(position, (std::int64_t, quantity), (venue_handle, venue));
};
}  // namespace

int main() {
    strata::memory_log log;
    auto s = strata::hash_map_store<int, position>("positions") | strata::logged(log) | strata::cached();
    s.put(1, position{5, {}});
    if (auto p = s.get(1); p && p->quantity == 5) s.erase(1);
    s.flush();
    s.restore();
}
