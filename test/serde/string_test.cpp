// std::string: raw bytes as a whole record (Kafka's StringSerializer),
// length-prefixed when nested; garbage lengths fail before allocating.

#include "serde/support.hpp"

#include <optional>
#include <string>
#include <vector>

using namespace std::string_literals;
using strata::byte_buffer;
using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::test::bytes;
using strata::test::check_every_truncation_throws;
using strata::test::check_round_trip;
using strata::test::decode_error;
using strata::test::write_nested;

TEST_CASE("a top-level string is its raw bytes like Kafka's StringSerializer", "[serde][string]") {
    CHECK(encode("abc"s) == bytes({0x61, 0x62, 0x63}));
    CHECK(encode(""s).empty());
    CHECK(decode<std::string>(bytes({0x61, 0x62, 0x63})) == "abc");
    CHECK(decode<std::string>(byte_buffer{}).empty());
    // UTF-8 passes through untouched: "é" is c3 a9.
    CHECK(encode("\xc3\xa9"s) == bytes({0xc3, 0xa9}));
}

TEST_CASE("a top-level string takes every byte, whatever they are", "[serde][string]") {
    // Not UTF-8, embedded NULs: strata checks neither, like Kafka.
    const std::string odd("\0\xff\xfe\x80zz\0"s);
    REQUIRE(odd.size() == 7);
    CHECK(encode(odd).size() == 7);
    check_round_trip(odd);
    check_round_trip(""s);
    check_round_trip(std::string(100000, 'x'));
}

TEST_CASE("a nested string carries a u32 big-endian length", "[serde][string]") {
    CHECK(write_nested("abc"s) == bytes({0, 0, 0, 3, 0x61, 0x62, 0x63}));
    CHECK(write_nested(""s) == bytes({0, 0, 0, 0}));
    CHECK(encode(std::vector<std::string>{"ab", ""}) == bytes({0, 0, 0, 2, 0, 0, 0, 2, 0x61, 0x62, 0, 0, 0, 0}));
    CHECK(encode(std::optional<std::string>("x")) == bytes({1, 0, 0, 0, 1, 0x78}));
    check_round_trip(std::vector<std::string>{"", "a", std::string(300, 'q'), "\0"s});
}

TEST_CASE("every truncation of a nested string is rejected", "[serde][string]") {
    check_every_truncation_throws<std::vector<std::string>>(encode(std::vector<std::string>{"hello", "", "w"}));
    check_every_truncation_throws<std::optional<std::string>>(encode(std::optional<std::string>("abc")));
}

TEST_CASE("a garbage string length throws before allocating", "[serde][string]") {
    // One element claiming 0xFFFFFFFF bytes. Allocating that would take 4 GiB.
    const byte_buffer bad = bytes({0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x61});
    const std::string msg = decode_error<std::vector<std::string>>(bad);
    CHECK_THAT(msg, Catch::Contains("std::vector<std::string>") && Catch::Contains("byte offset 4") &&
                        Catch::Contains("string length 4294967295") && Catch::Contains("only 1 remain"));

    // Off by one: 4 bytes announced, 3 present.
    CHECK_THROWS_AS(decode<std::optional<std::string>>(bytes({1, 0, 0, 0, 4, 0x61, 0x62, 0x63})), serde_error);
}

TEST_CASE("bytes after a nested string are rejected", "[serde][string]") {
    const std::string msg = decode_error<std::optional<std::string>>(bytes({1, 0, 0, 0, 1, 0x61, 0x62}));
    CHECK_THAT(msg, Catch::Contains("std::optional<std::string>") && Catch::Contains("byte offset 6") &&
                        Catch::Contains("trailing"));
}
