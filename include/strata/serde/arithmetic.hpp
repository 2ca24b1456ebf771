#pragma once
/// @file
/// @brief Serdes for integers, `bool`, `float`, `double`, `std::byte` and
/// enumerations.
///
/// Each also offers `fixed_size` and `write_fixed(v, std::byte*)`, which the
/// logged layer uses to build a record on the stack instead of in a buffer.
///
/// Fixed width, big-endian, byte for byte what Kafka's Java serdes write
/// (ShortSerializer, IntegerSerializer, LongSerializer, FloatSerializer,
/// DoubleSerializer, BooleanSerializer), so a changelog or topic written by
/// strata reads in Java and the other way round:
///
/// | type                 | bytes | encoding                                  |
/// |----------------------|-------|-------------------------------------------|
/// | 8..64-bit integers   | 1..8  | two's complement, most significant first  |
/// | `bool`               | 1     | 0x00 or 0x01; any other byte is an error  |
/// | `float`, `double`    | 4, 8  | IEEE-754 bits, most significant first     |
/// | `std::byte`          | 1     | as is                                     |
/// | enumerations         | 1..8  | the underlying integer's encoding         |
///
/// Floating point values keep their exact bits, NaN payloads included. Java's
/// DoubleSerializer folds every NaN into 0x7ff8000000000000 before writing;
/// strata reads that (and every other NaN) back as a NaN.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>

#include <boost/endian/conversion.hpp>

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace strata {

namespace detail::serdes {

/// Writes the sizeof(U) bytes of u, most significant first, at out.
template <std::unsigned_integral U>
void store_big_endian(U u, std::byte* out) noexcept {
    boost::endian::endian_store<U, sizeof(U), boost::endian::order::big>(reinterpret_cast<unsigned char*>(out), u);
}

/// Appends the sizeof(U) bytes of u, most significant first, whatever the
/// host's byte order.
template <std::unsigned_integral U>
void write_big_endian(U u, byte_buffer& out) {
    // One byte-swap and one store of the whole word (endian_store swaps with
    // the compiler's bswap builtin, then copies the word): a store per byte
    // costs more than the rest of a logged put (the CPU retires stores in order).
    const std::size_t at = out.size();
    out.resize(at + sizeof(U));
    store_big_endian(u, out.data() + at);
}

/// Reads sizeof(U) bytes written by write_big_endian (throws if too few remain).
template <std::unsigned_integral U>
[[nodiscard]] U read_big_endian(byte_reader& in) {
    return boost::endian::endian_load<U, sizeof(U), boost::endian::order::big>(
        reinterpret_cast<const unsigned char*>(in.take(sizeof(U)).data()));
}

template <class T>
concept serde_integer = std::integral<T> && !std::same_as<T, bool> && std::is_same_v<T, std::remove_cv_t<T>>;

template <class T>
concept serde_enum = std::is_enum_v<T> && !std::same_as<T, std::byte> && std::is_same_v<T, std::remove_cv_t<T>>;

template <class T>
concept serde_floating = std::same_as<T, float> || std::same_as<T, double>;

}  // namespace detail::serdes

/// @brief Integers of every width, signed or unsigned: big-endian two's
/// complement, as Kafka's ShortSerializer, IntegerSerializer and
/// LongSerializer write them.
template <class T>
    requires detail::serdes::serde_integer<T>
struct serde<T> {
    using unsigned_type = std::make_unsigned_t<T>;
    static constexpr std::size_t min_size = sizeof(T);

    static constexpr std::size_t fixed_size = sizeof(T);

    static void write(const T& v, byte_buffer& out) {
        // Signed to unsigned conversion is modular: it yields the two's complement bits.
        detail::serdes::write_big_endian(static_cast<unsigned_type>(v), out);
    }
    static void write_fixed(const T& v, std::byte* out) noexcept {
        detail::serdes::store_big_endian(static_cast<unsigned_type>(v), out);
    }
    [[nodiscard]] static T read(byte_reader& in) {
        // Unsigned to signed conversion is modular too since C++20: no overflow.
        return static_cast<T>(detail::serdes::read_big_endian<unsigned_type>(in));
    }
};

/// @brief `bool`: one byte, 0x00 or 0x01, as Kafka's BooleanSerializer.
/// Any other byte is rejected: accepting it would make two different
/// encodings of one value, and a compacted changelog compares bytes.
template <>
struct serde<bool> {
    static constexpr std::size_t min_size = 1;

    static constexpr std::size_t fixed_size = 1;

    static void write(const bool& v, byte_buffer& out) { out.push_back(static_cast<std::byte>(v ? 1 : 0)); }
    static void write_fixed(const bool& v, std::byte* out) noexcept { *out = static_cast<std::byte>(v ? 1 : 0); }
    [[nodiscard]] static bool read(byte_reader& in) {
        const std::size_t at = in.position();
        const auto b = std::to_integer<unsigned>(in.take(1)[0]);
        if (b > 1) {
            throw serde_error(in.type_name(), at,
                              "a bool must be the byte 0x00 or 0x01, found " + std::to_string(b));
        }
        return b == 1;
    }
};

/// @brief `float` and `double`: their IEEE-754 bits, big-endian, as Kafka's
/// FloatSerializer and DoubleSerializer write them.
template <class T>
    requires detail::serdes::serde_floating<T>
struct serde<T> {
    static_assert(std::numeric_limits<T>::is_iec559,
                  "strata: float and double serdes need IEEE-754 floating point");
    using bits_type = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    static_assert(sizeof(bits_type) == sizeof(T));
    static constexpr std::size_t min_size = sizeof(T);

    static constexpr std::size_t fixed_size = sizeof(T);

    static void write(const T& v, byte_buffer& out) {
        detail::serdes::write_big_endian(std::bit_cast<bits_type>(v), out);
    }
    static void write_fixed(const T& v, std::byte* out) noexcept {
        detail::serdes::store_big_endian(std::bit_cast<bits_type>(v), out);
    }
    [[nodiscard]] static T read(byte_reader& in) {
        return std::bit_cast<T>(detail::serdes::read_big_endian<bits_type>(in));
    }
};

/// @brief `std::byte`: itself. Makes `std::vector<std::byte>` (a
/// `byte_buffer`) serializable as a length-prefixed blob.
template <>
struct serde<std::byte> {
    static constexpr std::size_t min_size = 1;

    static constexpr std::size_t fixed_size = 1;

    static void write(const std::byte& v, byte_buffer& out) { out.push_back(v); }
    static void write_fixed(const std::byte& v, std::byte* out) noexcept { *out = v; }
    [[nodiscard]] static std::byte read(byte_reader& in) { return in.take(1)[0]; }
};

/// @brief Enumerations, scoped or not: the underlying integer, so
/// `enum class side : std::int32_t` writes what Kafka's IntegerSerializer
/// writes for the same number. Every value of the underlying type reads back,
/// named or not (C++ lets an enumeration hold any of them). Renumbering an
/// enumerator changes what old changelog records mean: give enumerators
/// explicit values and never reuse one.
template <class T>
    requires detail::serdes::serde_enum<T>
struct serde<T> {
    using underlying_type = std::underlying_type_t<T>;
    static constexpr std::size_t min_size = sizeof(underlying_type);

    static constexpr std::size_t fixed_size = sizeof(underlying_type);

    static void write(const T& v, byte_buffer& out) {
        serde<underlying_type>::write(static_cast<underlying_type>(v), out);
    }
    static void write_fixed(const T& v, std::byte* out) noexcept {
        serde<underlying_type>::write_fixed(static_cast<underlying_type>(v), out);
    }
    [[nodiscard]] static T read(byte_reader& in) { return static_cast<T>(serde<underlying_type>::read(in)); }
};

}  // namespace strata
