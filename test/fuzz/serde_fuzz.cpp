// Fuzz target: every serde strata ships, through strata::decode<T>.
//
// Input: one byte that picks the type (modulo the number of types below),
// then the bytes decoded as a whole record key or value of that type.
//
// Expected: a value, or strata::serde_error. A value must encode back to
// exactly the bytes it came from (every serde has one encoding per value:
// bools, presence bytes and lengths are checked, floats keep their bits).
// Anything else is a finding: a crash, UB, another exception, bytes that
// decode but do not re-encode to themselves, or an allocation over the bound
// of fuzz_support.hpp.

#include "fuzz_support.hpp"
#include "serde_types.hpp"

#include <strata/core/error.hpp>
#include <strata/serde/all.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace {

template <class T>
void decode_as(strata::bytes_view b) {
    T v;
    try {
        v = strata::decode<T>(b);
    } catch (const strata::serde_error&) {
        return;
    }
    const strata::byte_buffer again = strata::encode(v);
    strata_fuzz::expect(again.size() == b.size() && std::equal(again.begin(), again.end(), b.begin()),
                        "a decoded value does not encode back to its bytes: " +
                            std::string(strata::type_name<T>()));
}

template <std::size_t... I>
void dispatch(std::size_t which, strata::bytes_view b, std::index_sequence<I...>) {
    ((which == I ? decode_as<std::tuple_element_t<I, strata_fuzz::serde_types>>(b) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // No fixed buffers here: 64 KiB besides 64 bytes per input byte (a
    // std::optional<std::string> element takes 1 input byte and 40 of memory).
    strata_fuzz::allocation_watch watch(size, {64, std::size_t{64} << 10});
    strata_fuzz::input in(data, size);
    constexpr std::size_t count = std::tuple_size_v<strata_fuzz::serde_types>;
    const std::size_t which = in.u8() % count;
    dispatch(which, in.rest(), std::make_index_sequence<count>{});
    return 0;
}
