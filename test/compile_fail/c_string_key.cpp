// expect: strata: no serde for C strings and char arrays: pass a std::string
// A string literal as a key: one error that says to pass a std::string.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/encode.hpp>

int main() {
    const strata::byte_buffer key = strata::encode("alice");
    return static_cast<int>(key.size());
}
