#pragma once
/// @file
/// @brief How a `file_log` is tuned (`file_log_options`), and what it
/// reports: what a compaction did (`compaction_stats`), what `verify` found
/// or `repair` did (`file_log_check`). See file_log.hpp.

#include <strata/core/bytes.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
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

}  // namespace strata
