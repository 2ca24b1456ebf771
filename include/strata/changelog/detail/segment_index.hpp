#pragma once
/// @file
/// @brief The index file of a sealed `file_log` segment: what opening the
/// log needs to know about the segment without reading it, and a sparse map
/// from offsets to byte positions that lets a replay start near any offset.
///
/// `<base>.index` sits beside `<base>.log`. It is written when the segment
/// is sealed (before the manifest calls it closed) and again whenever a
/// compaction rewrites the segment, always whole: temporary file, fdatasync,
/// rename. It is derived data: the segment alone is the truth, so a missing
/// or damaged index, or one that disagrees with the segment's size or the
/// manifest, only costs a scan of that segment. Logs written before indexes
/// existed open that way (and get their indexes then); older strata ignores
/// the files.
///
/// All integers little-endian:
///
///     [0, 4)    magic "SLX1"
///     [4, 8)    number of sparse entries n (u32)
///     [8, 16)   base offset of the segment
///     [16, 24)  byte length of the segment: a file of another size is not the
///               one indexed
///     [24, 32)  end offset of its last flush (the manifest says the same)
///     [32, 40)  offset of its first record (the end offset when it has none)
///     [40, 48)  offset of its last record (the base when it has none)
///     [48, 56)  number of records (tombstones included, commit frames not)
///     [56, 64)  when it was sealed: milliseconds since the Unix epoch; a
///               compaction keeps it (tombstone retention counts from it)
///     [64, 68)  flags: bit 0 cleaned (each key at most once in this segment
///               and the ones before it, see file_log's compaction)
///     [68, 72)  CRC32C of the entries
///     [72, 76)  CRC32C of bytes [0, 72)
///     [76, ...) n entries: u64 offset, u64 byte position of that record's frame
///
/// An entry is added at the first record frame at least `interval` bytes
/// past the previous entry (the first at least `interval` bytes into the
/// file), so the index of a 64 MiB segment with 64 KiB intervals is 16 KiB.

#include <strata/detail/crc32c.hpp>
#include <strata/detail/little_endian.hpp>
#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::detail {

inline constexpr std::string_view index_suffix = ".index";
inline constexpr std::string_view index_temp_suffix = ".index.tmp";
inline constexpr std::array<std::byte, 4> index_magic{std::byte{'S'}, std::byte{'L'}, std::byte{'X'},
                                                      std::byte{'1'}};
inline constexpr std::size_t index_header_size = 76;
inline constexpr std::size_t index_entry_size = 16;
inline constexpr std::uint32_t index_cleaned_flag = 1;

/// @brief "00000000000000001234.index", the index of "00000000000000001234.log".
[[nodiscard]] inline std::string index_file_name(offset_t base) {
    char digits[21];
    std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(base));
    return std::string(digits) + std::string(index_suffix);
}

/// @brief One sparse entry: the record at `offset` starts at byte `pos`.
struct index_entry {
    offset_t offset = 0;
    std::uint64_t pos = 0;
    friend bool operator==(const index_entry&, const index_entry&) = default;
};

/// @brief What the index says about its segment.
struct segment_summary {
    offset_t base = 0;
    std::uint64_t bytes = 0;
    offset_t end = 0;
    offset_t first = 0;
    offset_t last = 0;
    std::uint64_t records = 0;
    std::int64_t sealed_at_ms = 0;
    bool cleaned = false;
    friend bool operator==(const segment_summary&, const segment_summary&) = default;
};

/// @brief Collects sparse entries while frames are written or read in file order.
class sparse_index_builder {
public:
    explicit sparse_index_builder(std::uint64_t interval) : interval_(std::max<std::uint64_t>(interval, 1)) {}
    /// Goes on from the entries of a segment read on open.
    sparse_index_builder(std::uint64_t interval, std::vector<index_entry> entries)
        : interval_(std::max<std::uint64_t>(interval, 1)), entries_(std::move(entries)) {
        if (!entries_.empty()) next_ = entries_.back().pos + interval_;
    }

    /// @returns whether a frame starting before `pos` would get an entry:
    /// lets a writer skip walking frames that cannot.
    [[nodiscard]] bool wants_before(std::uint64_t pos) const noexcept { return next_ < pos; }

    /// Notes the record `offset` whose frame starts at `pos`.
    void add(offset_t offset, std::uint64_t pos) {
        if (pos < next_) return;
        entries_.push_back({offset, pos});
        next_ = pos + interval_;
    }
    /// Forgets entries at or past `pos` (bytes cut from the file).
    void cut(std::uint64_t pos) {
        while (!entries_.empty() && entries_.back().pos >= pos) entries_.pop_back();
        next_ = entries_.empty() ? interval_ : entries_.back().pos + interval_;
    }
    [[nodiscard]] const std::vector<index_entry>& entries() const noexcept { return entries_; }

private:
    std::uint64_t interval_;
    std::uint64_t next_ = interval_;
    std::vector<index_entry> entries_;
};

/// @returns the entry to start a replay from `from` at: the last one whose
/// offset is at most `from`, if any
[[nodiscard]] inline std::optional<index_entry> seek_entry(const std::vector<index_entry>& entries, offset_t from) {
    const auto it = std::upper_bound(entries.begin(), entries.end(), from,
                                     [](offset_t f, const index_entry& e) { return f < e.offset; });
    if (it == entries.begin()) return std::nullopt;
    return *std::prev(it);
}

[[nodiscard]] inline byte_buffer encode_index(const segment_summary& s, const std::vector<index_entry>& entries) {
    byte_buffer body;
    for (const auto& e : entries) {
        put_le<std::uint64_t>(body, e.offset);
        put_le<std::uint64_t>(body, e.pos);
    }
    byte_buffer out(index_magic.begin(), index_magic.end());
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(entries.size()));
    put_le<std::uint64_t>(out, s.base);
    put_le<std::uint64_t>(out, s.bytes);
    put_le<std::uint64_t>(out, s.end);
    put_le<std::uint64_t>(out, s.first);
    put_le<std::uint64_t>(out, s.last);
    put_le<std::uint64_t>(out, s.records);
    put_le<std::uint64_t>(out, static_cast<std::uint64_t>(s.sealed_at_ms));
    put_le<std::uint32_t>(out, s.cleaned ? index_cleaned_flag : 0);
    put_le<std::uint32_t>(out, crc32c(body));
    put_le<std::uint32_t>(out, crc32c(out));
    append_bytes(out, body);
    return out;
}

/// @brief A checked index header, and how many entries follow it.
struct index_header {
    segment_summary summary;
    std::uint32_t entry_count = 0;
    std::uint32_t entries_crc = 0;
};

/// @returns the header in the first `index_header_size` bytes of `b`, or
/// nullopt when it is not an intact index header
[[nodiscard]] inline std::optional<index_header> decode_index_header(bytes_view b) {
    if (b.size() < index_header_size || !std::equal(index_magic.begin(), index_magic.end(), b.begin()))
        return std::nullopt;
    const std::byte* p = b.data();
    if (load_le<std::uint32_t>(p + 72) != crc32c(b.first(72))) return std::nullopt;
    index_header h;
    h.entry_count = load_le<std::uint32_t>(p + 4);
    h.summary.base = load_le<std::uint64_t>(p + 8);
    h.summary.bytes = load_le<std::uint64_t>(p + 16);
    h.summary.end = load_le<std::uint64_t>(p + 24);
    h.summary.first = load_le<std::uint64_t>(p + 32);
    h.summary.last = load_le<std::uint64_t>(p + 40);
    h.summary.records = load_le<std::uint64_t>(p + 48);
    h.summary.sealed_at_ms = static_cast<std::int64_t>(load_le<std::uint64_t>(p + 56));
    const std::uint32_t flags = load_le<std::uint32_t>(p + 64);
    if ((flags & ~index_cleaned_flag) != 0) return std::nullopt;
    h.summary.cleaned = (flags & index_cleaned_flag) != 0;
    h.entries_crc = load_le<std::uint32_t>(p + 68);
    return h;
}

/// @brief Reads the index of segment `base` in `dir`: what opening the log
/// costs per sealed segment.
/// @returns nullopt when the file is missing, short or damaged
template <file_system Fs>
[[nodiscard]] std::optional<std::pair<segment_summary, std::vector<index_entry>>> read_index(
    const Fs& fs, const std::filesystem::path& dir, offset_t base) {
    const auto path = dir / index_file_name(base);
    if (!fs.exists(path)) return std::nullopt;
    const auto f = fs.open_read(path);
    const std::uint64_t size = fs.size(f, path);
    if (size < index_header_size || size > (std::uint64_t{1} << 32)) return std::nullopt;
    byte_buffer buf(static_cast<std::size_t>(size));
    if (fs.read_at(f, buf, 0, path) != buf.size()) return std::nullopt;
    const auto h = decode_index_header(buf);
    if (!h || buf.size() != index_header_size + std::size_t{h->entry_count} * index_entry_size) return std::nullopt;
    const bytes_view body = bytes_view(buf).subspan(index_header_size);
    if (crc32c(body) != h->entries_crc) return std::nullopt;
    std::vector<index_entry> entries(h->entry_count);
    for (std::size_t i = 0; i < entries.size(); ++i)
        entries[i] = {load_le<std::uint64_t>(body.data() + i * index_entry_size),
                      load_le<std::uint64_t>(body.data() + i * index_entry_size + 8)};
    return std::pair{h->summary, std::move(entries)};
}

/// @brief Writes the index of a segment to its temporary name and syncs it.
/// `publish_index` then renames it into place; the caller syncs the directory.
template <file_system Fs>
void write_index_temp(const Fs& fs, const std::filesystem::path& dir, const segment_summary& s,
                      const std::vector<index_entry>& entries) {
    const auto temp = dir / (index_file_name(s.base) + ".tmp");
    const auto f = fs.create_truncated(temp);
    fs.append(f, encode_index(s, entries), temp);
    fs.sync_data(f, temp);
}

template <file_system Fs>
void publish_index(const Fs& fs, const std::filesystem::path& dir, offset_t base) {
    fs.rename(dir / (index_file_name(base) + ".tmp"), dir / index_file_name(base));
}

}  // namespace strata::detail
