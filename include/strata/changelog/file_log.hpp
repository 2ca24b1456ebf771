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

#include <strata/changelog/detail/frame.hpp>
#include <strata/changelog/detail/log_metadata.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/changelog/detail/segment_index.hpp>
#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata {

/// @brief Tuning of a `file_log`.
struct file_log_options {
    /// A flush starts a new segment when the active one would grow past
    /// this many bytes. A flush never spans two segments, so one flush
    /// larger than this gets a segment of its own. Only closed segments are
    /// compacted, so smaller segments compact sooner.
    std::uint64_t segment_bytes = std::uint64_t{64} << 20;

    /// Bytes between two entries of a segment's sparse index (offset -> byte
    /// position), which lets `replay(from)` start reading near `from`: a
    /// replay from a checkpoint reads at most this much it does not need.
    std::uint64_t index_interval_bytes = std::uint64_t{64} << 10;

    /// Compact sealed segments automatically, at the end of a `flush()` (see
    /// `basic_file_log::compact`), when the dirty ratio below is reached.
    /// Off by default: the compaction runs inside flush(), and with the
    /// defaults below it cut the append throughput of 45-byte records about
    /// five times (docs/benchmarks.md, file_log_open_bench). Turn it on where
    /// restore time and disk matter more than write throughput, or call
    /// compact() when the application is idle.
    bool auto_compact = false;
    /// An automatic compaction runs once the bytes of sealed segments not yet
    /// compacted reach this share of all sealed bytes. Each compaction reads
    /// the compacted part again, so this bounds the bytes a compaction reads
    /// to about (dirty bytes) / ratio, as Kafka's min.cleanable.dirty.ratio.
    double min_dirty_ratio = 0.5;
    /// At most this many bytes of not yet compacted segments take part in one
    /// compaction (at least one segment does); the rest waits for the next
    /// flush. Bounds a flush's extra work and the memory of the key map: one
    /// entry (the key, an offset, about 60 bytes more) per distinct key in
    /// those bytes, about 100 MiB at worst for 64 MiB of 45-byte records.
    std::uint64_t max_compaction_bytes = std::uint64_t{64} << 20;
    /// A tombstone may leave the log only once its segment was sealed this
    /// long ago. Until then a store restoring from a checkpoint below the
    /// tombstone still sees the delete; a store whose checkpoint is older
    /// than this when it restores may miss deletes (Kafka's
    /// delete.retention.ms, default one day too).
    std::chrono::milliseconds delete_retention = std::chrono::hours(24);
    /// The wall clock that dates sealed segments; a test can set its own.
    std::chrono::system_clock::time_point (*clock)() = &std::chrono::system_clock::now;
};

/// @brief What one `file_log::compact()` did (or, summed, all compactions
/// of an open log: `file_log::compaction_totals()`).
struct compaction_stats {
    std::size_t segments_rewritten = 0;
    std::size_t segments_removed = 0;  ///< closed segments left with no record at all
    std::uint64_t records_dropped = 0;  ///< tombstones included
    std::uint64_t tombstones_dropped = 0;
    std::uint64_t bytes_read = 0;      ///< segment bytes read to build the key map and rewrite
    std::uint64_t bytes_before = 0;    ///< of the segments rewritten or removed
    std::uint64_t bytes_after = 0;
    std::size_t passes = 0;            ///< compactions that ran

    compaction_stats& operator+=(const compaction_stats& o) noexcept {
        segments_rewritten += o.segments_rewritten;
        segments_removed += o.segments_removed;
        records_dropped += o.records_dropped;
        tombstones_dropped += o.tombstones_dropped;
        bytes_read += o.bytes_read;
        bytes_before += o.bytes_before;
        bytes_after += o.bytes_after;
        passes += o.passes;
        return *this;
    }
};

/// @brief What `file_log::verify` found in a log, or what `file_log::repair` did.
struct file_log_check {
    /// Nothing flushed is damaged or missing: the log opens as it is.
    bool intact = true;
    /// The first damage found (when not intact): file, byte offset, what.
    std::filesystem::path damaged_file;
    std::uint64_t damaged_byte = 0;
    std::string problem;
    /// End offset of the last intact flush: the log's end once repaired.
    offset_t intact_end = 0;
    /// Records (not counting commit frames) in the intact part.
    std::uint64_t records = 0;
    /// Bytes of flushes that never returned, after the last commit frame:
    /// opening the log cuts them, as it should.
    std::uint64_t unfinished_bytes = 0;
    /// Segment files the manifest does not list (left by a segment roll or a
    /// compaction that a crash interrupted): opening the log removes them.
    std::vector<std::filesystem::path> stray_files;
    /// Closed segments whose index is missing, damaged or disagrees with the
    /// segment (a log written before indexes existed, or a crash while one
    /// was written): opening reads the whole segment instead of its index,
    /// and writes the index.
    std::vector<std::filesystem::path> unindexed_segments;
    /// repair only: bytes cut from the damaged segment and after it, and
    /// the segment files removed.
    std::uint64_t bytes_cut = 0;
    std::size_t segments_removed = 0;

    /// Notes damage at byte `at` of `file`.
    void found_damage(std::filesystem::path file, std::uint64_t at, std::string what) {
        intact = false;
        damaged_file = std::move(file);
        damaged_byte = at;
        problem = std::move(what);
    }
};

namespace detail {
/// Hashes std::string keys and the string_views that look them up alike.
struct string_view_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
};
}  // namespace detail

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
    offset_t append(const record_view& r) {
        check_usable();
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

template <file_system Fs>
typename basic_file_log<Fs>::scan_result basic_file_log<Fs>::scan(const Fs& fs, const std::filesystem::path& dir,
                                                                   scan_mode mode, std::uint64_t index_interval) {
    scan_result r;
    file_log_check& c = r.check;

    std::map<offset_t, std::filesystem::path> files;
    if (fs.exists(dir))
        for (const auto& name : fs.list(dir))
            if (const auto base = detail::parse_segment_file_name(name)) files.emplace(*base, dir / name);

    const auto manifest_path = dir / detail::manifest_name;
    if (const auto bytes = detail::read_small_file(fs, manifest_path)) {
        const char* problem = "";
        r.manifest = detail::decode_manifest(*bytes, problem);
        if (!r.manifest) {
            c.found_damage(manifest_path, 0, problem);
            return r;
        }
    } else if (!files.empty()) {
        // Creating a log writes its first, empty segment before the
        // manifest: a crash in between leaves only empty segment files.
        bool all_empty = true;
        for (const auto& [base, path] : files) {
            const auto f = fs.open_read(path);
            all_empty = all_empty && fs.size(f, path) == 0;
        }
        if (all_empty) {
            for (const auto& [base, path] : files) c.stray_files.push_back(path);
            return r;
        }
        c.found_damage(manifest_path, 0,
               "the manifest is missing, but the directory holds segments (or it was written by an older "
               "strata, whose logs had no manifest)");
        return r;
    } else {
        return r;  // a new log
    }
    if (const auto w = detail::read_small_file(fs, dir / detail::witness_name)) r.witness = detail::decode_witness(*w);

    // Segments the manifest lists; the first one missing ends the intact log.
    std::optional<std::size_t> missing;
    for (const auto& e : *r.manifest) {
        const auto path = dir / detail::segment_file_name(e.base);
        if (const auto it = files.find(e.base); it != files.end())
            files.erase(it);
        else if (!missing)
            missing = r.segments.size();
        r.segments.push_back(segment::make(e.base, path, e.end));
    }
    const std::size_t active = r.segments.size() - 1;
    scan_segments(fs, dir, r, missing.value_or(r.segments.size()), active, mode, index_interval);
    // Then, in the order a reader meets them: a missing segment; a file the
    // manifest does not list (left by a roll, empty, or by a compaction, a
    // closed segment whose records are all superseded; a newer file holding
    // data comes from neither); a witness of a segment the log never rolled to.
    if (c.intact && missing) {
        const segment& gone = r.segments[*missing];
        c.found_damage(gone.path, 0, "segment listed in the manifest is missing (offsets from " + std::to_string(gone.base) + " on)");
    }
    for (const auto& [base, path] : files) {
        c.stray_files.push_back(path);
        if (base > r.segments[active].base && c.intact) {
            const auto f = fs.open_read(path);
            if (fs.size(f, path) > 0) c.found_damage(path, 0, "segment file holds data but the manifest does not list it");
        }
    }
    if (c.intact && r.witness && r.witness->base > r.segments[active].base)
        c.found_damage(dir / detail::witness_name, 0,
               "the witness speaks of segment " + std::to_string(r.witness->base) +
                   ", newer than the active segment the manifest lists");
    return r;
}

template <file_system Fs>
bool basic_file_log<Fs>::index_fits(const Fs& fs, const typename Fs::file& f, const segment& s, std::uint64_t size,
                                    const detail::segment_summary& idx, std::optional<offset_t> last_before) {
    if (idx.base != s.base || idx.end != s.end || idx.bytes != size || size < detail::frame::commit_size) return false;
    if (idx.records > 0 && (idx.first < s.base || idx.first > idx.last || idx.last >= idx.end ||
                            (last_before && idx.first <= *last_before)))
        return false;
    std::array<std::byte, detail::frame::commit_size> tail{};
    if (fs.read_at(f, tail, size - tail.size(), s.path) != tail.size()) return false;
    const auto commit = detail::frame::valid_frame_at(tail.data(), tail.size());
    return commit && commit->commit && commit->rec.offset == idx.end;
}

template <file_system Fs>
void basic_file_log<Fs>::scan_segments(const Fs& fs, const std::filesystem::path& dir, scan_result& r,
                                       std::size_t count, std::size_t active, scan_mode mode,
                                       std::uint64_t index_interval) {
    file_log_check& c = r.check;
    std::optional<offset_t> last;  // offset of the last record seen
    c.intact_end = r.segments.empty() ? 0 : r.segments.front().base;
    for (std::size_t i = 0; i < count; ++i) {
        segment& s = r.segments[i];
        const bool is_active = i == active;
        r.intact_segments = i + 1;
        r.intact_bytes = 0;
        if (s.base < c.intact_end) {
            c.found_damage(s.path, 0, "segment starts at offset " + std::to_string(s.base) +
                                  ", below the end of the segment before it (" + std::to_string(c.intact_end) + ")");
            // None of it is intact: the log ends with the whole segment before it.
            r.intact_segments = i;
            r.intact_bytes = r.segments[i - 1].bytes;
            return;
        }
        c.intact_end = s.base;
        const std::uint64_t witnessed =
            is_active && r.witness && r.witness->base == s.base ? r.witness->bytes : 0;

        const auto f = fs.open_read(s.path);
        const std::uint64_t size = fs.size(f, s.path);
        // A closed segment with an index that fits is taken at its index's
        // word: this is what makes opening cost the same for any log size.
        // Damage inside it is found when a replay or verify reads it.
        std::optional<detail::segment_summary> index;
        if (!is_active)
            if (const auto idx = detail::read_index(fs, dir, s.base); idx && index_fits(fs, f, s, size, idx->first, last))
                index = idx->first;
        if (index && mode == scan_mode::trust_indexes) {
            s.bytes = size;
            s.records = index->records;
            s.first = index->first;
            s.last = index->last;
            s.sealed_at_ms = index->sealed_at_ms;
            s.cleaned = index->cleaned;
            s.indexed = true;
            c.records += index->records;
            if (index->records > 0) last = index->last;
            c.intact_end = index->end;
            r.intact_bytes = size;
            continue;
        }

        detail::segment_reader<Fs> reader(fs, f, s.path, size);
        detail::sparse_index_builder entries(index_interval);
        std::uint64_t unconfirmed = 0;  // records after the last commit frame
        std::optional<offset_t> first_unconfirmed;
        for (;;) {
            const detail::segment_item it = reader.next();
            using kind = detail::segment_item::kind;
            if (it.what == kind::end) break;
            if (it.what == kind::record) {
                if (it.rec.offset < s.base || (last && it.rec.offset <= *last)) {
                    c.found_damage(s.path, it.pos, "record offset " + std::to_string(it.rec.offset) + " is out of order");
                    return;
                }
                last = it.rec.offset;
                if (unconfirmed++ == 0) first_unconfirmed = it.rec.offset;
                entries.add(it.rec.offset, it.pos);
                continue;
            }
            if (it.what == kind::commit) {
                if (it.rec.offset < c.intact_end || (last && it.rec.offset <= *last)) {
                    c.found_damage(s.path, it.pos, "commit frame ends at offset " + std::to_string(it.rec.offset) +
                                               ", below a record it covers");
                    return;
                }
                c.intact_end = it.rec.offset;
                if (unconfirmed > 0) {
                    if (s.records == 0) s.first = *first_unconfirmed;
                    s.records += unconfirmed;
                    s.last = *last;
                }
                c.records += std::exchange(unconfirmed, 0);
                r.intact_bytes = it.pos + it.raw.size();
                continue;
            }
            // A damaged frame: in a closed segment, or in bytes a returned
            // flush wrote, or with a later flush's commit frame after it, it
            // is damage; else it is the torn end of a flush that never returned.
            if (!is_active) {
                c.found_damage(s.path, it.pos, it.problem);
                return;
            }
            if (it.pos < witnessed) {
                c.found_damage(s.path, it.pos, std::string(it.problem) + ", in bytes that returned flushes wrote (" +
                                           std::to_string(witnessed) + " bytes of this segment were flushed)");
                return;
            }
            // After a power loss, the pages of an unfinished flush may reach
            // the disk in any order: its own commit frame may be there with
            // a hole before it. That is still a torn flush. A commit frame of
            // a flush that began after the damage is not: that flush was
            // only written once the damaged one's fdatasync had returned.
            if (!it.runs_past_end) {
                const auto commits = detail::commit_frames_in(fs, f, s.path, it.resume, size);
                const bool own_commit_only = commits.size() == 1 && commits[0].flush_bytes <= commits[0].pos &&
                                             commits[0].pos - commits[0].flush_bytes == r.intact_bytes;
                if (!commits.empty() && !own_commit_only) {
                    c.found_damage(s.path, it.pos, std::string(it.problem) +
                                               ", and the commit frame of a later flush follows it at byte " +
                                               std::to_string(commits.back().pos));
                    return;
                }
            }
            break;
        }
        s.bytes = r.intact_bytes;
        entries.cut(s.bytes);
        s.entries = entries.entries();
        if (!is_active) {
            if (s.bytes != size) {
                c.found_damage(s.path, s.bytes, std::to_string(size - s.bytes) +
                                            " bytes follow the last commit frame of a closed segment");
                return;
            }
            if (c.intact_end != s.end) {
                c.found_damage(s.path, size, "the segment's flushes end at offset " + std::to_string(c.intact_end) +
                                         ", but the manifest says " + std::to_string(s.end) + ": offsets " +
                                         std::to_string(c.intact_end) + " to " + std::to_string(s.end - 1) + " are missing");
                return;
            }
            // Read whole: its index is missing, damaged, stale, or (verify)
            // says something else than the frames do.
            if (index && index->records == s.records && index->first == s.summary().first &&
                index->last == s.summary().last) {
                s.indexed = true;
                s.sealed_at_ms = index->sealed_at_ms;
                s.cleaned = index->cleaned;
            } else {
                c.unindexed_segments.push_back(s.path);
            }
        } else {
            c.unfinished_bytes = size - s.bytes;
            if (s.bytes < witnessed) {
                c.found_damage(s.path, s.bytes, "the segment holds flushes up to byte " + std::to_string(s.bytes) + " (offset " +
                                            std::to_string(c.intact_end) + "), but flushes up to byte " +
                                            std::to_string(witnessed) + " (offset " + std::to_string(r.witness->end) +
                                            ") returned: the rest is missing");
                return;
            }
        }
    }
}

template <file_system Fs>
void basic_file_log<Fs>::write_missing_indexes() noexcept {
    // Sealed before this open, at the latest: dating it now only keeps its
    // tombstones longer than asked, never shorter.
    std::int64_t now = 0;
    try {
        now = now_ms();
    } catch (...) {
    }
    for (std::size_t i = 0; i + 1 < segments_.size(); ++i)
        if (!segments_[i].indexed) {
            segments_[i].sealed_at_ms = now;
            segments_[i].cleaned = false;
        }
    try {
        bool wrote = false;
        for (std::size_t i = 0; i + 1 < segments_.size(); ++i) {
            segment& s = segments_[i];
            if (s.indexed) continue;
            detail::write_index_temp(fs_, dir_, s.summary(), s.entries);
            detail::publish_index(fs_, dir_, s.base);
            s.entries = {};
            s.entries.shrink_to_fit();
            s.indexed = wrote = true;
        }
        if (wrote) fs_.sync_directory(dir_);
    } catch (...) {
    }
}

template <file_system Fs>
void basic_file_log<Fs>::open() {
    fs_.create_directories(dir_);
    lock_ = fs_.lock(dir_ / lock_name);
    // What this open reads must be durable before it removes anything on its
    // word: a process that died between renaming a manifest and syncing the
    // directory leaves a manifest that only the page cache holds, and removing
    // the segment it no longer lists could, after a power loss, bring back the
    // old manifest without that segment.
    if (fs_.exists(dir_)) fs_.sync_directory(dir_);
    for (const auto& name : fs_.list(dir_))
        if (name.ends_with(temp_suffix) || name.ends_with(detail::index_temp_suffix) ||
            name == detail::manifest_temp_name)
            fs_.remove(dir_ / name);  // left by an interrupted compaction, seal or manifest write

    scan_result r = scan(fs_, dir_, scan_mode::trust_indexes, options_.index_interval_bytes);
    const file_log_check& c = r.check;
    if (!c.intact)
        throw corruption_error(c.damaged_file.string(), c.damaged_byte, c.problem + repair_hint(dir_, c));

    const auto witness_path = dir_ / detail::witness_name;
    if (!r.manifest) {
        // A new log: its first segment, then the manifest naming it.
        for (const auto& stray : c.stray_files) fs_.remove(stray);
        active_ = fs_.create_new(dir_ / detail::segment_file_name(0));
        segments_.push_back(segment::make(0, dir_ / detail::segment_file_name(0), 0));
        witness_ = fs_.create_truncated(witness_path);
        remove_orphan_indexes(fs_, dir_, segments_);
        fs_.sync_directory(dir_);
        detail::write_manifest(fs_, dir_, manifest_entries());
        write_witness(true);
        return;
    }
    for (const auto& stray : c.stray_files) fs_.remove(stray);
    if (!c.stray_files.empty()) fs_.sync_directory(dir_);
    segments_ = std::move(r.segments);
    remove_orphan_indexes(fs_, dir_, segments_);
    write_missing_indexes();
    segment& s = segments_.back();
    active_index_ = detail::sparse_index_builder(options_.index_interval_bytes, std::move(s.entries));
    if (c.unfinished_bytes > 0) {
        const auto f = fs_.open_write(s.path);
        fs_.truncate(f, s.bytes, s.path);
        fs_.sync_data(f, s.path);
        truncated_bytes_ = c.unfinished_bytes;
    }
    next_offset_ = durable_end_ = c.intact_end;
    active_ = fs_.open_append(s.path);
    // What the log adopts may so far live only in the page cache (a flush
    // whose process died before its fdatasync returned, a manifest renamed
    // but not synced): make it durable before anything is built on it.
    fs_.sync_data(active_, s.path);
    fs_.sync_directory(dir_);
    if (fs_.exists(witness_path)) {
        witness_ = fs_.open_write(witness_path);
    } else {
        witness_ = fs_.create_truncated(witness_path);
        fs_.sync_directory(dir_);
    }
    witness_sequence_ = r.witness ? r.witness->sequence : 0;
    write_witness(true);
}

template <file_system Fs>
file_log_check basic_file_log<Fs>::repair(const std::filesystem::path& dir, Fs fs) {
    const auto lock = fs.lock(dir / lock_name);
    fs.sync_directory(dir);  // as in open: build only on what is durable
    scan_result r = scan(fs, dir, scan_mode::every_frame);
    if (!r.manifest) {
        // Rebuild a lost manifest from the segment files: each closed one
        // ends where its last commit frame says.
        std::vector<detail::manifest_entry> entries;
        for (const auto& name : fs.list(dir))
            if (const auto base = detail::parse_segment_file_name(name)) entries.push_back({*base, 0});
        if (entries.empty()) {
            // No segment to rebuild it from: the log holds nothing, and opens
            // as a new log once its damaged manifest is gone.
            if (fs.exists(dir / detail::manifest_name)) {
                fs.remove(dir / detail::manifest_name);
                fs.sync_directory(dir);
            }
            return r.check;
        }
        std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
        for (std::size_t i = 0; i + 1 < entries.size(); ++i) {
            const auto path = dir / detail::segment_file_name(entries[i].base);
            const auto f = fs.open_read(path);
            detail::segment_reader<Fs> reader(fs, f, path, fs.size(f, path));
            entries[i].end = entries[i].base;
            for (auto it = reader.next(); it.what == detail::segment_item::kind::record ||
                                          it.what == detail::segment_item::kind::commit;
                 it = reader.next())
                if (it.what == detail::segment_item::kind::commit) entries[i].end = it.rec.offset;
        }
        detail::write_manifest(fs, dir, entries);
        r = scan(fs, dir, scan_mode::every_frame);
    }
    file_log_check out = r.check;
    std::vector<detail::manifest_entry> kept;
    for (std::size_t i = 0; i < r.intact_segments; ++i) kept.push_back({r.segments[i].base, r.segments[i].end});
    if (kept.empty()) kept.push_back({out.intact_end, 0});
    kept.back().end = 0;  // the last one kept is the active segment now
    const auto active_path = dir / detail::segment_file_name(kept.back().base);
    const std::uint64_t active_bytes = r.intact_segments > 0 ? r.intact_bytes : 0;

    if (out.intact && out.unfinished_bytes == 0 && out.stray_files.empty()) return out;
    if (!fs.exists(active_path)) (void)fs.create_new(active_path);
    {
        const auto f = fs.open_write(active_path);
        const auto f_read = fs.open_read(active_path);
        const std::uint64_t size = fs.size(f_read, active_path);
        if (size > active_bytes) {
            fs.truncate(f, active_bytes, active_path);
            fs.sync_data(f, active_path);
            out.bytes_cut += size - active_bytes;
        }
    }
    fs.sync_directory(dir);
    detail::write_manifest(fs, dir, kept);
    std::vector<std::filesystem::path> remove = out.stray_files;
    for (std::size_t i = r.intact_segments; i < r.segments.size(); ++i) remove.push_back(r.segments[i].path);
    for (const auto& p : remove) {
        if (p == active_path || !fs.exists(p)) continue;
        {
            const auto f = fs.open_read(p);
            out.bytes_cut += fs.size(f, p);
        }
        fs.remove(p);
        ++out.segments_removed;
    }
    std::vector<segment> left;
    for (const auto& e : kept) left.push_back(segment::make(e.base, dir / detail::segment_file_name(e.base), e.end));
    remove_orphan_indexes(fs, dir, left);
    fs.sync_directory(dir);
    // A witness of the cut log: what it holds now was flushed.
    const auto witness_path = dir / detail::witness_name;
    const auto wf = fs.create_truncated(witness_path);
    const detail::witness w{(r.witness ? r.witness->sequence : 0) + 1, kept.back().base, active_bytes, out.intact_end};
    fs.write_at(wf, detail::encode_witness(w), (w.sequence % 2) * detail::witness_slot_stride, witness_path);
    fs.sync_data(wf, witness_path);
    fs.sync_directory(dir);
    return out;
}

/// @brief The range `file_log::replay` returns: an input view whose elements
/// are `record_view`s. Copies share one read position.
template <file_system Fs>
class basic_file_log<Fs>::replay_range : public std::ranges::view_interface<replay_range> {
    struct source {
        std::filesystem::path path;
        std::uint64_t limit = 0;  ///< bytes of returned flushes when replay began
        /// The first source of a replay from inside it: where to start
        /// reading. Taken from the sealed segment's index file when the
        /// segment is opened (a compaction may have rewritten it since), or,
        /// for the active segment, from its entries when replay began.
        std::optional<detail::index_entry> seek;
        std::optional<offset_t> look_up_index;  ///< the base whose index file to ask
    };

    struct state {
        Fs fs;
        std::filesystem::path dir;
        std::vector<source> sources;
        byte_buffer pending;  ///< unflushed frames, copied when replay began
        offset_t from = 0;

        std::size_t index = 0;
        std::optional<typename Fs::file> file;
        std::optional<detail::segment_reader<Fs>> reader;
        std::size_t pending_pos = 0;
        std::optional<offset_t> last;
        record_view current;
        bool done = false;
        /// Enough records per batch for a restore to look ahead, few enough
        /// to stay in the processor's cache.
        static constexpr std::size_t max_batch = 256;
        std::vector<record_view> batch;
        bool batching = false;  ///< read with next_batch() since the last begin()
        std::exception_ptr deferred;  ///< met while filling a batch; thrown by the next call

        void restart() {
            rewind();
            batching = false;
            advance();
        }

        void rewind() {
            index = 0;
            reader.reset();
            file.reset();
            pending_pos = 0;
            last.reset();
            done = false;
            batch.clear();
            deferred = nullptr;
        }

        void advance() {
            while (step(true, current) == stepped::skipped) {
            }
        }

        /// The records read so far that the reader can hand out without a
        /// read (those in its buffer), at least one unless at the end; empty
        /// at the end. Valid until the next call.
        std::span<const record_view> next_batch() {
            batch.clear();
            if (deferred) std::rethrow_exception(deferred);
            if (done) return {};
            batch.reserve(max_batch);  // slots stay put while they are filled
            for (;;) {
                // Decoded in place (see frame::decode_body_into).
                record_view& slot = batch.emplace_back();
                stepped st;
                if (batch.size() == 1) {
                    st = step(true, slot);
                } else {
                    // Damage met after some records is reported with the
                    // next call: the records before it are handed out first,
                    // as iteration would.
                    try {
                        st = step(false, slot);
                    } catch (...) {
                        batch.pop_back();
                        deferred = std::current_exception();
                        break;
                    }
                }
                if (st == stepped::record) {
                    if (batch.size() == max_batch) break;
                    continue;
                }
                batch.pop_back();
                if (st != stepped::skipped) break;
            }
            return batch;
        }

        enum class stepped { record, skipped, would_read, end };

        /// One step of the replay: `record` fills `out`. Without
        /// `may_read` it stops (`would_read`) before anything that would
        /// move or free the bytes that views returned before point into: a
        /// refill of the reader's buffer, closing or opening a segment.
        stepped step(bool may_read, record_view& out) {
            if (done) return stepped::end;
            if (reader) {
                if (!may_read && !reader->next_is_buffered()) return stepped::would_read;
                const detail::segment_item it = reader->next(out);
                using kind = detail::segment_item::kind;
                if (it.what == kind::end) {
                    reader.reset();
                    file.reset();
                    ++index;
                    return stepped::skipped;
                }
                if (it.what == kind::bad) throw corruption_error(reader->path().string(), it.pos, it.problem);
                if (it.what == kind::commit) return stepped::skipped;
                if (last && out.offset <= *last)
                    throw corruption_error(reader->path().string(), it.pos, "record offset out of order");
                last = out.offset;
                return out.offset < from ? stepped::skipped : stepped::record;
            }
            if (index < sources.size()) {
                if (!may_read) return stepped::would_read;
                open_source(sources[index]);
                return stepped::skipped;
            }
            if (pending_pos >= pending.size()) {
                done = true;
                return stepped::end;
            }
            // The unflushed frames were copied when the replay began: views
            // into them stay valid.
            next_pending(out);
            return out.offset >= from ? stepped::record : stepped::skipped;
        }

        /// Opens one segment at a time, so a log of any number of segments
        /// replays within the limit on open files. A closed segment that a
        /// compaction rewrote since replay began is read whole (it holds a
        /// subset of the same records); one it removed is skipped (a later
        /// record supersedes each of its records).
        void open_source(const source& s) {
            if (!fs.exists(s.path)) {
                ++index;
                return;
            }
            file.emplace(fs.open_read(s.path));
            const std::uint64_t limit = std::min(fs.size(*file, s.path), s.limit);
            std::optional<detail::index_entry> seek = s.seek;
            if (s.look_up_index)
                if (const auto idx = detail::read_index(fs, dir, *s.look_up_index); idx && idx->first.bytes == limit)
                    seek = detail::seek_entry(idx->second, from);
            // An entry is a hint, checked before it is trusted: the record it
            // names must start where it says, else the segment is read whole.
            if (seek && seek->pos < limit) {
                reader.emplace(fs, *file, s.path, limit, seek->pos);
                const detail::segment_item first = reader->peek();
                if (first.what == detail::segment_item::kind::record && first.rec.offset == seek->offset) return;
            }
            reader.emplace(fs, *file, s.path, limit);
        }

        /// The buffer holds frames this process encoded itself; a bad one is a bug.
        void next_pending(record_view& out) {
            const char* problem = "";
            const std::byte* p = pending.data() + pending_pos;
            const auto info = detail::frame::check_prefix(p, problem);
            if (!info) throw usage_error(std::string("strata: file_log buffer damaged: ") + problem);
            std::uint64_t flush_bytes = 0;
            const auto kind = detail::frame::decode_body_into(
                *info, bytes_view(p + detail::frame::prefix_size, info->body_len), out, flush_bytes, problem);
            if (kind != detail::frame::body_kind::record)
                throw usage_error(std::string("strata: file_log buffer damaged: ") +
                                  (kind == detail::frame::body_kind::commit ? "a commit frame among records" : problem));
            pending_pos += info->frame_size();
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

    /// @brief The next records, as many as the replay has read already (up
    /// to 256, at least one until the end), so that a restore can look at
    /// the keys to come before it applies the first. Empty at the end.
    /// The views are valid until the next call. The first call starts at
    /// the first record >= from; a range is read either this way or with
    /// begin(), not both.
    [[nodiscard]] std::span<const record_view> next_batch() {
        if (!state_) return {};
        if (!state_->batching) {
            state_->rewind();
            state_->batching = true;
        }
        return state_->next_batch();
    }

private:
    friend class basic_file_log;
    std::shared_ptr<state> state_;
};

template <file_system Fs>
typename basic_file_log<Fs>::replay_range basic_file_log<Fs>::replay(offset_t from) const {
    replay_range out;
    out.state_ = std::make_shared<typename replay_range::state>();
    auto& st = *out.state_;
    st.fs = fs_;
    st.dir = dir_;
    st.from = from;
    if (from < durable_end_) {
        // Skip whole segments that end before `from`: segment i holds only
        // offsets below the base of segment i + 1. Then start the first one
        // near `from`, by its sparse index.
        std::size_t first = 0;
        while (first + 1 < segments_.size() && segments_[first + 1].base <= from) ++first;
        for (std::size_t i = first; i < segments_.size(); ++i)
            if (segments_[i].bytes > 0) st.sources.push_back({segments_[i].path, segments_[i].bytes, {}, {}});
        if (!st.sources.empty() && from > segments_[first].base && segments_[first].bytes > 0) {
            if (first + 1 == segments_.size())
                st.sources.front().seek = detail::seek_entry(active_index_.entries(), from);
            else
                st.sources.front().look_up_index = segments_[first].base;
        }
    }
    st.pending = pending_;
    return out;
}

template <file_system Fs>
compaction_stats basic_file_log<Fs>::compact_pass(bool everything) {
    compaction_stats stats;
    const std::size_t sealed = segments_.size() - 1;
    if (sealed == 0) return stats;

    // The clean head: segments a compaction already went through, in which
    // each key appears at most once. The dirty tail after it is what the key
    // map is built from; `compact()` builds it from every sealed segment.
    std::size_t clean = 0;
    if (!everything)
        while (clean < sealed && segments_[clean].cleaned) ++clean;
    std::uint64_t dirty_bytes = 0, sealed_bytes = 0;
    for (std::size_t i = 0; i < sealed; ++i) {
        sealed_bytes += segments_[i].bytes;
        if (i >= clean) dirty_bytes += segments_[i].bytes;
    }
    if (!everything && (dirty_bytes == 0 ||
                        static_cast<double>(dirty_bytes) < options_.min_dirty_ratio * static_cast<double>(sealed_bytes)))
        return stats;
    std::size_t stop = clean + 1;  // the pass covers segments [0, stop)
    for (std::uint64_t taken = segments_[clean].bytes;
         stop < sealed && (everything || taken + segments_[stop].bytes <= options_.max_compaction_bytes); ++stop)
        taken += segments_[stop].bytes;
    stats.passes = 1;

    using kind = detail::segment_item::kind;
    // Calls fn(item) for each record and commit frame of a segment.
    auto for_each_frame = [this, &stats](const segment& s, auto&& fn) {
        const auto f = fs_.open_read(s.path);
        detail::segment_reader<Fs> reader(fs_, f, s.path, s.bytes);
        stats.bytes_read += s.bytes;
        for (;;) {
            const detail::segment_item it = reader.next();
            if (it.what == kind::end) return;
            if (it.what == kind::bad) throw corruption_error(s.path.string(), it.pos, it.problem);
            fn(it);
        }
    };

    // The latest offset of each key of the dirty part taken, and, for
    // `compact()`, of the active segment's flushed records (they supersede,
    // but are never rewritten). Automatic compaction leaves the active
    // segment out, as Kafka's cleaner does: reading up to `segment_bytes` at
    // every pass would cost more than the records it lets go a seal earlier.
    // Looked up by string_view: no key is copied to be looked up.
    std::unordered_map<std::string, offset_t, detail::string_view_hash, std::equal_to<>> latest;
    auto note_latest = [&](const detail::segment_item& it) {
        if (it.what != kind::record) return;
        const std::string_view key = as_chars(it.rec.key);
        if (const auto m = latest.find(key); m != latest.end()) m->second = it.rec.offset;
        else latest.emplace(std::string(key), it.rec.offset);
    };
    for (std::size_t i = clean; i < stop; ++i) for_each_frame(segments_[i], note_latest);
    if (everything && segments_.back().bytes > 0) for_each_frame(segments_.back(), note_latest);

    const std::int64_t now = now_ms();
    enum class verdict { keep, superseded, expired_tombstone };
    auto judge = [&](const segment& s, const detail::segment_item& it) {
        const auto m = latest.find(as_chars(it.rec.key));
        if (m != latest.end() && m->second > it.rec.offset) return verdict::superseded;
        // The latest record of its key in segments [0, stop), all of which
        // this pass rewrites oldest first: every older value of the key goes
        // before the tombstone does.
        if (!it.rec.value && s.sealed_at_ms + options_.delete_retention.count() <= now)
            return verdict::expired_tombstone;
        return verdict::keep;
    };

    // Segments leave `segments_` only once the manifest no longer lists
    // them, and a size changes only once the rename is done, so an exception
    // at any point leaves the log describing what is on disk.
    for (std::size_t i = 0; i < stop;) {
        segment& s = segments_[i];
        std::uint64_t keep = 0, drop = 0, tombstones = 0;
        detail::sparse_index_builder unchanged_entries(options_.index_interval_bytes);
        std::vector<std::uint64_t> dropped_at;  // where the frames to drop start, for the rewrite
        for_each_frame(s, [&](const detail::segment_item& it) {
            if (it.what != kind::record) return;
            unchanged_entries.add(it.rec.offset, it.pos);
            const verdict v = judge(s, it);
            if (v == verdict::keep) {
                ++keep;
                return;
            }
            ++drop;
            dropped_at.push_back(it.pos);
            if (v == verdict::expired_tombstone) ++tombstones;
        });
        if (drop == 0) {
            if (!s.cleaned || !s.indexed) {
                // Nothing to drop: only its index changes, to say it is clean.
                segment cleaned = s;
                cleaned.cleaned = true;
                detail::write_index_temp(fs_, dir_, cleaned.summary(), unchanged_entries.entries());
                detail::publish_index(fs_, dir_, s.base);
                fs_.sync_directory(dir_);
                s.cleaned = s.indexed = true;
            }
            ++i;
            continue;
        }
        stats.records_dropped += drop;
        stats.tombstones_dropped += tombstones;
        stats.bytes_before += s.bytes;
        if (keep == 0) {
            // Out of the manifest first: a crash before the files are gone
            // leaves files the next open recognizes as leftovers.
            std::vector<detail::manifest_entry> entries = manifest_entries();
            entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
            detail::write_manifest(fs_, dir_, entries);
            const auto path = s.path;
            const auto index_path = dir_ / detail::index_file_name(s.base);
            segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i));
            --stop;
            fs_.remove(path);
            if (fs_.exists(index_path)) fs_.remove(index_path);
            fs_.sync_directory(dir_);
            ++stats.segments_removed;
            continue;
        }
        auto temp = s.path;
        temp += temp_suffix;
        segment after = s;
        after.records = 0;
        after.cleaned = true;
        detail::sparse_index_builder entries(options_.index_interval_bytes);
        {
            const auto out = fs_.create_truncated(temp);
            byte_buffer buf;
            std::uint64_t written = 0;
            auto drain = [&] {
                fs_.append(out, buf, temp);
                written += buf.size();
                buf.clear();
            };
            // The records kept, then the segment's last commit frame, which
            // says where its flushes end.
            byte_buffer last_commit;
            std::size_t next_drop = 0;
            for_each_frame(s, [&](const detail::segment_item& it) {
                if (it.what == kind::commit) last_commit.assign(it.raw.begin(), it.raw.end());
                if (it.what != kind::record) return;
                if (next_drop < dropped_at.size() && dropped_at[next_drop] == it.pos) {
                    ++next_drop;
                    return;
                }
                entries.add(it.rec.offset, written + buf.size());
                if (after.records++ == 0) after.first = it.rec.offset;
                after.last = it.rec.offset;
                append_bytes(buf, it.raw);
                if (buf.size() >= (std::size_t{1} << 20)) drain();
            });
            append_bytes(buf, last_commit);
            drain();
            fs_.sync_data(out, temp);
            after.bytes = written;
        }
        detail::write_index_temp(fs_, dir_, after.summary(), entries.entries());
        // The segment, then its index: a crash between them leaves an index
        // of the old size, which opening sees does not fit, and reads the
        // segment instead.
        fs_.rename(temp, s.path);
        detail::publish_index(fs_, dir_, s.base);
        fs_.sync_directory(dir_);
        after.indexed = true;
        s = std::move(after);
        stats.bytes_after += s.bytes;
        ++stats.segments_rewritten;
        ++i;
    }
    return stats;
}

}  // namespace strata
