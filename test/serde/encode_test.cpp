// encode/decode: appending, the whole-record rule for strings and byte
// buffers, trailing bytes, and readable type names in messages.

#include "serde/support.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace std::string_literals;
using strata::byte_buffer;
using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::type_name;
using strata::test::bytes;
using strata::test::decode_error;

namespace demo {
struct money {
    std::int64_t cents = 0;
    friend bool operator==(const money&, const money&) = default;
};
}  // namespace demo

// A user serde for a type strata does not know: cents as a decimal string
// behind a one-byte length, to show that any format plugs in.
template <>
struct strata::serde<demo::money> {
    static void write(const demo::money& m, byte_buffer& out) {
        const std::string digits = std::to_string(m.cents);
        out.push_back(static_cast<std::byte>(digits.size()));
        append_bytes(out, as_bytes(digits));
    }
    static demo::money read(byte_reader& in) {
        const auto n = std::to_integer<std::size_t>(in.take(1)[0]);
        return demo::money{std::stoll(std::string(as_chars(in.take(n))))};
    }
};

TEST_CASE("encode appends to the buffer it is given", "[serde][encode]") {
    byte_buffer out = bytes({0xee});
    encode(std::int16_t{1}, out);
    encode("hi"s, out);
    encode(true, out);
    CHECK(out == bytes({0xee, 0, 1, 0x68, 0x69, 1}));
}

TEST_CASE("strings and byte buffers are raw only at the top level", "[serde][encode]") {
    CHECK(encode("abc"s) == bytes({0x61, 0x62, 0x63}));
    CHECK(encode(std::vector<std::string>{"abc"}) == bytes({0, 0, 0, 1, 0, 0, 0, 3, 0x61, 0x62, 0x63}));
    CHECK(encode(bytes({9, 8})) == bytes({9, 8}));
    CHECK(encode(std::vector<byte_buffer>{bytes({9, 8})}) == bytes({0, 0, 0, 1, 0, 0, 0, 2, 9, 8}));
    // std::vector<std::uint8_t> is not a byte_buffer: it keeps its count.
    CHECK(encode(std::vector<std::uint8_t>{9, 8}) == bytes({0, 0, 0, 2, 9, 8}));
}

TEST_CASE("a user serde works through encode and inside composites", "[serde][encode]") {
    STATIC_REQUIRE(strata::serializable<demo::money>);
    CHECK(encode(demo::money{1234}) == bytes({4, 0x31, 0x32, 0x33, 0x34}));
    CHECK(decode<demo::money>(encode(demo::money{-5})) == demo::money{-5});
    const std::vector<std::optional<demo::money>> v{demo::money{7}, std::nullopt};
    CHECK(decode<std::vector<std::optional<demo::money>>>(encode(v)) == v);
    // No min_size declared: the count check is skipped but truncation still throws.
    STATIC_REQUIRE(strata::min_encoded_size<demo::money>() == 0);
    CHECK_THROWS_AS(decode<std::vector<demo::money>>(bytes({0xff, 0xff, 0xff, 0xff, 1, 0x31})), serde_error);
}

TEST_CASE("decode rejects missing and trailing bytes, naming the type and offset", "[serde][encode]") {
    const std::string missing = decode_error<std::optional<std::int32_t>>(bytes({1, 0, 0}));
    CHECK_THAT(missing, Catch::StartsWith("strata: cannot decode std::optional<std::int32_t> at byte offset 1") &&
                            Catch::Contains("needs 4 more bytes but only 2 remain"));

    // A count that cannot fit is caught at the count, before any element.
    const std::string count = decode_error<std::vector<std::int32_t>>(bytes({0, 0, 0, 1, 0, 0}));
    CHECK_THAT(count, Catch::StartsWith("strata: cannot decode std::vector<std::int32_t> at byte offset 0") &&
                          Catch::Contains("element count 1"));

    const std::string trailing = decode_error<std::uint16_t>(bytes({1, 2, 3}));
    CHECK_THAT(trailing, Catch::StartsWith("strata: cannot decode std::uint16_t at byte offset 2") &&
                             Catch::Contains("1 trailing bytes"));

    try {
        static_cast<void>(decode<std::optional<double>>(bytes({1, 0x3f})));
        FAIL("no exception");
    } catch (const serde_error& e) {
        CHECK(e.type_name() == "std::optional<double>");
        CHECK(e.offset() == 1);
    }
}

TEST_CASE("type names are spelled as in source", "[serde][type_name]") {
    STATIC_REQUIRE(type_name<std::int64_t>() == "std::int64_t");
    STATIC_REQUIRE(type_name<std::uint8_t>() == "std::uint8_t");
    STATIC_REQUIRE(type_name<bool>() == "bool");
    STATIC_REQUIRE(type_name<std::string>() == "std::string");
    STATIC_REQUIRE(type_name<std::vector<std::string>>() == "std::vector<std::string>");
    STATIC_REQUIRE(type_name<std::optional<std::vector<double>>>() == "std::optional<std::vector<double>>");
    STATIC_REQUIRE(type_name<demo::money>() == "demo::money");
    STATIC_REQUIRE(type_name<std::vector<demo::money>>() == "std::vector<demo::money>");
    STATIC_REQUIRE(strata::type_name_v<std::byte> == "std::byte");
    // Types without a readable override keep the compiler's (exact) spelling.
    CHECK_THAT(std::string(type_name<std::map<int, int>>()), Catch::StartsWith("std::map<int, int"));
}

TEST_CASE("serializable is true exactly for types with a serde", "[serde][encode]") {
    STATIC_REQUIRE(strata::serializable<std::vector<std::optional<std::vector<std::string>>>>);
    STATIC_REQUIRE(strata::serializable<byte_buffer>);
    STATIC_REQUIRE_FALSE(strata::serializable<std::map<int, int>>);
    STATIC_REQUIRE_FALSE(strata::serializable<std::vector<std::map<int, int>>>);
    STATIC_REQUIRE_FALSE(strata::serializable<const char*>);
}
