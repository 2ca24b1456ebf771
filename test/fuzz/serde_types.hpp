#pragma once
// The types serde_fuzz decodes, shared with the corpus generator: the first
// byte of a serde_fuzz input is an index into `serde_types`. Append new types
// at the end, so that the seeds already in the corpus keep their meaning.

#include <strata/core/bytes.hpp>
#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace strata_fuzz {

enum class side : std::int32_t { buy = 1, sell = 2 };

/// A struct with no fields: encodes to no bytes at all.
struct nothing {
    BOOST_HANA_DEFINE_STRUCT(nothing);
};

struct point {
    BOOST_HANA_DEFINE_STRUCT(point, (std::int32_t, x), (std::int32_t, y));
};

/// Nested structs, optionals and containers of structs.
struct shape {
    BOOST_HANA_DEFINE_STRUCT(shape,
        (std::string, name),
        (std::vector<point>, points),
        (std::optional<point>, centre),
        (bool, closed),
        (double, area),
        (side, kind));
};

/// The shape of the runtime's coordination records (strata/runtime/detail/
/// coordination.hpp: `assignment`), which needs librdkafka to include.
struct placement {
    BOOST_HANA_DEFINE_STRUCT(placement,
        (std::int32_t, task),
        (std::string, active),
        (std::vector<std::string>, standbys));
};
struct assignment_like {
    BOOST_HANA_DEFINE_STRUCT(assignment_like,
        (std::int64_t, version),
        (std::string, leader),
        (std::int64_t, decided_ms),
        (std::vector<std::string>, members),
        (std::vector<placement>, tasks));
};

/// Fields that encode to no bytes beside ones that do.
struct with_nothing {
    BOOST_HANA_DEFINE_STRUCT(with_nothing,
        (nothing, empty),
        (std::vector<nothing>, empties),
        (std::optional<nothing>, maybe),
        (std::uint8_t, tag));
};

using serde_types = std::tuple<
    std::int8_t,                                           // 0
    std::uint16_t,                                         // 1
    std::int32_t,                                          // 2
    std::uint64_t,                                         // 3
    bool,                                                  // 4
    float,                                                 // 5
    double,                                                // 6
    side,                                                  // 7
    std::string,                                           // 8: raw at the top level
    strata::byte_buffer,                                   // 9: raw at the top level
    std::vector<std::int32_t>,                             // 10
    std::vector<bool>,                                     // 11
    std::vector<std::string>,                              // 12
    std::vector<strata::byte_buffer>,                      // 13
    std::optional<std::string>,                            // 14
    std::optional<std::vector<std::optional<std::int64_t>>>,  // 15
    std::vector<std::vector<std::string>>,                 // 16
    nothing,                                               // 17
    std::vector<nothing>,                                  // 18
    std::vector<std::vector<nothing>>,                     // 19
    point,                                                 // 20
    shape,                                                 // 21
    std::vector<shape>,                                    // 22
    assignment_like,                                       // 23
    with_nothing,                                          // 24
    std::vector<with_nothing>,                             // 25
    std::optional<shape>,                                  // 26
    std::vector<std::optional<nothing>>,                   // 27
    std::vector<char>,                                     // 28
    std::vector<std::uint8_t>>;                            // 29

}  // namespace strata_fuzz
