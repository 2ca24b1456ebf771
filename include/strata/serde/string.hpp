#pragma once
/// @file
/// @brief The serde for `std::string` nested inside another value.
///
/// The rule for strings:
/// - A string that is a whole record key or value (`strata::encode` /
///   `strata::decode` of a `std::string`, see encode.hpp) is its raw bytes and
///   nothing else, exactly what Kafka's StringSerializer writes.
/// - A string inside anything else (a struct field, a vector element, an
///   optional) is `serde<std::string>`: a u32 big-endian byte count, then the
///   bytes, because the reader must know where it ends.
///
/// Bytes are copied as they are. Like Kafka's StringSerializer, strata does
/// not check that they are valid UTF-8: a `std::string` holds bytes, and
/// whatever was written reads back unchanged.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/length_prefix.hpp>

#include <cstddef>
#include <string>

namespace strata {

/// @brief `std::string` nested in a composite: u32 big-endian length, then
/// the bytes. (A top-level string is raw bytes; see encode.hpp.)
template <>
struct serde<std::string> {
    static constexpr std::size_t min_size = detail::serdes::length_prefix_size;

    static void write(const std::string& v, byte_buffer& out) {
        detail::serdes::write_length(v.size(), out, "a std::string");
        append_bytes(out, as_bytes(v));
    }
    [[nodiscard]] static std::string read(byte_reader& in) {
        // Checked against the remaining bytes before the string is allocated.
        const std::size_t n = detail::serdes::read_length(in, 1, "string length");
        return std::string(as_chars(in.take(n)));
    }
};

}  // namespace strata
