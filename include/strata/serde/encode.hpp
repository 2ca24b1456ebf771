#pragma once
/// @file
/// @brief `strata::encode` and `strata::decode`: a value as a whole record
/// key or value.
///
/// The one rule that differs from `serde<T>`:
/// - At the top level (the value IS the whole key or value of a record), a
///   `std::string` is its raw bytes and a `byte_buffer` is its raw bytes, with
///   no length prefix: exactly what Kafka's StringSerializer and
///   ByteArraySerializer write, since the record itself says how long it is.
/// - Everywhere else, and for every other type at the top level, the format
///   is `serde<T>`, which is self-delimiting: nested strings and byte buffers
///   carry a u32 big-endian length.
///
/// So `encode(std::string("abc"))` is `61 62 63`, while a struct with one
/// string field "abc" encodes as `00 00 00 03 61 62 63`.
///
/// `decode<T>` insists on consuming every byte: leftover bytes mean the
/// record was not written as a T, and it throws rather than guess.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/arithmetic.hpp>
#include <strata/serde/hana_struct.hpp>
#include <strata/serde/optional.hpp>
#include <strata/serde/string.hpp>
#include <strata/serde/type_name.hpp>
#include <strata/serde/vector.hpp>

#include <string>
#include <type_traits>

namespace strata {

namespace detail::serdes {

/// char arrays and char pointers: string literals, which deserve their own hint.
template <class T>
inline constexpr bool is_c_string =
    (std::is_array_v<T> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<T>>, char>) ||
    std::is_same_v<std::remove_cv_t<T>, char*> || std::is_same_v<std::remove_cv_t<T>, const char*>;

/// The single place a missing serde is reported. Being one function template,
/// it is instantiated once per T, so a caller sees one diagnostic however
/// many of encode/decode mention T.
template <class T>
constexpr bool require_serde() {
    if constexpr (is_c_string<T>) {
        // A string literal is the likeliest way to get here; say so directly.
        static_assert(sizeof(T) == 0,
                      "strata: no serde for C strings and char arrays: pass a std::string "
                      "(e.g. encode(std::string(\"abc\")))");
        return false;
    } else if constexpr (hana_struct<T> && !serializable<T>) {
        return check_hana_fields<T>();  // names the field that has no serde
    } else {
        static_assert(serializable<T>,
                      "strata: no serde for this type: specialize strata::serde<T> (static "
                      "write(const T&, byte_buffer&) and static T read(byte_reader&)) or define it "
                      "with BOOST_HANA_DEFINE_STRUCT; for a struct, vector or optional every field or "
                      "element type needs a serde too");
        return serializable<T>;
    }
}

}  // namespace detail::serdes

namespace detail {
/// T's encoding as a whole record key or value is its own bytes.
template <class T>
concept raw_encoding = std::is_same_v<T, std::string> || std::is_same_v<T, byte_buffer>;

/// The encoding of a raw_encoding value: a view of its own bytes.
template <raw_encoding T>
[[nodiscard]] bytes_view raw_bytes_of(const T& v) noexcept {
    if constexpr (std::is_same_v<T, std::string>) return as_bytes(v);
    else return bytes_view(v);
}
}  // namespace detail

/// @brief Appends v's bytes as a whole record key or value to out.
///
/// Appending lets a caller build a record in a buffer it reuses.
/// @tparam T any type with a serde; a top-level `std::string` or
/// `byte_buffer` is written raw (see the file comment)
/// @param v the value
/// @param out the buffer to append to
template <class T>
void encode(const T& v, byte_buffer& out) {
    if constexpr (detail::serdes::require_serde<T>()) {
        if constexpr (detail::raw_encoding<T>) append_bytes(out, detail::raw_bytes_of(v));
        else serde<T>::write(v, out);
    }
}

/// @brief v's bytes as a whole record key or value.
/// @returns a new buffer holding exactly v's encoding
template <class T>
[[nodiscard]] byte_buffer encode(const T& v) {
    byte_buffer out;
    if constexpr (detail::serdes::require_serde<T>()) encode(v, out);
    return out;
}

/// @brief Decodes a whole record key or value written by `encode`.
///
/// @tparam T the type that was encoded
/// @param bytes exactly the bytes of one T
/// @returns the value
/// @throws serde_error naming T and the byte offset, when the bytes end too
/// soon, hold an impossible value (a bool byte of 7, a length past the end)
/// or have bytes left over after a complete T
template <class T>
[[nodiscard]] T decode(bytes_view bytes) {
    if constexpr (detail::serdes::require_serde<T>()) {
        if constexpr (std::is_same_v<T, std::string>) {
            return std::string(as_chars(bytes));
        } else if constexpr (std::is_same_v<T, byte_buffer>) {
            return byte_buffer(bytes.begin(), bytes.end());
        } else {
            byte_reader in(bytes, type_name<T>());
            T v = serde<T>::read(in);
            in.expect_end();
            return v;
        }
    } else {
        // Never compiled into a program: require_serde<T> has already failed
        // the build. Throwing (rather than returning something) keeps this
        // branch from adding a second diagnostic.
        throw usage_error("strata: no serde for this type");
    }
}

}  // namespace strata
