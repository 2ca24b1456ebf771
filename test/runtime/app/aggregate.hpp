#pragma once
// The per-key aggregate the runtime tests run, shared by the test
// application (which computes it) and the tests (which compute what it must
// produce): for each key, the count and the sum of the input amounts, and
// for each input record one output record carrying the input's offset and
// the key's aggregate after it.

#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>

namespace runtime_test {

struct totals {
    BOOST_HANA_DEFINE_STRUCT(totals, (std::int64_t, count), (std::int64_t, sum));
    friend bool operator==(const totals&, const totals&) = default;
};

/// The value of an output record.
struct update {
    BOOST_HANA_DEFINE_STRUCT(update, (std::int64_t, input_offset), (std::int64_t, count), (std::int64_t, sum));
    friend bool operator==(const update&, const update&) = default;
};

}  // namespace runtime_test
