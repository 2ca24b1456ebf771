// std::vector<T>: u32 count then elements; counts are bounded by the input
// before anything is reserved.

#include "serde/support.hpp"

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using strata::byte_buffer;
using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::test::bytes;
using strata::test::check_every_truncation_throws;
using strata::test::check_round_trip;
using strata::test::decode_error;
using strata::test::write_nested;

TEST_CASE("a vector is a u32 count, then its elements", "[serde][vector]") {
    CHECK(encode(std::vector<std::int32_t>{1, -1}) == bytes({0, 0, 0, 2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}));
    CHECK(encode(std::vector<std::int16_t>{}) == bytes({0, 0, 0, 0}));
    CHECK(encode(std::vector<bool>{true, false, true}) == bytes({0, 0, 0, 3, 1, 0, 1}));
    CHECK(encode(std::vector<std::uint8_t>{7, 8}) == bytes({0, 0, 0, 2, 7, 8}));
    CHECK(encode(std::vector<char>{'h', 'i'}) == bytes({0, 0, 0, 2, 0x68, 0x69}));
}

TEST_CASE("vectors round-trip, empty and nested", "[serde][vector]") {
    check_round_trip(std::vector<std::int64_t>{});
    check_round_trip(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 0,
                                               std::numeric_limits<std::int64_t>::max()});
    check_round_trip(std::vector<bool>{true, false, false, true});
    check_round_trip(std::vector<double>{0.5, -0.0, 1e300});
    check_round_trip(std::vector<std::vector<std::string>>{{}, {"a", ""}, {"bcd"}});
    check_round_trip(std::vector<std::optional<std::int32_t>>{std::nullopt, 5, std::nullopt});
    check_round_trip(std::vector<signed char>{-128, 0, 127});
    std::vector<std::uint32_t> big(5000);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint32_t>(i * 2654435761u);
    check_round_trip(big);
}

TEST_CASE("a top-level byte_buffer is raw bytes, a nested one is length-prefixed", "[serde][vector]") {
    const byte_buffer blob = bytes({0xde, 0xad, 0x00});
    // Like Kafka's ByteArraySerializer: the record is the bytes.
    CHECK(encode(blob) == blob);
    CHECK(decode<byte_buffer>(blob) == blob);
    CHECK(decode<byte_buffer>(byte_buffer{}).empty());
    CHECK(write_nested(blob) == bytes({0, 0, 0, 3, 0xde, 0xad, 0x00}));
    CHECK(encode(std::optional<byte_buffer>(blob)) == bytes({1, 0, 0, 0, 3, 0xde, 0xad, 0x00}));
    check_round_trip(std::vector<byte_buffer>{{}, blob});
}

TEST_CASE("every truncation of a vector is rejected", "[serde][vector]") {
    check_every_truncation_throws<std::vector<std::int32_t>>(encode(std::vector<std::int32_t>{1, 2, 3}));
    check_every_truncation_throws<std::vector<std::vector<std::string>>>(
        encode(std::vector<std::vector<std::string>>{{"ab"}, {}, {"", "c"}}));
    check_every_truncation_throws<std::vector<std::uint8_t>>(encode(std::vector<std::uint8_t>{1, 2, 3}));
    check_every_truncation_throws<std::vector<bool>>(encode(std::vector<bool>{true, false}));
}

TEST_CASE("a garbage count throws before reserving", "[serde][vector]") {
    // 0xFFFFFFFF int64s would need 32 GiB; the check runs on the count alone.
    const std::string msg = decode_error<std::vector<std::int64_t>>(bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}));
    CHECK_THAT(msg, Catch::Contains("std::vector<std::int64_t>") && Catch::Contains("byte offset 0") &&
                        Catch::Contains("element count 4294967295") && Catch::Contains("only 4 remain"));

    CHECK_THROWS_AS(decode<std::vector<std::uint8_t>>(bytes({0xff, 0xff, 0xff, 0xff, 1})), serde_error);
    CHECK_THROWS_AS(decode<std::vector<std::string>>(bytes({0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0})), serde_error);
    // Exactly at the bound: 2 elements of 4 bytes need 8, only 7 remain.
    CHECK_THROWS_AS(decode<std::vector<std::int32_t>>(bytes({0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0})), serde_error);
}

TEST_CASE("bad elements inside a vector are reported at their offset", "[serde][vector]") {
    const std::string msg = decode_error<std::vector<bool>>(bytes({0, 0, 0, 3, 1, 0, 9}));
    CHECK_THAT(msg, Catch::Contains("std::vector<bool>") && Catch::Contains("byte offset 6"));
    const std::string trailing = decode_error<std::vector<std::int16_t>>(bytes({0, 0, 0, 1, 0, 1, 0}));
    CHECK_THAT(trailing, Catch::Contains("byte offset 6") && Catch::Contains("trailing"));
}

namespace {
/// A struct with no fields: it encodes to no bytes, so a count of them
/// cannot be checked against the input's size.
struct nothing {
    BOOST_HANA_DEFINE_STRUCT(nothing);
};
}  // namespace

TEST_CASE("a count of elements that encode to no bytes is bounded too", "[serde][vector]") {
    // Four bytes that claim 4,294,967,295 empty structs: refused at once,
    // where the count alone used to allocate 4 GiB.
    const std::string msg = decode_error<std::vector<nothing>>(bytes({0xff, 0xff, 0xff, 0xff}));
    CHECK_THAT(msg, Catch::Contains("element count 4294967295") && Catch::Contains("0 bytes left") &&
                        Catch::Contains("byte offset 0"));
    // Real vectors of them still round-trip, up to the documented allowance.
    CHECK(decode<std::vector<nothing>>(encode(std::vector<nothing>(1000))).size() == 1000);
    CHECK(decode<std::vector<nothing>>(encode(std::vector<nothing>(4096))).size() == 4096);
    CHECK_THROWS_AS(decode<std::vector<nothing>>(encode(std::vector<nothing>(4097))), serde_error);
}

TEST_CASE("elements that encode to no bytes are bounded by the whole input, however nested", "[serde][vector]") {
    // Found by fuzzing (test/fuzz/serde_fuzz.cpp, its allocation bound):
    // every inner vector may count the bytes left plus 4096 such elements,
    // so 1000 inner counts of 4096 in 4,004 bytes decoded into 4 million
    // elements (several megabytes; a megabyte of input into hundreds of
    // gigabytes). One decode now makes at most its input's size plus 4096
    // of them, in all.
    byte_buffer b = write_nested(std::uint32_t{1000});
    for (int i = 0; i < 1000; ++i) {
        const byte_buffer count = write_nested(std::uint32_t{4096});
        b.insert(b.end(), count.begin(), count.end());
    }
    const std::string msg = decode_error<std::vector<std::vector<nothing>>>(b);
    CHECK_THAT(msg, Catch::Contains("encode to no bytes"));
    // Real nested vectors of them within that allowance still decode.
    const auto ok = decode<std::vector<std::vector<nothing>>>(
        encode(std::vector<std::vector<nothing>>{std::vector<nothing>(3000), {}, std::vector<nothing>(1000)}));
    REQUIRE(ok.size() == 3);
    CHECK(ok[0].size() == 3000);
    CHECK(ok[2].size() == 1000);
    CHECK_THROWS_AS(
        decode<std::vector<std::vector<nothing>>>(encode(std::vector<std::vector<nothing>>(2, std::vector<nothing>(3000)))),
        serde_error);
}
