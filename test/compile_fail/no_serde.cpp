// expect: strata: no serde for this type
// Encoding a type that has no serde must stop the build with one
// static_assert that says how to give the type a serde.

#include <strata/serde/encode.hpp>

namespace {
struct no_serde_here {
    int value = 0;
};
}  // namespace

int main() {
    const strata::byte_buffer bytes = strata::encode(no_serde_here{42});
    const auto back = strata::decode<no_serde_here>(bytes);
    return back.value;
}
