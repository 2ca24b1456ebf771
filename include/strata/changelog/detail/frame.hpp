#pragma once
/// @file
/// @brief The on-disk frame of one changelog record in a `file_log` segment.
///
/// All integers little-endian:
///
///     [0, 4)    magic "SLG2" (the last byte is the format version)
///     [4, 8)    body length n (u32)
///     [8, 12)   CRC32C of the body
///     [12, 16)  CRC32C of bytes [0, 12)
///     [16, 16+n) body:
///                 offset     u64   the record's offset (compaction leaves gaps)
///                 flags      u8    bit 0: tombstone; bit 1: commit; bit 2:
///                                  timestamp; others 0
///                 key length u32
///                 timestamp  i64   only with flag bit 2: the record's time
///                 key bytes, then value bytes (the rest of the body)
///
/// A record without a time (record_view::timestamp is no_timestamp) has no
/// timestamp field, so logs written before records had times read the same.
///
/// A commit frame (flag bit 1, no key, an 8-byte value) ends every flush;
/// its offset field is the flush's end, one past its last record, and its
/// value the bytes of the flush's record frames before it (u64), so that a
/// reader can tell where the flush began. A record is
/// only part of the log once a commit frame follows it: frames after the
/// last commit belong to a flush that never returned, and opening the log
/// cuts them, so a restore sees all of a flush or none of it.
///
/// The prefix has its own checksum so that a length can be trusted before
/// the body is read: a frame whose intact prefix promises more bytes than
/// the file holds is a torn write, and bytes inside a frame's extent are
/// never mistaken for frames of their own.

#include <strata/detail/crc32c.hpp>
#include <strata/detail/little_endian.hpp>
#include <strata/core/bytes.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace strata::detail::frame {

inline constexpr std::array<std::byte, 4> magic{std::byte{'S'}, std::byte{'L'}, std::byte{'G'},
                                                std::byte{'2'}};
inline constexpr std::size_t prefix_size = 16;
inline constexpr std::size_t body_header_size = 13;
inline constexpr std::uint8_t tombstone_flag = 1;
inline constexpr std::uint8_t commit_flag = 2;
inline constexpr std::uint8_t timestamp_flag = 4;
/// Bytes of the timestamp field, in a frame that has one.
inline constexpr std::size_t timestamp_size = 8;
/// Bytes of a commit frame.
inline constexpr std::size_t commit_size = prefix_size + body_header_size + 8;
/// Largest body a frame may carry; keeps every size inside u32 and sane.
inline constexpr std::size_t max_body_size = std::size_t{1} << 31;

/// @brief Bytes a record occupies on disk, or nullopt when it is too large.
[[nodiscard]] inline std::optional<std::size_t> encoded_size(const record_view& r) noexcept {
    const std::size_t value = r.value ? r.value->size() : 0;
    const std::size_t header = body_header_size + (r.has_timestamp() ? timestamp_size : 0);
    if (r.key.size() > max_body_size || value > max_body_size - r.key.size() - header) return std::nullopt;
    return prefix_size + header + r.key.size() + value;
}

inline void encode_frame(byte_buffer& out, std::uint8_t flags, offset_t offset, bytes_view key,
                         const bytes_view* value, std::int64_t timestamp = no_timestamp) {
    const std::size_t start = out.size();
    const std::size_t value_len = value ? value->size() : 0;
    const bool timed = timestamp != no_timestamp;
    if (timed) flags |= timestamp_flag;
    const auto body_len =
        static_cast<std::uint32_t>(body_header_size + (timed ? timestamp_size : 0) + key.size() + value_len);
    out.insert(out.end(), magic.begin(), magic.end());
    put_le<std::uint32_t>(out, body_len);
    put_le<std::uint32_t>(out, 0);  // body CRC, filled in below
    put_le<std::uint32_t>(out, 0);  // prefix CRC
    put_le<std::uint64_t>(out, offset);
    out.push_back(std::byte{flags});
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(key.size()));
    if (timed) put_le<std::uint64_t>(out, static_cast<std::uint64_t>(timestamp));
    append_bytes(out, key);
    if (value) append_bytes(out, *value);

    std::byte* f = out.data() + start;
    store_le<std::uint32_t>(f + 8, crc32c(bytes_view(f + prefix_size, body_len)));
    store_le<std::uint32_t>(f + 12, crc32c(bytes_view(f, 12)));
}

/// @pre encoded_size(r) has a value.
inline void encode(byte_buffer& out, const record_view& r, offset_t offset) {
    encode_frame(out, r.value ? std::uint8_t{0} : tombstone_flag, offset, r.key, r.value ? &*r.value : nullptr,
                 r.timestamp);
}

/// @brief Appends the commit frame of a flush that ends at `end` and whose
/// record frames take the `flush_bytes` bytes before it.
inline void encode_commit(byte_buffer& out, offset_t end, std::uint64_t flush_bytes) {
    byte_buffer len;
    put_le<std::uint64_t>(len, flush_bytes);
    const bytes_view value(len);
    encode_frame(out, commit_flag, end, {}, &value);
}

/// @brief What the prefix says, once its checksum holds.
struct prefix_info {
    std::uint32_t body_len = 0;
    std::uint32_t body_crc = 0;
    [[nodiscard]] std::size_t frame_size() const noexcept { return prefix_size + body_len; }
};

/// @brief Checks a frame prefix.
/// @param p the first `prefix_size` bytes of a candidate frame
/// @returns the prefix, or nullopt with `problem` set
[[nodiscard]] inline std::optional<prefix_info> check_prefix(const std::byte* p,
                                                             const char*& problem) noexcept {
    for (std::size_t i = 0; i < magic.size(); ++i)
        if (p[i] != magic[i]) {
            problem = i == 3 && p[3] == std::byte{'1'}
                          ? "frame of format version 1 (written by an older strata, which had no commit frames)"
                          : "bad frame magic";
            return std::nullopt;
        }
    if (load_le<std::uint32_t>(p + 12) != crc32c(bytes_view(p, 12))) {
        problem = "frame header checksum mismatch";
        return std::nullopt;
    }
    prefix_info info{load_le<std::uint32_t>(p + 4), load_le<std::uint32_t>(p + 8)};
    if (info.body_len < body_header_size || info.body_len > max_body_size) {
        problem = "impossible frame length";
        return std::nullopt;
    }
    return info;
}

/// @brief What `decode_body_into` found.
enum class body_kind { bad, record, commit };

/// @brief Checks a body against its prefix and fills `rec` with the record
/// inside it (viewing `body`), or for a commit frame `rec.offset` with the
/// flush's end and `flush_bytes` with its size.
///
/// Fills the caller's record field by field, so that a replay can decode
/// straight into the slot the record is handed out from: a record built in
/// one place and then copied whole is read back in wider pieces than it was
/// written, which the processor cannot forward from its store buffer, and
/// each such copy stalls for about a dozen cycles.
/// @param body exactly `info.body_len` bytes
/// @returns the kind of frame, or `bad` with `problem` set
[[nodiscard]] inline body_kind decode_body_into(const prefix_info& info, bytes_view body, record_view& rec,
                                                std::uint64_t& flush_bytes, const char*& problem) noexcept {
    if (crc32c(body) != info.body_crc) {
        problem = "frame checksum mismatch";
        return body_kind::bad;
    }
    const std::byte* b = body.data();
    const auto flags = static_cast<std::uint8_t>(b[8]);
    const std::size_t key_len = load_le<std::uint32_t>(b + 9);
    std::size_t header = body_header_size;
    if ((flags & ~(tombstone_flag | commit_flag | timestamp_flag)) != 0 ||
        ((flags & commit_flag) != 0 && (flags & (tombstone_flag | timestamp_flag)) != 0)) {
        problem = "unknown frame flags";
        return body_kind::bad;
    }
    rec.offset = load_le<std::uint64_t>(b);
    rec.timestamp = no_timestamp;
    if ((flags & timestamp_flag) != 0) {
        if (body.size() < header + timestamp_size) {
            problem = "timestamp runs past the frame";
            return body_kind::bad;
        }
        const auto t = static_cast<std::int64_t>(load_le<std::uint64_t>(b + header));
        if (t < 0) {
            problem = "negative record timestamp";
            return body_kind::bad;
        }
        rec.timestamp = t;
        header += timestamp_size;
    }
    const std::size_t rest = body.size() - header;
    if ((flags & commit_flag) != 0) {
        if (key_len != 0 || rest != 8) {
            problem = "commit frame of the wrong shape";
            return body_kind::bad;
        }
        rec.key = {};
        rec.value.reset();
        flush_bytes = load_le<std::uint64_t>(b + body_header_size);
        return body_kind::commit;
    }
    if (key_len > rest) {
        problem = "key length runs past the frame";
        return body_kind::bad;
    }
    rec.key = body.subspan(header, key_len);
    if ((flags & tombstone_flag) != 0) {
        if (key_len != rest) {
            problem = "tombstone frame carries a value";
            return body_kind::bad;
        }
        rec.value.reset();
    } else {
        rec.value = body.subspan(header + key_len);
    }
    return body_kind::record;
}

/// @brief A checked frame: a record, or the commit frame of a flush
/// (whose `rec.offset` is the flush's end).
struct decoded {
    record_view rec;
    bool commit = false;
    std::uint64_t flush_bytes = 0;  ///< commit frames: bytes of the flush's records
};

/// @brief Checks a body against its prefix and views the record inside it.
/// @param body exactly `info.body_len` bytes
/// @returns the frame (viewing `body`), or nullopt with `problem` set
[[nodiscard]] inline std::optional<decoded> decode_body(const prefix_info& info, bytes_view body,
                                                        const char*& problem) noexcept {
    std::optional<decoded> out(std::in_place);
    const body_kind k = decode_body_into(info, body, out->rec, out->flush_bytes, problem);
    if (k == body_kind::bad) return std::nullopt;
    out->commit = k == body_kind::commit;
    return out;
}

/// @brief The whole valid frame that starts at `p` and ends within `avail`
/// bytes, if there is one.
[[nodiscard]] inline std::optional<decoded> valid_frame_at(const std::byte* p, std::size_t avail) noexcept {
    if (avail < prefix_size) return std::nullopt;
    const char* problem = nullptr;
    const auto info = check_prefix(p, problem);
    if (!info || info->frame_size() > avail) return std::nullopt;
    return decode_body(*info, bytes_view(p + prefix_size, info->body_len), problem);
}

}  // namespace strata::detail::frame
