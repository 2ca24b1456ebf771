// expect: strata: a field of a BOOST_HANA_DEFINE_STRUCT type has no serde
// expect: Struct = {anonymous}::order
// expect: {"note"}
// expect: FieldType = {anonymous}::opaque
// A struct whose one field has no serde: the error names the struct, the
// field and the field's type, and encode and decode add nothing to it.
#include <strata/serde/encode.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <string>

namespace {
struct opaque {
    int handle = 0;
};
struct order {
    BOOST_HANA_DEFINE_STRUCT(order, (std::int64_t, id), (std::string, item), (opaque, note));
};
}  // namespace

int main() {
    const strata::byte_buffer bytes = strata::encode(order{1, "tea", {}});
    const auto back = strata::decode<order>(bytes);
    return static_cast<int>(back.id);
}
