#pragma once
/// @file
/// @brief Byte buffers and the record type that crosses every changelog.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace strata {

/// @brief A position in a changelog. Offsets grow by one per record appended;
/// compaction may leave gaps, never reorders.
using offset_t = std::uint64_t;

/// @brief A read-only view of bytes.
using bytes_view = std::span<const std::byte>;

/// @brief An owning, growable byte buffer. Codecs and serdes append to it.
using byte_buffer = std::vector<std::byte>;

/// @brief Views the characters of a string as bytes (no copy).
[[nodiscard]] inline bytes_view as_bytes(std::string_view s) noexcept {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// @brief Views bytes as characters (no copy); handy for tests and logs.
[[nodiscard]] inline std::string_view as_chars(bytes_view b) noexcept {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// @brief Appends raw bytes to a buffer.
inline void append_bytes(byte_buffer& out, bytes_view b) {
    out.insert(out.end(), b.begin(), b.end());
}

/// @brief A record without a time of its own: Kafka's -1 (a producer's
/// record then takes the time it is sent, and Kafka Streams reads -1 as
/// unknown).
inline constexpr std::int64_t no_timestamp = -1;

/// @brief One changelog record, borrowed: the key of one unit of state and
/// its current value, or no value (a tombstone: the unit no longer exists).
///
/// Records carry state, never operations, so a compacted changelog keeps
/// exactly what restore needs: the latest record of every key.
///
/// A record may carry a time (milliseconds since the epoch), which every
/// changelog keeps and replays: the time of the value in a timestamped or
/// versioned store, whose Kafka Streams changelogs hold it there and not in
/// the value.
struct record_view {
    bytes_view key;
    std::optional<bytes_view> value;  ///< std::nullopt: tombstone
    offset_t offset = 0;              ///< set by a changelog on replay; ignored by append
    std::int64_t timestamp = no_timestamp;  ///< >= 0, or no_timestamp

    [[nodiscard]] bool is_tombstone() const noexcept { return !value.has_value(); }
    [[nodiscard]] bool has_timestamp() const noexcept { return timestamp != no_timestamp; }
};

/// @brief An owning record, for tests and for changelogs that keep records in memory.
struct record {
    byte_buffer key;
    std::optional<byte_buffer> value;
    offset_t offset = 0;
    std::int64_t timestamp = no_timestamp;

    record() = default;
    explicit record(const record_view& r)
        : key(r.key.begin(), r.key.end()), offset(r.offset), timestamp(r.timestamp) {
        if (r.value) value.emplace(r.value->begin(), r.value->end());
    }

    [[nodiscard]] record_view view() const noexcept {
        record_view v{key, std::nullopt, offset, timestamp};
        if (value) v.value = bytes_view(*value);
        return v;
    }
    [[nodiscard]] bool is_tombstone() const noexcept { return !value.has_value(); }
    friend bool operator==(const record&, const record&) = default;
};

}  // namespace strata
