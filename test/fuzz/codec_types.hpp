#pragma once
// The key and value types codec_fuzz restores, shared with the corpus
// generator, and the layout of its records.

#include <strata/core/bytes.hpp>
#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace strata_fuzz {

struct account_key {
    BOOST_HANA_DEFINE_STRUCT(account_key, (std::string, region), (std::int32_t, number));
    friend bool operator<(const account_key& a, const account_key& b) {
        return std::tie(a.region, a.number) < std::tie(b.region, b.number);
    }
};

struct report {
    BOOST_HANA_DEFINE_STRUCT(report,
        (std::string, agent),
        (std::optional<std::string>, state),
        (std::vector<std::int64_t>, seen_ms),
        (bool, confirmed));
    friend bool operator==(const report&, const report&) = default;
};

/// Appends one codec_fuzz record: a flags byte (bit 0: tombstone, bit 1: a
/// timestamp follows), the timestamp (i64 little-endian), a u16
/// little-endian key length, the key, and unless a tombstone a u16 value
/// length and the value.
inline void put_codec_record(strata::byte_buffer& out, const strata::byte_buffer& key,
                             const std::optional<strata::byte_buffer>& value,
                             std::int64_t timestamp = strata::no_timestamp) {
    auto put_u16 = [&](std::size_t n) {
        out.push_back(static_cast<std::byte>(n & 0xff));
        out.push_back(static_cast<std::byte>((n >> 8) & 0xff));
    };
    const bool timed = timestamp != strata::no_timestamp;
    out.push_back(std::byte{static_cast<std::uint8_t>((value ? 0 : 1) | (timed ? 2 : 0))});
    if (timed)
        for (int i = 0; i < 8; ++i)
            out.push_back(static_cast<std::byte>((static_cast<std::uint64_t>(timestamp) >> (8 * i)) & 0xff));
    put_u16(key.size());
    out.insert(out.end(), key.begin(), key.end());
    if (!value) return;
    put_u16(value->size());
    out.insert(out.end(), value->begin(), value->end());
}

}  // namespace strata_fuzz
