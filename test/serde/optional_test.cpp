// std::optional<T>: a presence byte (0 or 1) and then the value.

#include "serde/support.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::test::bytes;
using strata::test::check_every_truncation_throws;
using strata::test::check_round_trip;
using strata::test::decode_error;

TEST_CASE("an optional is a presence byte, then the value", "[serde][optional]") {
    CHECK(encode(std::optional<std::int32_t>{}) == bytes({0}));
    CHECK(encode(std::optional<std::int32_t>(5)) == bytes({1, 0, 0, 0, 5}));
    CHECK(encode(std::optional<bool>(false)) == bytes({1, 0}));
    CHECK(encode(std::optional<std::optional<std::int8_t>>(std::optional<std::int8_t>{})) == bytes({1, 0}));
    CHECK(encode(std::optional<std::optional<std::int8_t>>{}) == bytes({0}));
}

TEST_CASE("optionals round-trip, empty or not, nested", "[serde][optional]") {
    check_round_trip(std::optional<std::int64_t>{});
    check_round_trip(std::optional<std::int64_t>(-1));
    check_round_trip(std::optional<std::string>(""));
    check_round_trip(std::optional<std::string>{});
    check_round_trip(std::optional<std::optional<double>>(std::optional<double>{}));
    check_round_trip(std::optional<std::optional<double>>(2.5));
    check_round_trip(std::optional<std::vector<std::int16_t>>(std::vector<std::int16_t>{}));
    check_round_trip(std::optional<std::vector<std::int16_t>>(std::vector<std::int16_t>{1, 2}));
}

TEST_CASE("a presence byte other than 0 or 1 is rejected", "[serde][optional]") {
    for (unsigned b : {2u, 0x80u, 0xffu}) {
        CAPTURE(b);
        CHECK_THROWS_AS(decode<std::optional<std::int8_t>>(bytes({b, 0})), serde_error);
    }
    const std::string msg = decode_error<std::optional<std::optional<std::int8_t>>>(bytes({1, 7, 0}));
    CHECK_THAT(msg, Catch::Contains("std::optional<std::optional<std::int8_t>>") &&
                        Catch::Contains("byte offset 1") && Catch::Contains("presence byte"));
}

TEST_CASE("every truncation of an optional is rejected", "[serde][optional]") {
    check_every_truncation_throws<std::optional<std::int64_t>>(encode(std::optional<std::int64_t>(42)));
    check_every_truncation_throws<std::optional<std::optional<std::string>>>(
        encode(std::optional<std::optional<std::string>>(std::optional<std::string>("hey"))));
    CHECK_THROWS_AS(decode<std::optional<std::int32_t>>(bytes({0, 0})), serde_error);  // trailing byte
}
