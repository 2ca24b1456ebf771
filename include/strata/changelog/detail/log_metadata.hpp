#pragma once
/// @file
/// @brief The two small files beside a `file_log`'s segments that let it
/// tell lost data from data that never existed.
///
/// The manifest, `strata.manifest`, lists the segments the log holds, and
/// for each closed segment the end offset of its last flush. It is replaced
/// whole (temporary file, fdatasync, rename, directory fsync) when a segment
/// is added or removed, so a missing segment, or a closed segment cut short,
/// is found on open:
///
///     "SLM1"  magic
///     u32     number of segments
///     per segment: u64 base offset, u64 end offset (0 for the active one)
///     u32     CRC32C of every byte before it
///
/// The witness, `strata.flushed`, names how far the active segment has been
/// flushed: after every flush the log writes (without a sync of its own, so
/// a flush still costs one fdatasync) one of two 512-byte slots in turn:
///
///     "SLW1", u64 sequence, u64 active segment base, u64 flushed bytes,
///     u64 end offset, u32 CRC32C of the 36 bytes before it
///
/// It is written only after the flush's fdatasync returned, so it never
/// claims more than the disk holds. It survives a killed process (it is in
/// the page cache) and is synced when the log opens and when it rolls a
/// segment; after a power loss it may lag behind the last flushes.

#include <strata/detail/crc32c.hpp>
#include <strata/detail/little_endian.hpp>
#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace strata::detail {

inline constexpr std::string_view manifest_name = "strata.manifest";
inline constexpr std::string_view manifest_temp_name = "strata.manifest.tmp";
inline constexpr std::string_view witness_name = "strata.flushed";

/// @brief One segment as the manifest lists it.
struct manifest_entry {
    offset_t base = 0;
    offset_t end = 0;  ///< end offset of its last flush; 0 for the active segment
};

inline constexpr std::array<std::byte, 4> manifest_magic{std::byte{'S'}, std::byte{'L'}, std::byte{'M'},
                                                         std::byte{'1'}};
inline constexpr std::array<std::byte, 4> witness_magic{std::byte{'S'}, std::byte{'L'}, std::byte{'W'},
                                                        std::byte{'1'}};
inline constexpr std::size_t witness_slot_size = 40;
inline constexpr std::uint64_t witness_slot_stride = 512;  // each slot in its own disk sector

[[nodiscard]] inline byte_buffer encode_manifest(const std::vector<manifest_entry>& segments) {
    byte_buffer out(manifest_magic.begin(), manifest_magic.end());
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(segments.size()));
    for (const auto& s : segments) {
        put_le<std::uint64_t>(out, s.base);
        put_le<std::uint64_t>(out, s.end);
    }
    put_le<std::uint32_t>(out, crc32c(out));
    return out;
}

/// @returns the segments, or nullopt with `problem` set
[[nodiscard]] inline std::optional<std::vector<manifest_entry>> decode_manifest(bytes_view b,
                                                                               const char*& problem) {
    if (b.size() < 12 || !std::equal(manifest_magic.begin(), manifest_magic.end(), b.begin())) {
        problem = "not a file_log manifest (bad magic or truncated)";
        return std::nullopt;
    }
    if (load_le<std::uint32_t>(b.data() + b.size() - 4) != crc32c(b.first(b.size() - 4))) {
        problem = "manifest checksum mismatch";
        return std::nullopt;
    }
    const std::size_t count = load_le<std::uint32_t>(b.data() + 4);
    if (count == 0 || (b.size() - 12) / 16 != count || (b.size() - 12) % 16 != 0) {
        problem = "manifest length does not match its segment count";
        return std::nullopt;
    }
    std::vector<manifest_entry> out(count);
    for (std::size_t i = 0; i < count; ++i) {
        out[i].base = load_le<std::uint64_t>(b.data() + 8 + 16 * i);
        out[i].end = load_le<std::uint64_t>(b.data() + 16 + 16 * i);
        if (i > 0 && out[i].base <= out[i - 1].base) {
            problem = "manifest lists segments out of order";
            return std::nullopt;
        }
    }
    return out;
}

/// @brief What the witness says about the active segment.
struct witness {
    std::uint64_t sequence = 0;
    offset_t base = 0;          ///< the active segment it speaks of
    std::uint64_t bytes = 0;    ///< bytes of that segment covered by returned flushes
    offset_t end = 0;           ///< the log's durable end offset then
};

[[nodiscard]] inline byte_buffer encode_witness(const witness& w) {
    byte_buffer out(witness_magic.begin(), witness_magic.end());
    put_le<std::uint64_t>(out, w.sequence);
    put_le<std::uint64_t>(out, w.base);
    put_le<std::uint64_t>(out, w.bytes);
    put_le<std::uint64_t>(out, w.end);
    put_le<std::uint32_t>(out, crc32c(out));
    return out;
}

/// @returns the newest intact slot of a witness file's bytes, if any
[[nodiscard]] inline std::optional<witness> decode_witness(bytes_view file) {
    std::optional<witness> best;
    for (std::uint64_t at = 0; at + witness_slot_size <= file.size(); at += witness_slot_stride) {
        const bytes_view s = file.subspan(static_cast<std::size_t>(at), witness_slot_size);
        if (!std::equal(witness_magic.begin(), witness_magic.end(), s.begin())) continue;
        if (load_le<std::uint32_t>(s.data() + 36) != crc32c(s.first(36))) continue;
        const witness w{load_le<std::uint64_t>(s.data() + 4), load_le<std::uint64_t>(s.data() + 12),
                        load_le<std::uint64_t>(s.data() + 20), load_le<std::uint64_t>(s.data() + 28)};
        if (!best || w.sequence > best->sequence) best = w;
    }
    return best;
}

/// @brief Reads a whole small file, or nullopt when it does not exist.
template <file_system Fs>
[[nodiscard]] std::optional<byte_buffer> read_small_file(const Fs& fs, const std::filesystem::path& p) {
    if (!fs.exists(p)) return std::nullopt;
    const auto f = fs.open_read(p);
    byte_buffer out(static_cast<std::size_t>(std::min<std::uint64_t>(fs.size(f, p), std::uint64_t{1} << 26)));
    out.resize(fs.read_at(f, out, 0, p));
    return out;
}

/// @brief Replaces the manifest of the log in `dir`, durably.
template <file_system Fs>
void write_manifest(const Fs& fs, const std::filesystem::path& dir, const std::vector<manifest_entry>& segments) {
    const auto temp = dir / manifest_temp_name;
    {
        const auto f = fs.create_truncated(temp);
        fs.append(f, encode_manifest(segments), temp);
        fs.sync_data(f, temp);
    }
    fs.rename(temp, dir / manifest_name);
    fs.sync_directory(dir);
}

}  // namespace strata::detail
