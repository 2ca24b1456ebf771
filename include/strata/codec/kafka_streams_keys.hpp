#pragma once
/// @file
/// @brief The byte layouts Kafka Streams gives the keys and values of its
/// window, session and timestamped stores, as they appear in those stores'
/// changelog topics: what a strata store reads and writes to share a
/// changelog with a Kafka Streams application, or to restore from one.
///
/// Every integer is big-endian (Java's ByteBuffer), times in milliseconds:
///
/// | what | layout | Kafka Streams |
/// |---|---|---|
/// | window store key | key, window start (8), sequence number (4) | WindowKeySchema.toStoreKeyBinary |
/// | session store key | key, session end (8), session start (8) | SessionKeySchema.toBinary |
/// | timestamped value | timestamp (8), value | ValueAndTimestampSerializer |
///
/// The sequence number tells apart records of one key and window in a store
/// that keeps duplicates (a stream-stream join's); it is 0 otherwise. The
/// key's own bytes come first, so the keys of one serialized key sort
/// together, by time within it, as Kafka Streams' RocksDB store sorts them.
/// Decoding checks lengths (and that a session does not end before it
/// starts, which Kafka Streams' SessionWindow refuses): corrupt bytes throw
/// a serde_error naming what was decoded, never read past the input.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::kafka_streams {

namespace detail {
inline void put_be64(byte_buffer& out, std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<std::byte>((u >> shift) & 0xffU));
}
inline void put_be32(byte_buffer& out, std::int32_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::byte>((u >> shift) & 0xffU));
}
inline std::int64_t get_be64(bytes_view b) {
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < 8; ++i) u = (u << 8) | static_cast<std::uint64_t>(b[i]);
    return static_cast<std::int64_t>(u);
}
inline std::int32_t get_be32(bytes_view b) {
    std::uint32_t u = 0;
    for (std::size_t i = 0; i < 4; ++i) u = (u << 8) | static_cast<std::uint32_t>(b[i]);
    return static_cast<std::int32_t>(u);
}
/// The serialized key before a fixed-size suffix of `suffix` bytes.
inline bytes_view key_before(byte_reader& r, std::size_t suffix) {
    if (r.remaining() < suffix)
        r.fail("is " + std::to_string(r.remaining()) + " bytes, shorter than its " + std::to_string(suffix) +
               "-byte time suffix (truncated, or not written by this kind of store)");
    return r.take(r.remaining() - suffix);
}
}  // namespace detail

/// @brief A window store's key: the serialized key, the window's start, the
/// sequence number. Views into the bytes it was decoded from.
struct window_key {
    bytes_view key;
    std::int64_t start_ms = 0;
    std::int32_t seqnum = 0;
};

/// @brief Appends what follows the key in a window store key: the
/// window's start and the sequence number.
inline void append_window_suffix(byte_buffer& out, std::int64_t start_ms, std::int32_t seqnum = 0) {
    detail::put_be64(out, start_ms);
    detail::put_be32(out, seqnum);
}

/// @brief The window store key of `key` in the window starting at `start_ms`.
[[nodiscard]] inline byte_buffer encode_window_key(bytes_view key, std::int64_t start_ms, std::int32_t seqnum = 0) {
    byte_buffer out;
    out.reserve(key.size() + 12);
    out.insert(out.end(), key.begin(), key.end());
    append_window_suffix(out, start_ms, seqnum);
    return out;
}

/// @throws serde_error fewer than 12 bytes
[[nodiscard]] inline window_key decode_window_key(bytes_view binary) {
    byte_reader r(binary, "Kafka Streams window store key");
    window_key k;
    k.key = detail::key_before(r, 12);
    k.start_ms = detail::get_be64(r.take(8));
    k.seqnum = detail::get_be32(r.take(4));
    return k;
}

/// @brief A session store's key: the serialized key and the session's
/// first and last record times (both inclusive). Views into the bytes it
/// was decoded from.
struct session_key {
    bytes_view key;
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
};

/// @brief Appends what follows the key in a session store key: the
/// session's end, then its start.
/// @throws usage_error end_ms before start_ms
inline void append_session_suffix(byte_buffer& out, std::int64_t start_ms, std::int64_t end_ms) {
    if (end_ms < start_ms)
        throw usage_error("strata::kafka_streams: a session store key for a session that ends (" +
                          std::to_string(end_ms) + ") before it starts (" + std::to_string(start_ms) + ")");
    detail::put_be64(out, end_ms);
    detail::put_be64(out, start_ms);
}

/// @brief The session store key of `key`'s session from `start_ms` to `end_ms`.
/// @throws usage_error end_ms before start_ms
[[nodiscard]] inline byte_buffer encode_session_key(bytes_view key, std::int64_t start_ms, std::int64_t end_ms) {
    byte_buffer out;
    out.reserve(key.size() + 16);
    out.insert(out.end(), key.begin(), key.end());
    append_session_suffix(out, start_ms, end_ms);
    return out;
}

/// @throws serde_error fewer than 16 bytes, or a session that ends before it starts
[[nodiscard]] inline session_key decode_session_key(bytes_view binary) {
    byte_reader r(binary, "Kafka Streams session store key");
    session_key k;
    k.key = detail::key_before(r, 16);
    k.end_ms = detail::get_be64(r.take(8));
    k.start_ms = detail::get_be64(r.take(8));
    if (k.end_ms < k.start_ms)
        r.fail("names a session that ends (" + std::to_string(k.end_ms) + ") before it starts (" +
               std::to_string(k.start_ms) + ")");
    return k;
}

/// @brief A timestamped store's value: the time of the record that wrote
/// it, and the serialized value. A view into the bytes it was decoded from.
struct timestamped_value {
    std::int64_t timestamp_ms = 0;
    bytes_view value;
};

[[nodiscard]] inline byte_buffer encode_timestamped_value(std::int64_t timestamp_ms, bytes_view value) {
    byte_buffer out;
    out.reserve(value.size() + 8);
    detail::put_be64(out, timestamp_ms);
    out.insert(out.end(), value.begin(), value.end());
    return out;
}

/// @throws serde_error fewer than 8 bytes
[[nodiscard]] inline timestamped_value decode_timestamped_value(bytes_view binary) {
    byte_reader r(binary, "Kafka Streams timestamped value");
    timestamped_value v;
    v.timestamp_ms = detail::get_be64(r.take(8));
    v.value = r.take(r.remaining());
    return v;
}

}  // namespace strata::kafka_streams
