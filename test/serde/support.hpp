#pragma once
// Helpers shared by the serde tests: byte literals and the round-trip and
// truncation checks every type gets.

#include <strata/serde/all.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace strata::test {

/// A byte buffer from small integer literals: bytes({0x00, 0xff}).
inline byte_buffer bytes(std::initializer_list<unsigned> values) {
    byte_buffer out;
    for (unsigned v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}

/// Writes v with serde<T> (the nested format) into a fresh buffer.
template <class T>
byte_buffer write_nested(const T& v) {
    byte_buffer out;
    serde<T>::write(v, out);
    return out;
}

/// encode/decode gives v back, and so does serde<T> when more bytes follow,
/// reading exactly the bytes it wrote.
template <class T>
void check_round_trip(const T& v) {
    CHECK(decode<T>(encode(v)) == v);

    byte_buffer buf = write_nested(v);
    const std::size_t size = buf.size();
    buf.push_back(std::byte{0xAB});  // a neighbour the reader must not touch
    byte_reader in(buf, type_name<T>());
    CHECK(serde<T>::read(in) == v);
    CHECK(in.position() == size);
}

/// Every proper prefix of a valid encoding is rejected with serde_error.
template <class T>
void check_every_truncation_throws(const byte_buffer& full) {
    for (std::size_t n = 0; n < full.size(); ++n) {
        INFO("prefix of " << n << " of " << full.size() << " bytes");
        CHECK_THROWS_AS(decode<T>(bytes_view(full).first(n)), serde_error);
    }
}

/// The message of the serde_error that decoding bytes as T throws.
template <class T>
std::string decode_error(const byte_buffer& b) {
    try {
        static_cast<void>(decode<T>(b));
    } catch (const serde_error& e) {
        return e.what();
    }
    FAIL("decoding did not throw serde_error");
    return {};
}

}  // namespace strata::test
