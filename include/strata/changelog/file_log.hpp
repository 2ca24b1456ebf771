#pragma once
/// @file
/// @brief `strata::file_log`: the embedded durable changelog. Records live in
/// a directory of append-only segment files; each record is one frame with
/// its own length and CRC32C checksums (see changelog/detail/frame.hpp), so
/// that after a crash the log knows exactly which bytes it can trust.
///
/// Contract, in short:
/// - `append` only buffers (a copy). `flush` writes the buffer and a commit
///   frame with one write and one fdatasync, and returns the durable end
///   offset. Unflushed appends are not durable: the destructor drops them.
/// - A flush is atomic: after a crash, or a flush that failed, reopening the
///   log shows all of a flush or none of it. Frames after the last commit
///   frame belong to a flush that never returned, and opening cuts them.
/// - The log knows what it holds: a manifest lists its segments and where
///   each closed one ends, and a witness names how far the active segment
///   was flushed (see changelog/detail/log_metadata.hpp). A missing segment,
///   a segment cut short, or damage to flushed bytes is reported on open as
///   `corruption_error` naming the file and byte offset, and nothing is cut.
/// - Opening costs the same for any size of log: each sealed segment has an
///   index (changelog/detail/segment_index.hpp) that opening reads instead of
///   the segment, falling back to reading the segment when the index is
///   missing, damaged or does not fit it; only the active segment is always
///   read whole. Damage inside a sealed segment is reported by the replay
///   that reads it, and by `verify`, which reads everything.
///   `file_log::verify` inspects a log without changing it and
///   `file_log::repair` cuts it to its last intact flush (also as the
///   command `strata-log`).
/// - `replay(from)` is a snapshot taken when it is called: the flushed bytes
///   of every segment at that moment plus a copy of the unflushed records, so
///   it yields every record appended so far, like `memory_log` does. It
///   opens one segment file at a time, starting with the one holding `from`,
///   near `from` (by its sparse index).
/// - `flush` compacts sealed segments when enough of them is dirty (see
///   `compact`): the latest record of each key stays, at its offset.
/// - One process at a time: the directory is locked with flock(2).
///
/// `basic_file_log<Fs>` does all its I/O through the file system `Fs` (see
/// changelog/file_system.hpp); `file_log` is the one on POSIX files.
///
/// The definitions of what opening, replay and compaction do are in
/// changelog/detail/file_log_recovery.hpp, file_log_replay.hpp and
/// file_log_compaction.hpp, included at the end.


#include <strata/changelog/detail/frame.hpp>
#include <strata/changelog/detail/log_metadata.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/changelog/detail/segment_index.hpp>
#include <strata/changelog/file_log_options.hpp>
#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
namespace strata {

/// @brief A durable changelog in a local directory; satisfies `changelog`.
///
/// Movable, not copyable; not safe to use from several threads at once.
template <file_system Fs>
class basic_file_log {
public:
    class replay_range;

    /// @brief Opens (creating it if needed) the log in `dir`: checks each
    /// sealed segment through its index (or, lacking a usable one, frame by
    /// frame) and the active segment frame by frame against the manifest and
    /// the witness, and cuts frames of a flush that never returned off the
    /// active segment.
    /// @throws corruption_error a segment is missing, cut short or damaged
    ///         where a flush returned; the log is left as it was
    /// @throws changelog_error an I/O error, or the directory is open elsewhere
    explicit basic_file_log(std::filesystem::path dir, file_log_options options = {}, Fs fs = {})
        : fs_(std::move(fs)), dir_(std::move(dir)), options_(options) {
        open();
    }

    basic_file_log(basic_file_log&&) noexcept = default;
    basic_file_log& operator=(basic_file_log&&) noexcept = default;
    basic_file_log(const basic_file_log&) = delete;
    basic_file_log& operator=(const basic_file_log&) = delete;
    /// Closes the files. Records appended since the last flush are dropped:
    /// only `flush` promises durability, and a destructor cannot report failure.
    ~basic_file_log() = default;

    /// @brief Buffers a copy of `r` under the next offset (`r.offset` is ignored).
    /// @returns the offset the record got
    /// @throws changelog_error the record is too large for a frame, or the
    ///         log failed an earlier flush
    /// @throws usage_error the record's timestamp is negative (other than no_timestamp)
    offset_t append(const record_view& r) {
        check_usable();
        if (r.timestamp < 0 && r.timestamp != no_timestamp)
            throw usage_error("strata: record timestamp " + std::to_string(r.timestamp) + " for file_log in " +
                              dir_.string() + ": a time is at least 0 (or no_timestamp, -1, for none)");
        if (!detail::frame::encoded_size(r))
            throw changelog_error("strata: record too large for file_log in " + dir_.string() + " (key " +
                                  std::to_string(r.key.size()) + " bytes, value " +
                                  std::to_string(r.value ? r.value->size() : 0) + " bytes; a frame holds at most " +
                                  std::to_string(detail::frame::max_body_size) + ")");
        detail::frame::encode(pending_, r, next_offset_);
        return next_offset_++;
    }

    /// @brief Writes everything appended, and a commit frame after it, and
    /// fdatasyncs it.
    /// @returns the durable end: one past the last durable record
    /// @throws changelog_error on an I/O error. The log then refuses further
    ///         appends and flushes (after a failed fsync nobody knows what is
    ///         on disk); reopening it shows all of this flush or none of it.
    offset_t flush() {
        check_usable();
        if (next_offset_ == durable_end_) return durable_end_;
        try {
            segment& old = segments_.back();
            if (old.bytes > 0 && old.bytes + pending_.size() + detail::frame::commit_size > options_.segment_bytes)
                roll();
            detail::frame::encode_commit(pending_, next_offset_, pending_.size());
            segment& s = segments_.back();
            writing_ = true;
            fs_.append(active_, pending_, s.path);
            fs_.sync_data(active_, s.path);
            writing_ = false;
            note_flushed(s);
            s.bytes += pending_.size();
        } catch (...) {
            fail_flush();
            throw;
        }
        durable_end_ = next_offset_;
        // Keep the buffer's memory for the next appends: regrowing it after
        // every flush costs page faults on every commit.
        pending_.clear();
        write_witness();
        compact_automatically();
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
    /// whose key has no later durable record anywhere in the log (and its
    /// last commit frame), and drops tombstones that are the latest record
    /// of their key once their segment was sealed `delete_retention` ago.
    /// Offsets are kept, so replay afterwards shows gaps.
    ///
    /// `flush()` runs the same compaction by itself (`auto_compact`), as
    /// Kafka's log cleaner does: the sealed segments are a clean head, whose
    /// keys are unique, and a dirty tail. Once the dirty bytes reach
    /// `min_dirty_ratio` of the sealed bytes, a map of the latest offset of
    /// each key in the dirty tail (at most `max_compaction_bytes` of it) is
    /// built and the head and that part of the tail are rewritten through it.
    /// `compact()` does it for every sealed segment at once, whatever the ratio.
    ///
    /// Crash safe: a segment and then its index are rewritten to temporary
    /// files, fsynced and renamed over the originals, then the directory is
    /// fsynced; a segment left empty leaves the manifest before its files are
    /// removed. Segments are rewritten oldest first, so a tombstone leaves
    /// the log only after every older value of its key. Unflushed appends
    /// neither take part nor supersede anything (they may never be durable).
    /// A replay already started reads segments it has not reached yet as
    /// compacted: it skips records that later records supersede, and
    /// rebuilds the same state.
    compaction_stats compact() {
        check_usable();
        const compaction_stats stats = compact_pass(true);
        totals_ += stats;
        return stats;
    }

    /// @brief What every compaction of this open log did, summed.
    [[nodiscard]] const compaction_stats& compaction_totals() const noexcept { return totals_; }

    /// @brief Why automatic compaction stopped, if it did. A failed automatic
    /// compaction leaves the log as consistent as a crash would, the flush
    /// that ran it has returned its records durable, and the log goes on
    /// without compacting until it is reopened (as Kafka marks a partition
    /// uncleanable instead of failing its writes).
    [[nodiscard]] const std::optional<std::string>& compaction_failure() const noexcept {
        return compaction_failure_;
    }

    /// @brief Checks the log in `dir` without changing anything, and reports
    /// the first damage, if any, and what opening or repairing would cut.
    /// Run it while no process has the log open.
    /// Unlike opening, it reads every frame of every segment, sealed ones
    /// included, and lists the sealed segments whose index opening could
    /// not use.
    [[nodiscard]] static file_log_check verify(const std::filesystem::path& dir, Fs fs = {}) {
        return scan(fs, dir, scan_mode::every_frame).check;
    }

    /// @brief Cuts the log in `dir` to its last intact flush: truncates the
    /// damaged segment after that flush's commit frame and removes the
    /// segments after it, then rewrites the manifest and the witness. An
    /// intact log is left as it is. What is cut is lost: copy the directory
    /// first to keep the evidence.
    /// @throws changelog_error an I/O error, or the log is open elsewhere
    static file_log_check repair(const std::filesystem::path& dir, Fs fs = {});

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
    /// @brief Bytes of unfinished flushes that opening the log cut off (0
    /// after a clean close).
    [[nodiscard]] std::uint64_t truncated_bytes() const noexcept { return truncated_bytes_; }

private:
    struct segment {
        offset_t base = 0;
        std::filesystem::path path;
        std::uint64_t bytes = 0;  ///< bytes of its returned flushes
        offset_t end = 0;         ///< end offset of its last flush (closed segments)
        std::uint64_t records = 0;
        offset_t first = 0;       ///< offset of its first record, when it has one
        offset_t last = 0;        ///< offset of its last record, when it has one
        std::int64_t sealed_at_ms = 0;
        bool cleaned = false;     ///< compacted: see compact_pass
        bool indexed = false;     ///< closed, and its index file is current
        /// Sparse entries, when the segment was read on open (the active one,
        /// and a closed one whose index could not be used).
        std::vector<detail::index_entry> entries;

        [[nodiscard]] static segment make(offset_t base, std::filesystem::path path, offset_t end) {
            segment s;
            s.base = base;
            s.path = std::move(path);
            s.end = end;
            return s;
        }

        [[nodiscard]] detail::segment_summary summary() const {
            return {base, bytes, end, records > 0 ? first : end, records > 0 ? last : base,
                    records, sealed_at_ms, cleaned};
        }
    };

    /// What a walk over the whole log found.
    struct scan_result {
        file_log_check check;
        std::optional<std::vector<detail::manifest_entry>> manifest;
        std::vector<segment> segments;  ///< as listed; `bytes` up to the last commit
        std::size_t intact_segments = 0;  ///< segments up to the one holding the intact end
        std::uint64_t intact_bytes = 0;   ///< bytes of the last of them that are intact
        std::optional<detail::witness> witness;
    };

    /// Opening trusts the index of each closed segment it can; verify and
    /// repair read every frame.
    enum class scan_mode { trust_indexes, every_frame };

    static constexpr std::string_view lock_name = "strata.lock";
    static constexpr std::string_view temp_suffix = ".compacting";

    void check_usable() const {
        if (broken_)
            throw changelog_error("strata: file_log in " + dir_.string() +
                                  " failed an earlier flush; reopen it to recover");
    }

    static std::string repair_hint(const std::filesystem::path& dir, const file_log_check& c) {
        return ". Nothing was changed; `strata-log repair " + dir.string() +
               "` cuts the log to its last intact flush (end offset " + std::to_string(c.intact_end) +
               "), losing what follows";
    }

    void open();
    static scan_result scan(const Fs& fs, const std::filesystem::path& dir, scan_mode mode,
                            std::uint64_t index_interval = file_log_options{}.index_interval_bytes);
    /// Walks the first `count` segments; `active` is the index of the active one.
    static void scan_segments(const Fs& fs, const std::filesystem::path& dir, scan_result& r, std::size_t count,
                              std::size_t active, scan_mode mode, std::uint64_t index_interval);
    /// @returns whether the index of the closed segment `s` (whose file `f`
    /// has `size` bytes) can stand in for reading it: intact, about this
    /// segment, of this size and end, and the file ends with the commit
    /// frame of that end. Costs one read of the index (16 KiB for 64 MiB of
    /// segment by default) and one of the segment's last frame.
    static bool index_fits(const Fs& fs, const typename Fs::file& f, const segment& s, std::uint64_t size,
                           const detail::segment_summary& idx, std::optional<offset_t> last_before);
    /// Removes index files of segments the log does not hold (left by a
    /// compaction or repair that removed the segment, or a crash in between).
    static void remove_orphan_indexes(const Fs& fs, const std::filesystem::path& dir,
                                      const std::vector<segment>& segments) {
        for (const auto& name : fs.list(dir)) {
            if (!name.ends_with(detail::index_suffix)) continue;
            const auto base = detail::parse_segment_file_name(
                name.substr(0, name.size() - detail::index_suffix.size()) + std::string(detail::segment_suffix));
            if (!base || std::none_of(segments.begin(), segments.end(), [&](const segment& s) { return s.base == *base; }))
                fs.remove(dir / name);
        }
    }
    /// Writes the index of each closed segment that has none that fits.
    /// An index only saves reading: failing to write one is not an error.
    void write_missing_indexes() noexcept;

    [[nodiscard]] std::int64_t now_ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock().time_since_epoch()).count();
    }

    /// Notes where the records of the flush just written start, for the
    /// active segment's sparse index and summary, before `s.bytes` grows.
    void note_flushed(segment& s) {
        const std::size_t records_end = pending_.size() - detail::frame::commit_size;
        if (active_index_.wants_before(s.bytes + records_end))
            for (std::size_t pos = 0; pos < records_end;) {
                const std::byte* p = pending_.data() + pos;
                active_index_.add(detail::load_le<std::uint64_t>(p + detail::frame::prefix_size), s.bytes + pos);
                pos += detail::frame::prefix_size + detail::load_le<std::uint32_t>(p + 4);
            }
        if (s.records == 0) s.first = durable_end_;
        s.records += next_offset_ - durable_end_;
        s.last = next_offset_ - 1;
    }

    /// One compaction: the dirty tail's first `max_compaction_bytes` (all of
    /// it when `everything`) and the clean head before it.
    compaction_stats compact_pass(bool everything);

    /// Runs at the end of flush rather than on a thread of its own: the log
    /// is not thread-safe (a background cleaner would need a lock around
    /// every append, flush and replay step), flush is where the caller
    /// already accepts I/O, and the ratio and byte bound keep what one flush
    /// adds in proportion to what was written since the last compaction.
    void compact_automatically() noexcept {
        if (!options_.auto_compact || compaction_failure_) return;
        try {
            totals_ += compact_pass(false);
        } catch (const std::exception& e) {
            compaction_failure_ = e.what();
        } catch (...) {
            compaction_failure_ = "unknown error";
        }
    }

    /// After a failed flush: nothing of it may count, in this process or
    /// after a restart, so cut what it wrote if possible (a later open cuts
    /// it anyway, lacking its commit frame), and refuse further use.
    void fail_flush() noexcept {
        broken_ = true;
        if (!writing_) return;
        try {
            const segment& s = segments_.back();
            const auto f = fs_.open_write(s.path);
            fs_.truncate(f, s.bytes, s.path);
            fs_.sync_data(f, s.path);
        } catch (...) {
        }
    }

    /// Starts a new segment at the durable end: the file first, then the
    /// manifest naming it and where the closed one ends.
    ///
    /// Sealing writes the closed segment's index first: the manifest calls a
    /// segment closed only once its index is durable. A crash before the
    /// manifest leaves an index of a segment that is still active, which
    /// opening ignores (it reads the active segment whole) and the next roll
    /// replaces.
    void roll() {
        const offset_t base = durable_end_;
        segment& old = segments_.back();
        old.end = base;
        old.sealed_at_ms = now_ms();
        old.cleaned = false;
        detail::write_index_temp(fs_, dir_, old.summary(), active_index_.entries());
        detail::publish_index(fs_, dir_, old.base);
        const auto path = dir_ / detail::segment_file_name(base);
        auto f = fs_.create_new(path);
        fs_.sync_directory(dir_);  // the index's rename and the new segment
        segments_.push_back(segment::make(base, path, 0));
        try {
            detail::write_manifest(fs_, dir_, manifest_entries());
        } catch (...) {
            segments_.pop_back();
            throw;
        }
        segments_[segments_.size() - 2].indexed = true;
        active_index_ = detail::sparse_index_builder(options_.index_interval_bytes);
        active_ = std::move(f);
    }

    [[nodiscard]] std::vector<detail::manifest_entry> manifest_entries() const {
        std::vector<detail::manifest_entry> out;
        for (std::size_t i = 0; i < segments_.size(); ++i)
            out.push_back({segments_[i].base, i + 1 < segments_.size() ? segments_[i].end : 0});
        return out;
    }

    /// Records how far the active segment is flushed. No sync: the witness
    /// only ever trails the data, and a lost write leaves an older, still
    /// true statement. A failure to write it loses no data, so it is ignored.
    void write_witness(bool sync = false) noexcept {
        try {
            const segment& s = segments_.back();
            const detail::witness w{++witness_sequence_, s.base, s.bytes, durable_end_};
            const auto path = dir_ / detail::witness_name;
            fs_.write_at(witness_, detail::encode_witness(w), (w.sequence % 2) * detail::witness_slot_stride, path);
            if (sync) fs_.sync_data(witness_, path);
        } catch (...) {
        }
    }

    Fs fs_;
    std::filesystem::path dir_;
    file_log_options options_;
    typename Fs::file lock_;
    typename Fs::file active_;
    typename Fs::file witness_;
    std::vector<segment> segments_;
    /// Sparse entries of the active segment, written to its index when it is sealed.
    detail::sparse_index_builder active_index_{file_log_options{}.index_interval_bytes};
    compaction_stats totals_;
    std::optional<std::string> compaction_failure_;
    byte_buffer pending_;  ///< frames appended since the last flush
    offset_t next_offset_ = 0;
    offset_t durable_end_ = 0;
    std::uint64_t truncated_bytes_ = 0;
    std::uint64_t witness_sequence_ = 0;
    bool writing_ = false;
    bool broken_ = false;
};

/// @brief The file log on POSIX files.
using file_log = basic_file_log<posix_file_system>;

}  // namespace strata

#include <strata/changelog/detail/file_log_compaction.hpp>
#include <strata/changelog/detail/file_log_recovery.hpp>
#include <strata/changelog/detail/file_log_replay.hpp>

#if defined(STRATA_SEPARATE_COMPILATION)
// Compiled once, where <strata/separate_compilation.hpp> is included.
namespace strata {
extern template class basic_file_log<posix_file_system>;
}  // namespace strata
#endif
