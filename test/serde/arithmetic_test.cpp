// Integers, bool, float, double and std::byte: Kafka's fixed-width
// big-endian encodings, round trips at the edges, and rejected input.

#include "serde/support.hpp"

#include <strata/codec/kv_codec.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using strata::byte_buffer;
using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::test::bytes;
using strata::test::check_every_truncation_throws;
using strata::test::check_round_trip;
using strata::test::decode_error;

TEST_CASE("integers are big-endian two's complement like Kafka's serializers", "[serde][arithmetic]") {
    // IntegerSerializer, LongSerializer and ShortSerializer byte for byte.
    CHECK(encode(std::int32_t{1}) == bytes({0x00, 0x00, 0x00, 0x01}));
    CHECK(encode(std::int32_t{-1}) == bytes({0xff, 0xff, 0xff, 0xff}));
    CHECK(encode(std::int32_t{0x12345678}) == bytes({0x12, 0x34, 0x56, 0x78}));
    CHECK(encode(std::int32_t{-2}) == bytes({0xff, 0xff, 0xff, 0xfe}));
    CHECK(encode(std::int64_t{-1}) == bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
    CHECK(encode(std::int64_t{1}) == bytes({0, 0, 0, 0, 0, 0, 0, 1}));
    CHECK(encode(std::int64_t{0x0102030405060708}) == bytes({1, 2, 3, 4, 5, 6, 7, 8}));
    CHECK(encode(std::numeric_limits<std::int64_t>::min()) == bytes({0x80, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(encode(std::int16_t{258}) == bytes({0x01, 0x02}));
    CHECK(encode(std::int16_t{-32768}) == bytes({0x80, 0x00}));
    CHECK(encode(std::int8_t{-1}) == bytes({0xff}));
    CHECK(encode(std::uint8_t{200}) == bytes({200}));
    CHECK(encode(std::uint16_t{0xbeef}) == bytes({0xbe, 0xef}));
    CHECK(encode(std::uint32_t{0xdeadbeef}) == bytes({0xde, 0xad, 0xbe, 0xef}));
    CHECK(encode(std::uint64_t{0xfedcba9876543210}) ==
          bytes({0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}));
}

TEST_CASE("integers decode from Kafka's bytes", "[serde][arithmetic]") {
    CHECK(decode<std::int32_t>(bytes({0x00, 0x00, 0x01, 0x00})) == 256);
    CHECK(decode<std::int32_t>(bytes({0x80, 0x00, 0x00, 0x00})) == std::numeric_limits<std::int32_t>::min());
    CHECK(decode<std::int64_t>(bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe})) == -2);
    CHECK(decode<std::uint16_t>(bytes({0xff, 0xfe})) == 65534);
}

TEMPLATE_TEST_CASE("every integer width round-trips its edge values", "[serde][arithmetic]",
                   std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint64_t, char, signed char, unsigned char,
                   short, unsigned short, int, unsigned, long, unsigned long, long long,
                   unsigned long long, char16_t, char32_t, wchar_t) {
    using limits = std::numeric_limits<TestType>;
    for (TestType v : {limits::min(), limits::max(), TestType{0}, TestType{1},
                       static_cast<TestType>(limits::max() / 3), static_cast<TestType>(limits::min() + 1)}) {
        CAPTURE(+v);
        check_round_trip(v);
        CHECK(encode(v).size() == sizeof(TestType));
    }
    // The encoding of max is 0x7f ff.. (signed) or 0xff ff.. (unsigned), most significant byte first.
    const byte_buffer max_bytes = encode(limits::max());
    CHECK(max_bytes.front() == std::byte{limits::is_signed ? 0x7fu : 0xffu});
    for (std::size_t i = 1; i < max_bytes.size(); ++i) CHECK(max_bytes[i] == std::byte{0xff});
    check_every_truncation_throws<TestType>(encode(limits::max()));
}

TEST_CASE("bool is one byte, 0x00 or 0x01, like Kafka's BooleanSerializer", "[serde][arithmetic]") {
    CHECK(encode(true) == bytes({0x01}));
    CHECK(encode(false) == bytes({0x00}));
    check_round_trip(true);
    check_round_trip(false);
    CHECK(decode<bool>(bytes({0x01})) == true);
    CHECK(decode<bool>(bytes({0x00})) == false);

    for (unsigned b : {0x02u, 0x7fu, 0x80u, 0xffu}) {
        CAPTURE(b);
        CHECK_THROWS_AS(decode<bool>(bytes({b})), serde_error);
    }
    const std::string msg = decode_error<bool>(bytes({0x02}));
    CHECK_THAT(msg, Catch::Contains("bool") && Catch::Contains("byte offset 0") && Catch::Contains("found 2"));
    CHECK_THROWS_AS(decode<bool>(byte_buffer{}), serde_error);
}

TEST_CASE("double is its IEEE-754 bits, big-endian, like Kafka's DoubleSerializer", "[serde][arithmetic]") {
    CHECK(encode(1.0) == bytes({0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
    CHECK(encode(-2.0) == bytes({0xc0, 0x00, 0, 0, 0, 0, 0, 0}));
    CHECK(encode(0.0) == bytes({0, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(encode(-0.0) == bytes({0x80, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(encode(0.1) == bytes({0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}));
    CHECK(encode(std::numeric_limits<double>::infinity()) == bytes({0x7f, 0xf0, 0, 0, 0, 0, 0, 0}));
    CHECK(decode<double>(bytes({0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18})) == 3.141592653589793);
}

TEST_CASE("float is its IEEE-754 bits, big-endian, like Kafka's FloatSerializer", "[serde][arithmetic]") {
    CHECK(encode(1.0f) == bytes({0x3f, 0x80, 0x00, 0x00}));
    CHECK(encode(-0.0f) == bytes({0x80, 0x00, 0x00, 0x00}));
    CHECK(encode(0.5f) == bytes({0x3f, 0x00, 0x00, 0x00}));
    CHECK(decode<float>(bytes({0x40, 0x49, 0x0f, 0xdb})) == 3.14159274f);
}

TEMPLATE_TEST_CASE("floating point round-trips edge values bit for bit", "[serde][arithmetic]", float, double) {
    using limits = std::numeric_limits<TestType>;
    using bits = std::conditional_t<sizeof(TestType) == 4, std::uint32_t, std::uint64_t>;
    for (TestType v : {TestType(0), TestType(-0.0), TestType(1), TestType(-1.5), limits::min(), limits::max(),
                       limits::lowest(), limits::denorm_min(), limits::epsilon(), limits::infinity(),
                       -limits::infinity()}) {
        CAPTURE(v);
        const TestType back = decode<TestType>(encode(v));
        CHECK(std::bit_cast<bits>(back) == std::bit_cast<bits>(v));
    }
    // -0.0 keeps its sign (== alone would not tell).
    CHECK(std::signbit(decode<TestType>(encode(TestType(-0.0)))));

    // NaNs keep their exact bits, payload and sign included.
    const bits quiet_nan = std::bit_cast<bits>(limits::quiet_NaN());
    const bits sign_bit = bits{1} << (sizeof(bits) * 8 - 1);
    for (bits pattern : {quiet_nan, static_cast<bits>(quiet_nan | 0x5u), static_cast<bits>(quiet_nan | 0x123u),
                         static_cast<bits>(quiet_nan | sign_bit)}) {
        CAPTURE(pattern);
        const TestType nan = std::bit_cast<TestType>(pattern);
        REQUIRE(std::isnan(nan));
        const TestType back = decode<TestType>(encode(nan));
        CHECK(std::isnan(back));
        CHECK(std::bit_cast<bits>(back) == pattern);
    }
    check_every_truncation_throws<TestType>(encode(TestType(1)));
}

TEST_CASE("Java's canonical NaN reads back as a NaN", "[serde][arithmetic]") {
    // Double.doubleToLongBits folds every NaN into this pattern.
    CHECK(std::isnan(decode<double>(bytes({0x7f, 0xf8, 0, 0, 0, 0, 0, 0}))));
    CHECK(std::isnan(decode<float>(bytes({0x7f, 0xc0, 0, 0}))));
}

TEST_CASE("std::byte is itself", "[serde][arithmetic]") {
    CHECK(encode(std::byte{0xa5}) == bytes({0xa5}));
    check_round_trip(std::byte{0});
    check_round_trip(std::byte{0xff});
}

namespace {
enum class side : std::int32_t { buy = 1, sell = -1 };
enum legacy_flag : std::uint8_t { off = 0, on = 0xff };
}  // namespace

TEST_CASE("an enumeration is its underlying integer", "[serde][arithmetic]") {
    CHECK(encode(side::buy) == encode(std::int32_t{1}));
    CHECK(encode(side::sell) == bytes({0xff, 0xff, 0xff, 0xff}));
    CHECK(encode(on) == bytes({0xff}));
    check_round_trip(side::sell);
    check_round_trip(legacy_flag::off);
    check_round_trip(static_cast<side>(42));  // not an enumerator, still a value of the type
    CHECK(decode<side>(bytes({0, 0, 0, 1})) == side::buy);
    check_every_truncation_throws<side>(encode(side::sell));
    CHECK(strata::serde<side>::min_size == 4);
}

TEST_CASE("a short integer input names the type and offset", "[serde][arithmetic]") {
    const std::string msg = decode_error<std::int64_t>(bytes({1, 2, 3}));
    CHECK_THAT(msg, Catch::Contains("std::int64_t") && Catch::Contains("byte offset 0") &&
                        Catch::Contains("needs 8 more bytes but only 3 remain"));
    try {
        static_cast<void>(decode<std::int64_t>(bytes({1, 2, 3})));
        FAIL("no exception");
    } catch (const serde_error& e) {
        CHECK(e.type_name() == "std::int64_t");
        CHECK(e.offset() == 0);
    }
}

TEST_CASE("bytes after a complete integer are rejected", "[serde][arithmetic]") {
    const std::string msg = decode_error<std::int32_t>(bytes({0, 0, 0, 1, 0}));
    CHECK_THAT(msg, Catch::Contains("std::int32_t") && Catch::Contains("byte offset 4") &&
                        Catch::Contains("1 trailing bytes"));
    CHECK_THROWS_AS(decode<std::int16_t>(bytes({0, 0, 0, 0})), serde_error);
    CHECK_THROWS_AS(decode<bool>(bytes({1, 1})), serde_error);
}

TEST_CASE("arithmetic serdes declare their fixed size", "[serde][arithmetic]") {
    STATIC_REQUIRE(strata::min_encoded_size<std::int64_t>() == 8);
    STATIC_REQUIRE(strata::min_encoded_size<std::uint16_t>() == 2);
    STATIC_REQUIRE(strata::min_encoded_size<bool>() == 1);
    STATIC_REQUIRE(strata::min_encoded_size<float>() == 4);
    STATIC_REQUIRE(strata::serializable<double>);
    STATIC_REQUIRE_FALSE(strata::serializable<long double>);  // no Java counterpart
    STATIC_REQUIRE_FALSE(strata::serializable<int*>);
}

namespace {
/// write_fixed writes exactly what encode appends, in fixed_size bytes.
template <class T>
void check_fixed_matches_encode(const T& v) {
    STATIC_REQUIRE(strata::fixed_width_serializable<T>);
    std::array<std::byte, strata::serde<T>::fixed_size> out{};
    strata::serde<T>::write_fixed(v, out.data());
    CHECK(byte_buffer(out.begin(), out.end()) == encode(v));
}
}  // namespace

TEST_CASE("a fixed-width serde writes into memory it is given exactly what encode appends", "[serde][arithmetic]") {
    check_fixed_matches_encode(std::int64_t{-2});
    check_fixed_matches_encode(std::uint64_t{0x0102030405060708});
    check_fixed_matches_encode(std::int16_t{-300});
    check_fixed_matches_encode(std::uint8_t{0xab});
    check_fixed_matches_encode(true);
    check_fixed_matches_encode(false);
    check_fixed_matches_encode(-1.5);
    check_fixed_matches_encode(3.25f);
    check_fixed_matches_encode(std::byte{0x7f});
    check_fixed_matches_encode(side::sell);
    STATIC_REQUIRE_FALSE(strata::fixed_width_serializable<std::string>);
    STATIC_REQUIRE(strata::kv_codec<std::uint64_t, double>::key_is_fixed);
    STATIC_REQUIRE(strata::kv_codec<std::uint64_t, double>::mapped_is_fixed);
    STATIC_REQUIRE_FALSE(strata::kv_codec<std::uint64_t, std::string>::mapped_is_fixed);
    STATIC_REQUIRE(strata::kv_codec<std::uint64_t, std::string>::mapped_is_raw);
    STATIC_REQUIRE_FALSE(strata::kv_codec<std::uint64_t, std::string>::key_is_raw);
}
