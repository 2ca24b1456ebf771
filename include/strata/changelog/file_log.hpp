#pragma once
/// @file
/// @brief `strata::file_log`: the embedded durable changelog. Records live in
/// a directory of append-only segment files; each record is one frame with
/// its own length and CRC32C checksums (see changelog/detail/frame.hpp), so
/// that after a crash the log knows exactly which bytes it can trust.
///
/// Contract, in short:
/// - `append` only buffers (a copy). `flush` writes the buffer with write(2)
///   and fdatasync, and returns the durable end offset. Unflushed appends are
///   not durable: the destructor drops them rather than half-write them.
/// - `replay(from)` is a snapshot taken when it is called: the flushed bytes
///   of every segment at that moment plus a copy of the unflushed records, so
///   it yields every record appended so far, like `memory_log` does.
/// - On open, every segment is checked frame by frame. A torn tail of the
///   last segment (a frame cut short by a crash, or damage after which no
///   valid frame follows) is cut off; damage anywhere else is reported as
///   `corruption_error` naming the file and byte offset.
/// - One process at a time: the directory is locked with flock(2).

#include <strata/changelog/detail/frame.hpp>
#include <strata/changelog/detail/posix_file.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>

namespace strata {

/// @brief Tuning of a `file_log`.
struct file_log_options {
    /// A segment is closed once it would grow past this many bytes (a single
    /// larger record still gets a segment of its own). Only closed segments
    /// are compacted, so smaller segments compact sooner.
    std::uint64_t segment_bytes = std::uint64_t{64} << 20;
};

/// @brief What one `file_log::compact()` did.
struct compaction_stats {
    std::size_t segments_rewritten = 0;
    std::size_t segments_removed = 0;  ///< closed segments left with no record at all
    std::uint64_t records_dropped = 0;
    std::uint64_t bytes_before = 0;    ///< of the segments rewritten or removed
    std::uint64_t bytes_after = 0;
};

/// @brief A durable changelog in a local directory; satisfies `changelog`.
///
/// Movable, not copyable; not safe to use from several threads at once.
class file_log {
public:
    class replay_range;

    /// @brief Opens (creating it if needed) the log in `dir`, checking every
    /// segment and cutting a torn tail off the last one.
    /// @throws corruption_error damage that is not a torn tail
    /// @throws changelog_error an I/O error, or the directory is open elsewhere
    explicit file_log(std::filesystem::path dir, file_log_options options = {})
        : dir_(std::move(dir)), options_(options) {
        open();
    }

    file_log(file_log&&) noexcept = default;
    file_log& operator=(file_log&&) noexcept = default;
    file_log(const file_log&) = delete;
    file_log& operator=(const file_log&) = delete;
    /// Closes the files. Records appended since the last flush are dropped:
    /// only `flush` promises durability, and a destructor cannot report failure.
    ~file_log() = default;

    /// @brief Buffers a copy of `r` under the next offset (`r.offset` is ignored).
    /// @returns the offset the record got
    /// @throws changelog_error the record is too large for a frame, or the
    ///         log failed an earlier flush
    offset_t append(const record_view& r) {
        check_usable();
        const auto size = detail::frame::encoded_size(r);
        if (!size)
            throw changelog_error("strata: record too large for file_log in " + dir_.string());
        const offset_t offset = next_offset_;
        if (tail_segment_bytes_ > 0 && tail_segment_bytes_ + *size > options_.segment_bytes) {
            pending_.push_back(pending_chunk{offset, true, std::exchange(spare_, {}), offset});
            tail_segment_bytes_ = 0;
        } else if (pending_.empty()) {
            pending_.push_back(pending_chunk{offset, false, std::exchange(spare_, {}), offset});
        }
        detail::frame::encode(pending_.back().bytes, r, offset);
        pending_.back().end = offset + 1;
        tail_segment_bytes_ += *size;
        return next_offset_++;
    }

    /// @brief Writes and fdatasyncs everything appended.
    /// @returns the durable end: one past the last durable record
    /// @throws changelog_error on an I/O error; the log then refuses further
    ///         appends and flushes (after a failed fsync nobody knows what is
    ///         on disk), and reopening it recovers the durable prefix
    offset_t flush() {
        check_usable();
        try {
            while (!pending_.empty()) {
                pending_chunk& c = pending_.front();
                if (c.new_segment) start_segment(c.base);
                segment& s = segments_.back();
                detail::write_all<changelog_error>(active_fd_.get(), c.bytes, s.path);
                detail::sync_data<changelog_error>(active_fd_.get(), s.path);
                s.size += c.bytes.size();
                durable_end_ = c.end;
                // Keep the buffer's memory for the next appends: regrowing it
                // after every flush costs page faults on every commit.
                c.bytes.clear();
                spare_ = std::move(c.bytes);
                pending_.erase(pending_.begin());
            }
        } catch (...) {
            broken_ = true;
            throw;
        }
        return durable_end_;
    }

    /// @brief One past the last record appended (flushed or not).
    [[nodiscard]] offset_t end_offset() const noexcept { return next_offset_; }

    /// @brief One past the last record known to be durable.
    [[nodiscard]] offset_t durable_offset() const noexcept { return durable_end_; }

    /// @brief The records with offset >= from, in offset order, as a snapshot
    /// taken now (see the file comment). Each `record_view` is valid until
    /// the iterator moves on.
    /// @throws corruption_error (while iterating) a file changed under the log
    [[nodiscard]] replay_range replay(offset_t from = 0) const;

    /// @brief Rewrites the closed segments so that each keeps only records
    /// whose key has no later durable record anywhere in the log. Offsets are
    /// kept, so replay afterwards shows gaps. Tombstones are kept too: a
    /// tombstone must stay until no older value of its key can be replayed,
    /// and keeping it is the simple choice that is always correct.
    ///
    /// Crash safe: a segment is rewritten to a temporary file, fsynced and
    /// renamed over the original, then the directory is fsynced. Unflushed
    /// appends neither take part nor supersede anything (they may never be
    /// durable). Replays already started keep reading the old files.
    compaction_stats compact();

    [[nodiscard]] const std::filesystem::path& directory() const noexcept { return dir_; }
    [[nodiscard]] std::size_t segment_count() const noexcept { return segments_.size(); }
    /// @brief Base offsets of the segments, oldest first; the last is the active one.
    [[nodiscard]] std::vector<offset_t> segment_base_offsets() const {
        std::vector<offset_t> out;
        for (const auto& s : segments_) out.push_back(s.base);
        return out;
    }
    [[nodiscard]] std::vector<std::filesystem::path> segment_paths() const {
        std::vector<std::filesystem::path> out;
        for (const auto& s : segments_) out.push_back(s.path);
        return out;
    }
    /// @brief Bytes of torn tail that opening the log cut off (0 after a clean close).
    [[nodiscard]] std::uint64_t truncated_bytes() const noexcept { return truncated_bytes_; }

private:
    struct segment {
        offset_t base = 0;
        std::filesystem::path path;
        std::uint64_t size = 0;  ///< durable, valid bytes
    };
    /// Frames bound for one segment, written by the next flush.
    struct pending_chunk {
        offset_t base = 0;
        bool new_segment = false;  ///< the chunk opens a segment named by `base`
        byte_buffer bytes;
        offset_t end = 0;  ///< one past its last record
    };

    static constexpr std::string_view lock_name = "strata.lock";
    static constexpr std::string_view temp_suffix = ".compacting";

    void check_usable() const {
        if (broken_)
            throw changelog_error("strata: file_log in " + dir_.string() +
                                  " failed an earlier flush; reopen it to recover");
    }

    void open() {
        std::error_code ec;
        std::filesystem::create_directories(dir_, ec);
        if (ec)
            throw changelog_error("strata: cannot create directory " + dir_.string() + ": " +
                                  ec.message());
        lock_fd_ = detail::open_file<changelog_error>(dir_ / lock_name, O_RDWR | O_CREAT);
        if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK)
                throw changelog_error("strata: file_log in " + dir_.string() +
                                      " is already open elsewhere");
            detail::throw_errno<changelog_error>("flock", dir_ / lock_name, errno);
        }

        std::filesystem::directory_iterator entries(dir_, ec);
        for (; !ec && entries != std::filesystem::directory_iterator(); entries.increment(ec)) {
            const auto& p = entries->path();
            const std::string name = p.filename().string();
            if (name.ends_with(temp_suffix)) {
                std::filesystem::remove(p, ec);  // left by an interrupted compaction
            } else if (const auto base = detail::parse_segment_file_name(name)) {
                segments_.push_back(segment{*base, p, 0});
            }
        }
        if (ec)
            throw changelog_error("strata: cannot list " + dir_.string() + ": " + ec.message());
        std::sort(segments_.begin(), segments_.end(),
                  [](const segment& a, const segment& b) { return a.base < b.base; });

        if (segments_.empty()) {
            start_segment(0);
            return;
        }

        std::optional<offset_t> last;
        for (std::size_t i = 0; i < segments_.size(); ++i)
            last = scan_segment(segments_[i], i + 1 == segments_.size(), last);

        segment& active = segments_.back();
        active_fd_ = detail::open_file<changelog_error>(active.path, O_WRONLY | O_APPEND);
        next_offset_ = durable_end_ = std::max(last ? *last + 1 : 0, active.base);
        tail_segment_bytes_ = active.size;
    }

    /// Checks every frame of one segment; cuts a torn tail off the last one.
    /// @returns the offset of the last record seen so far in the log
    std::optional<offset_t> scan_segment(segment& s, bool is_last, std::optional<offset_t> last) {
        if (last && s.base <= *last)
            throw corruption_error(s.path.string(), 0,
                                   "segment starts at or below an offset an earlier segment holds");
        const detail::unique_fd fd = detail::open_file<changelog_error>(s.path, O_RDONLY);
        const std::uint64_t size = detail::file_size<changelog_error>(fd.get(), s.path);
        detail::segment_reader reader(fd.get(), s.path, size);
        for (;;) {
            const detail::segment_item it = reader.next();
            using kind = detail::segment_item::kind;
            if (it.what == kind::end) break;
            if (it.what == kind::record) {
                if (it.rec.offset < s.base || (last && it.rec.offset <= *last))
                    throw corruption_error(s.path.string(), it.pos,
                                           "record offset " + std::to_string(it.rec.offset) +
                                               " is out of order");
                last = it.rec.offset;
                continue;
            }
            if (!is_last)
                throw corruption_error(s.path.string(), it.pos, it.problem);
            if (!it.runs_past_end && detail::valid_frame_in(fd.get(), s.path, it.resume, size))
                throw corruption_error(s.path.string(), it.pos,
                                       std::string(it.problem) + ", and valid frames follow it");
            cut_tail(s, it.pos, size);
            return last;
        }
        s.size = size;
        return last;
    }

    void cut_tail(segment& s, std::uint64_t at, std::uint64_t size) {
        const detail::unique_fd fd = detail::open_file<changelog_error>(s.path, O_WRONLY);
        detail::truncate_file<changelog_error>(fd.get(), at, s.path);
        detail::sync_file<changelog_error>(fd.get(), s.path);
        s.size = at;
        truncated_bytes_ = size - at;
    }

    /// Creates the segment file for `base`, durably, and makes it active.
    void start_segment(offset_t base) {
        const auto path = dir_ / detail::segment_file_name(base);
        detail::unique_fd fd = detail::open_file<changelog_error>(
            path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND);
        detail::sync_directory<changelog_error>(dir_);
        segments_.push_back(segment{base, path, 0});
        active_fd_ = std::move(fd);
    }

    std::filesystem::path dir_;
    file_log_options options_;
    detail::unique_fd lock_fd_;
    detail::unique_fd active_fd_;
    std::vector<segment> segments_;
    std::vector<pending_chunk> pending_;
    byte_buffer spare_;  ///< an emptied chunk buffer, reused by the next chunk
    std::uint64_t tail_segment_bytes_ = 0;  ///< size the segment of the last pending chunk will have
    offset_t next_offset_ = 0;
    offset_t durable_end_ = 0;
    std::uint64_t truncated_bytes_ = 0;
    bool broken_ = false;
};

/// @brief The range `file_log::replay` returns: an input view whose elements
/// are `record_view`s. Copies share one read position.
class file_log::replay_range : public std::ranges::view_interface<replay_range> {
    struct source {
        std::filesystem::path path;
        detail::unique_fd fd;
        std::uint64_t limit = 0;
    };

    struct state {
        std::vector<source> sources;
        byte_buffer pending;  ///< unflushed frames, copied when replay began
        offset_t from = 0;

        std::size_t index = 0;
        std::optional<detail::segment_reader> reader;
        std::size_t pending_pos = 0;
        std::optional<offset_t> last;
        record_view current;
        bool done = false;

        void restart() {
            index = 0;
            reader.reset();
            pending_pos = 0;
            last.reset();
            done = false;
            advance();
        }

        void advance() {
            for (;;) {
                if (reader) {
                    const detail::segment_item it = reader->next();
                    using kind = detail::segment_item::kind;
                    if (it.what == kind::end) {
                        reader.reset();
                        ++index;
                        continue;
                    }
                    if (it.what == kind::bad)
                        throw corruption_error(reader->path().string(), it.pos, it.problem);
                    if (last && it.rec.offset <= *last)
                        throw corruption_error(reader->path().string(), it.pos,
                                               "record offset out of order");
                    last = it.rec.offset;
                    if (it.rec.offset < from) continue;
                    current = it.rec;
                    return;
                }
                if (index < sources.size()) {
                    const source& s = sources[index];
                    reader.emplace(s.fd.get(), s.path, s.limit);
                    continue;
                }
                if (pending_pos >= pending.size()) {
                    done = true;
                    return;
                }
                current = next_pending();
                if (current.offset >= from) return;
            }
        }

        /// The buffer holds frames this process encoded itself; a bad one is a bug.
        record_view next_pending() {
            const char* problem = "";
            const std::byte* p = pending.data() + pending_pos;
            const auto info = detail::frame::check_prefix(p, problem);
            if (!info) throw usage_error(std::string("strata: file_log buffer damaged: ") + problem);
            const auto rec = detail::frame::decode_body(
                *info, bytes_view(p + detail::frame::prefix_size, info->body_len), problem);
            if (!rec) throw usage_error(std::string("strata: file_log buffer damaged: ") + problem);
            pending_pos += info->frame_size();
            return *rec;
        }
    };

public:
    /// @brief Input iterator over the records; `*it` is a `record_view`.
    class iterator {
    public:
        using value_type = record_view;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;
        explicit iterator(state* s) noexcept : s_(s) {}

        [[nodiscard]] record_view operator*() const noexcept { return s_->current; }
        iterator& operator++() {
            s_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
            return it.s_ == nullptr || it.s_->done;
        }

    private:
        state* s_ = nullptr;
    };

    replay_range() = default;

    /// @brief Starts (or restarts) reading at the first record >= from.
    [[nodiscard]] iterator begin() {
        if (!state_) return iterator{};
        state_->restart();
        return iterator{state_.get()};
    }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

private:
    friend class file_log;
    std::shared_ptr<state> state_;
};

inline file_log::replay_range file_log::replay(offset_t from) const {
    replay_range out;
    out.state_ = std::make_shared<replay_range::state>();
    auto& st = *out.state_;
    st.from = from;
    if (from < durable_end_) {
        // Skip whole segments that end before `from`: segment i holds only
        // offsets below the base of segment i + 1.
        std::size_t first = 0;
        while (first + 1 < segments_.size() && segments_[first + 1].base <= from) ++first;
        for (std::size_t i = first; i < segments_.size(); ++i) {
            const segment& s = segments_[i];
            if (s.size == 0) continue;
            st.sources.push_back(replay_range::source{
                s.path, detail::open_file<changelog_error>(s.path, O_RDONLY), s.size});
        }
    }
    for (const auto& c : pending_) append_bytes(st.pending, c.bytes);
    return out;
}

inline compaction_stats file_log::compact() {
    check_usable();
    compaction_stats stats;
    if (segments_.size() < 2) return stats;

    auto for_each_record = [](const segment& s, auto&& fn) {
        const detail::unique_fd fd = detail::open_file<changelog_error>(s.path, O_RDONLY);
        detail::segment_reader reader(fd.get(), s.path, s.size);
        for (;;) {
            const detail::segment_item it = reader.next();
            if (it.what == detail::segment_item::kind::end) return;
            if (it.what == detail::segment_item::kind::bad)
                throw corruption_error(s.path.string(), it.pos, it.problem);
            fn(it);
        }
    };

    std::unordered_map<std::string, offset_t> latest;
    for (const segment& s : segments_)
        for_each_record(s, [&](const detail::segment_item& it) {
            latest[std::string(as_chars(it.rec.key))] = it.rec.offset;
        });
    auto is_latest = [&](const record_view& r) {
        return latest.find(std::string(as_chars(r.key)))->second == r.offset;
    };

    // Segments leave `segments_` only once their file is gone, and a size
    // changes only once the rename is done, so an exception at any point
    // leaves the log describing what is on disk.
    for (std::size_t i = 0; i + 1 < segments_.size();) {
        segment& s = segments_[i];
        std::uint64_t keep = 0, drop = 0;
        for_each_record(s, [&](const detail::segment_item& it) {
            ++(is_latest(it.rec) ? keep : drop);
        });
        if (drop == 0) {
            ++i;
            continue;
        }
        stats.records_dropped += drop;
        stats.bytes_before += s.size;
        if (keep == 0) {
            std::error_code ec;
            if (!std::filesystem::remove(s.path, ec) || ec)
                throw changelog_error("strata: cannot remove " + s.path.string() + ": " +
                                      ec.message());
            detail::sync_directory<changelog_error>(dir_);
            ++stats.segments_removed;
            segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
        }
        auto temp = s.path;
        temp += temp_suffix;
        std::uint64_t written = 0;
        {
            const detail::unique_fd out = detail::open_file<changelog_error>(
                temp, O_WRONLY | O_CREAT | O_TRUNC);
            byte_buffer buf;
            auto drain = [&] {
                detail::write_all<changelog_error>(out.get(), buf, temp);
                written += buf.size();
                buf.clear();
            };
            for_each_record(s, [&](const detail::segment_item& it) {
                if (!is_latest(it.rec)) return;
                append_bytes(buf, it.raw);
                if (buf.size() >= (std::size_t{1} << 20)) drain();
            });
            drain();
            detail::sync_file<changelog_error>(out.get(), temp);
        }
        detail::rename_file<changelog_error>(temp, s.path);
        detail::sync_directory<changelog_error>(dir_);
        s.size = written;
        stats.bytes_after += written;
        ++stats.segments_rewritten;
        ++i;
    }
    return stats;
}

}  // namespace strata
