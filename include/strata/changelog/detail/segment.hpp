#pragma once
/// @file
/// @brief Segment files of a `file_log`: their names, and a reader that walks
/// their frames front to back, checking every length against the file size
/// before it trusts it.

#include <strata/changelog/detail/frame.hpp>
#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
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

inline constexpr std::string_view segment_suffix = ".log";
inline constexpr std::size_t segment_digits = 20;  // enough for any u64

/// @brief "00000000000000001234.log": zero-padded so names sort like offsets.
[[nodiscard]] inline std::string segment_file_name(offset_t base) {
    char digits[segment_digits + 1];
    std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(base));
    return std::string(digits) + std::string(segment_suffix);
}

/// @returns the base offset a segment file name encodes, or nullopt for any other name
[[nodiscard]] inline std::optional<offset_t> parse_segment_file_name(std::string_view name) {
    if (name.size() != segment_digits + segment_suffix.size() || !name.ends_with(segment_suffix))
        return std::nullopt;
    offset_t v = 0;
    for (std::size_t i = 0; i < segment_digits; ++i) {
        const char c = name[i];
        if (c < '0' || c > '9') return std::nullopt;
        const auto d = static_cast<offset_t>(c - '0');
        if (v > (~offset_t{0} - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

/// @brief One step of a segment walk.
struct segment_item {
    /// A commit frame ends each flush; its `rec.offset` is the flush's end.
    enum class kind { record, commit, end, bad };
    kind what = kind::end;
    record_view rec;           ///< kind::record, kind::commit; valid until the next step
    std::uint64_t flush_bytes = 0;  ///< kind::commit: bytes of the flush's record frames
    bytes_view raw;            ///< kind::record: the whole frame as stored
    std::uint64_t pos = 0;     ///< where the frame starts (record, bad)
    const char* problem = "";  ///< kind::bad: what is wrong
    /// kind::bad: the frame's intact prefix promises more bytes than the
    /// file holds, so it can only be an interrupted write.
    bool runs_past_end = false;
    /// kind::bad: the first byte a following frame could start at (past the
    /// bad frame when its prefix is trustworthy, else the next byte).
    std::uint64_t resume = 0;
};

/// @brief Reads the frames of one segment file in [start, limit), through a
/// buffer refilled with positioned reads. Borrows the file.
template <file_system Fs>
class segment_reader {
public:
    segment_reader(const Fs& fs, const typename Fs::file& file, std::filesystem::path path,
                   std::uint64_t limit, std::uint64_t start = 0)
        : fs_(&fs), file_(&file), path_(std::move(path)), limit_(limit), pos_(start) {}

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

    /// @brief The next frame. After `bad` or `end`, the reader stays put.
    [[nodiscard]] segment_item next() {
        segment_item it;
        read(it, it.rec);
        return it;
    }

    /// @brief The next frame, with a record's (or commit's) fields written
    /// to `rec` rather than to the item's own `rec`: a replay decodes
    /// straight into the slot it hands the record out from (see
    /// frame::decode_body_into).
    [[nodiscard]] segment_item next(record_view& rec) {
        segment_item it;
        read(it, rec);
        return it;
    }

    /// @brief The next frame, without moving on: the following `next()`
    /// returns it again (from the buffer, without reading it twice).
    [[nodiscard]] segment_item peek() {
        const std::uint64_t at = pos_;
        segment_item it = next();
        pos_ = at;
        return it;
    }

    /// @brief Whether the next frame lies whole in the buffer, so that
    /// `next()` returns it without a read, and views of frames returned
    /// before stay valid. Reads the prefix's length without checking it: a
    /// damaged prefix answers either way, and `next()` reports it.
    [[nodiscard]] bool next_is_buffered() const noexcept {
        const std::uint64_t buf_end = buf_start_ + buf_len_;
        if (pos_ < buf_start_ || pos_ >= limit_ || pos_ + frame::prefix_size > buf_end) return false;
        const std::byte* p = buf_.data() + (pos_ - buf_start_);
        return pos_ + frame::prefix_size + load_le<std::uint32_t>(p + 4) <= buf_end;
    }

private:
    static constexpr std::size_t chunk_size = 256 * 1024;

    void read(segment_item& it, record_view& rec) {
        it.pos = pos_;
        if (pos_ >= limit_) return;
        it.what = segment_item::kind::bad;
        const std::uint64_t left = limit_ - pos_;
        if (left < frame::prefix_size) {
            it.problem = "truncated frame header";
            it.runs_past_end = true;
            it.resume = limit_;
            return;
        }
        const std::byte* p = window(frame::prefix_size);
        const auto info = frame::check_prefix(p, it.problem);
        if (!info) {
            it.resume = pos_ + 1;
            return;
        }
        if (info->frame_size() > left) {
            it.problem = "frame runs past end of file";
            it.runs_past_end = true;
            it.resume = limit_;
            return;
        }
        p = window(info->frame_size());
        const frame::body_kind k = frame::decode_body_into(
            *info, bytes_view(p + frame::prefix_size, info->body_len), rec, it.flush_bytes, it.problem);
        if (k == frame::body_kind::bad) {
            it.resume = pos_ + info->frame_size();
            return;
        }
        it.what = k == frame::body_kind::commit ? segment_item::kind::commit : segment_item::kind::record;
        it.raw = bytes_view(p, info->frame_size());
        pos_ += info->frame_size();
    }

    /// Makes file bytes [pos_, pos_ + n) contiguous in the buffer.
    /// @pre pos_ + n <= limit_, so n is bounded by the file's real size.
    const std::byte* window(std::size_t n) {
        const std::uint64_t buf_end = buf_start_ + buf_len_;
        if (pos_ >= buf_start_ && pos_ + n <= buf_end) return buf_.data() + (pos_ - buf_start_);
        std::size_t keep = 0;
        if (pos_ >= buf_start_ && pos_ < buf_end) {
            keep = static_cast<std::size_t>(buf_end - pos_);
            std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(pos_ - buf_start_),
                      buf_.begin() + static_cast<std::ptrdiff_t>(buf_len_), buf_.begin());
        }
        buf_start_ = pos_;
        buf_len_ = keep;
        const std::size_t want = std::max(
            keep, static_cast<std::size_t>(
                      std::min<std::uint64_t>(std::max(n, chunk_size), limit_ - pos_)));
        if (buf_.size() < want) buf_.resize(want);
        buf_len_ += fs_->read_at(*file_, std::span(buf_.data() + keep, want - keep), pos_ + keep, path_);
        if (buf_len_ < n)
            throw corruption_error(path_.string(), pos_, "file is shorter than when it was opened");
        return buf_.data();
    }

    const Fs* fs_;
    const typename Fs::file* file_;
    std::filesystem::path path_;
    std::uint64_t limit_;
    std::uint64_t pos_;
    byte_buffer buf_;
    std::uint64_t buf_start_ = 0;
    std::size_t buf_len_ = 0;
};

/// @brief A valid commit frame found by `commit_frames_in`.
struct found_commit {
    std::uint64_t pos = 0;          ///< where it starts in the file
    std::uint64_t flush_bytes = 0;  ///< bytes of its flush's records before it
};

/// @brief The valid commit frames that start in [from, limit) of a file, in
/// file order. Tells a torn tail (no flush committed after the damage) from
/// damage in the middle of the log.
template <file_system Fs>
[[nodiscard]] std::vector<found_commit> commit_frames_in(const Fs& fs, const typename Fs::file& file,
                                                         const std::filesystem::path& path, std::uint64_t from,
                                                         std::uint64_t limit) {
    std::vector<found_commit> out;
    if (from >= limit) return out;
    byte_buffer tail(static_cast<std::size_t>(limit - from));
    const std::size_t got = fs.read_at(file, tail, from, path);
    for (std::size_t q = 0; q + frame::prefix_size <= got; ++q) {
        if (tail[q] != frame::magic[0]) continue;
        const auto f = frame::valid_frame_at(tail.data() + q, got - q);
        if (f && f->commit) out.push_back({from + q, f->flush_bytes});
    }
    return out;
}

}  // namespace strata::detail
