// Types defined with BOOST_HANA_DEFINE_STRUCT: field by field, nested
// structs, vectors of structs and optional fields included.

#include "serde/support.hpp"

#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace demo {

struct point {
    BOOST_HANA_DEFINE_STRUCT(point, (std::int32_t, x), (std::int32_t, y));
    friend bool operator==(const point&, const point&) = default;
};

struct label {
    BOOST_HANA_DEFINE_STRUCT(label, (std::string, text), (bool, visible));
    friend bool operator==(const label&, const label&) = default;
};

struct shape {
    BOOST_HANA_DEFINE_STRUCT(shape,
        (std::string, name),
        (point, origin),
        (std::vector<point>, vertices),
        (std::optional<label>, caption),
        (std::optional<std::int64_t>, z_order),
        (double, weight),
        (std::vector<std::optional<std::string>>, tags));
    friend bool operator==(const shape&, const shape&) = default;
};

struct drawing {
    BOOST_HANA_DEFINE_STRUCT(drawing, (std::vector<shape>, shapes), (std::uint16_t, version));
    friend bool operator==(const drawing&, const drawing&) = default;
};

struct empty {
    BOOST_HANA_DEFINE_STRUCT(empty);
    friend bool operator==(const empty&, const empty&) = default;
};

struct opaque {
    int handle = 0;
};

struct has_opaque_field {
    BOOST_HANA_DEFINE_STRUCT(has_opaque_field, (std::int32_t, id), (opaque, o));
};

// A struct adapted from outside, as for types one cannot edit.
struct adapted {
    std::int16_t a = 0;
    std::string b;
    friend bool operator==(const adapted&, const adapted&) = default;
};

}  // namespace demo

BOOST_HANA_ADAPT_STRUCT(demo::adapted, a, b);

using demo::point;
using strata::byte_buffer;
using strata::decode;
using strata::encode;
using strata::serde_error;
using strata::test::bytes;
using strata::test::check_every_truncation_throws;
using strata::test::check_round_trip;
using strata::test::decode_error;

namespace {

demo::shape sample_shape() {
    return demo::shape{"triangle",
                       point{-1, 2},
                       {point{0, 0}, point{10, 0}, point{5, 8}},
                       demo::label{"tri", true},
                       std::nullopt,
                       0.25,
                       {std::string("red"), std::nullopt, std::string()}};
}

}  // namespace

TEST_CASE("a struct is its fields in order, nothing in between", "[serde][hana]") {
    CHECK(encode(point{1, -2}) == bytes({0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe}));
    // Nested string fields carry their length; bool is one byte.
    CHECK(encode(demo::label{"ab", true}) == bytes({0, 0, 0, 2, 0x61, 0x62, 1}));
    CHECK(encode(demo::empty{}).empty());
    CHECK(encode(demo::adapted{3, "z"}) == bytes({0, 3, 0, 0, 0, 1, 0x7a}));
}

TEST_CASE("structs round-trip, nested, with vectors of structs and optional fields", "[serde][hana]") {
    check_round_trip(point{0, 0});
    check_round_trip(point{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
    check_round_trip(demo::label{"", false});
    check_round_trip(sample_shape());
    check_round_trip(demo::shape{});
    check_round_trip(demo::drawing{{sample_shape(), demo::shape{}, sample_shape()}, 7});
    check_round_trip(demo::drawing{});
    check_round_trip(demo::empty{});
    check_round_trip(demo::adapted{-5, "adapted"});
    check_round_trip(std::vector<point>{{1, 2}, {3, 4}});
    check_round_trip(std::optional<demo::drawing>(demo::drawing{{sample_shape()}, 1}));

    const demo::shape s = decode<demo::shape>(encode(sample_shape()));
    REQUIRE(s.vertices.size() == 3);
    CHECK(s.vertices[2] == point{5, 8});
    REQUIRE(s.caption.has_value());
    CHECK(s.caption->text == "tri");
    CHECK_FALSE(s.z_order.has_value());
    CHECK_FALSE(s.tags[1].has_value());
}

TEST_CASE("every truncation of a struct is rejected", "[serde][hana]") {
    check_every_truncation_throws<point>(encode(point{1, 2}));
    check_every_truncation_throws<demo::shape>(encode(sample_shape()));
    check_every_truncation_throws<demo::drawing>(encode(demo::drawing{{sample_shape(), demo::shape{}}, 3}));
}

TEST_CASE("struct decoding errors name the struct and the offset", "[serde][hana]") {
    const std::string truncated = decode_error<point>(bytes({0, 0, 0, 1, 0, 0}));
    CHECK_THAT(truncated, Catch::Contains("demo::point") && Catch::Contains("byte offset 4"));

    byte_buffer trailing = encode(demo::label{"ok", false});
    trailing.push_back(std::byte{0});
    CHECK_THAT(decode_error<demo::label>(trailing), Catch::Contains("demo::label") &&
                                                       Catch::Contains("byte offset 7") &&
                                                       Catch::Contains("1 trailing bytes"));

    // The bool field of a label holds 5.
    CHECK_THAT(decode_error<demo::label>(bytes({0, 0, 0, 0, 5})),
               Catch::Contains("demo::label") && Catch::Contains("byte offset 4") && Catch::Contains("bool"));

    // A vector of 2^32-1 points in a drawing: rejected before reserving.
    CHECK_THAT(decode_error<demo::drawing>(bytes({0xff, 0xff, 0xff, 0xff, 0, 1})),
               Catch::Contains("demo::drawing") && Catch::Contains("element count 4294967295"));
}

TEST_CASE("a struct's smallest encoding is the sum of its fields'", "[serde][hana]") {
    STATIC_REQUIRE(strata::min_encoded_size<point>() == 8);
    STATIC_REQUIRE(strata::min_encoded_size<demo::label>() == 5);
    STATIC_REQUIRE(strata::min_encoded_size<demo::empty>() == 0);
    // name 4, origin 8, vertices 4, caption 1, z_order 1, weight 8, tags 4
    STATIC_REQUIRE(strata::min_encoded_size<demo::shape>() == 30);
}

TEST_CASE("a struct with a field that has no serde has no serde", "[serde][hana]") {
    STATIC_REQUIRE(strata::serializable<demo::shape>);
    STATIC_REQUIRE(strata::serializable<std::vector<demo::drawing>>);
    STATIC_REQUIRE_FALSE(strata::serializable<demo::opaque>);
    STATIC_REQUIRE_FALSE(strata::serializable<demo::has_opaque_field>);
    STATIC_REQUIRE_FALSE(strata::serializable<std::vector<demo::has_opaque_field>>);
    STATIC_REQUIRE_FALSE(strata::serializable<std::optional<demo::opaque>>);
}
