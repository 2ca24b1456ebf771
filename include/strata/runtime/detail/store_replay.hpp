#pragma once
/// @file
/// @brief The restore of one store of a task from its changelog partition,
/// a slice at a time (the restore thread, restorer.hpp, takes turns over
/// many): where it starts, how far it reads, its gauges, and the check that
/// the changelog still holds what the store was built from.

#include <strata/kafka/changelog.hpp>
#include <strata/kafka/changelog_reader.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/restore/restore.hpp>
#include <strata/runtime/detail/store_port.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace strata::runtime::detail {

class store_replay {
public:
    using clock = std::chrono::steady_clock;

    /// @param from the offset the store holds everything below
    store_replay(store_port& port, kafka::changelog& log, offset_t from, metrics::registry& reg,
                 const std::string& task_id)
        : port_(&port), log_(&log) {
        progress.store = port.name();
        progress.from = from;
        progress.position = from;
        const metrics::labels labels{{"task", task_id}, {"store", std::string(port.name())}};
        total_ = &reg.gauge_for("strata_task_restore_records_total",
                                "Changelog records the running or last restore of a task's store reads at most", labels);
        done_ = &reg.gauge_for("strata_task_restore_records_restored",
                               "Changelog records the running or last restore of a task's store applied", labels);
        rate_ = &reg.gauge_for("strata_task_restore_records_per_second",
                               "Records per second of the running or last restore of a task's store", labels);
        lag_ = &reg.gauge_for("strata_standby_lag_records",
                              "Changelog records a standby task's store is behind its changelog's end", labels);
        done_->set(0);
    }

    [[nodiscard]] store_port& port() const noexcept { return *port_; }
    [[nodiscard]] const kafka::changelog& log() const noexcept { return *log_; }

    /// Whether a replay is open (a standby's, once it began, until it is
    /// closed, promoted or lost).
    [[nodiscard]] bool open() const noexcept { return source_ != nullptr; }
    /// Read to the end (a standby: everything fetched so far).
    [[nodiscard]] bool finished() const noexcept { return finished_; }

    /// What `open_to_end` found.
    struct bounds {
        offset_t start = 0, end = 0;
        bool past_end = false;      // the store holds offsets the changelog no longer has
        bool before_start = false;  // (a standby only) records it had not read were deleted
        [[nodiscard]] bool stale() const noexcept { return past_end || before_start; }
    };

    /// Opens a replay from the store's position to the changelog's end as
    /// of now. Only a position beyond either end can be seen: a log
    /// truncated and written again past the position looks like any other.
    /// An active task may restore a changelog whose head was deleted (a
    /// user's compact,delete topic): what it reads from the start is all
    /// there is. A standby that held the deleted part missed its updates.
    /// On a stale result nothing stays open.
    /// `known`: the changelog's bounds, asked for with other stores' (the
    /// restorer asks for all of a task's at once), or null to ask now.
    bounds open_to_end(bool standby, const kafka::partition_bounds* known = nullptr) {
        return open(standby, false, known);
    }

    /// A standby's replay: from the store's position on, with no end, kept
    /// open (records come as librdkafka fetches them for the instance's
    /// shared reader: no request per look). The same checks as open_to_end
    /// at the start; later, apply_slice finds from the fetches what they
    /// find: a log that lost records sends the fetcher back to its start
    /// (applied::went_back), records deleted before it fetched them move
    /// the log's start past the position (applied::deleted_to).
    bounds follow(const kafka::partition_bounds* known = nullptr) { return open(true, true, known); }

    /// Starts a report anew from where the store is (a standby promoted:
    /// its restore reports only the rest) and lets go of the replay, which
    /// may end before the changelog does by now.
    void restart_from_position() {
        progress.from = progress.position;
        progress.records_done = 0;
        started_ = clock::now();
        source_.reset();
    }

    /// Lets go of the changelog's consumer.
    void close() noexcept { source_.reset(); }

    /// A standby's replay: its partition and the offset it reads next
    /// (the restorer pauses and resumes the standbys' reader with them).
    [[nodiscard]] std::optional<kafka::changelog_reader::position> follow_position() const {
        if (!following_ || !source_) return std::nullopt;
        return kafka::changelog_reader::position{log_->topic(), log_->partition(),
                                                 static_cast<std::int64_t>(source_->range.next_offset())};
    }

    /// Applies up to `slice_records` records under the task's mutex (queries
    /// of a standby read the stores meanwhile; the slice bounds their wait).
    /// @returns the records applied, and for a standby the offset its
    ///          consumer went back to below the position, if it did: the log
    ///          was truncated below it and read again from its start
    struct applied {
        std::size_t records = 0;
        std::optional<offset_t> went_back;
        std::optional<offset_t> deleted_to;  ///< following: records below it it had not read were deleted
    };
    applied apply_slice(std::mutex& task_mutex, std::size_t slice_records, bool standby) {
        applied a;
        if (!source_->begun) {
            // Only now: beginning waits for the first fetch, and a task's
            // replays opened together are fetched together (opened and
            // begun one by one, each store waited for a fetch of its own).
            source_->it = source_->range.begin();
            source_->begun = true;
        }
        auto& it = source_->it;
        if (following_ && it == std::default_sentinel) (void)source_->range.poll();
        {
            const std::lock_guard lock(task_mutex);
            while (a.records < slice_records && it != std::default_sentinel) {
                const record_view& r = *it;
                if (!following_ && r.offset >= progress.to) break;
                if (standby && r.offset < progress.position) {
                    a.went_back = r.offset;
                    break;
                }
                if (following_ && r.offset > progress.position && progress.position > 0 &&
                    source_->range.start_offset() > progress.position) {
                    // The log starts past the position, and the next record
                    // too: what lay between was deleted before it was fetched.
                    a.deleted_to = source_->range.start_offset();
                    break;
                }
                port_->restore(r);
                progress.position = r.offset + 1;
                ++progress.records_done;
                ++a.records;
                ++it;
            }
            if (a.records > 0) port_->end_restore_batch();
        }
        if (following_ && !a.went_back && source_->range.went_back() && *source_->range.went_back() < progress.position)
            a.went_back = source_->range.went_back();
        if (a.went_back || a.deleted_to) return a;
        if (following_) {
            // Caught up with what was fetched: a look later takes in more.
            finished_ = it == std::default_sentinel && !source_->range.poll();
            if (finished_ && progress.position > 0 && source_->range.start_offset() > progress.position) {
                // Nothing left to read, and the log starts past the position.
                a.deleted_to = source_->range.start_offset();
                return a;
            }
            progress.to = std::max({progress.to, source_->range.end_offset(), progress.position});
            progress.records_total = progress.to - progress.from;
        } else if (it == std::default_sentinel || progress.position >= progress.to) {
            finished_ = true;
            progress.position = std::max(progress.position, progress.to);
            source_.reset();
        }
        lag_->set(static_cast<double>(lag()));
        done_->set(static_cast<double>(progress.records_done));
        const std::chrono::duration<double> elapsed = clock::now() - started_;
        if (elapsed.count() > 0) rate_->set(static_cast<double>(progress.records_done) / elapsed.count());
        return a;
    }

    /// Why an active task's store cannot restore from a stale changelog
    /// (`checkpoint`: the file its position came from, "" when it was a standby's copy).
    [[nodiscard]] std::string active_stale_message(const bounds& b, const std::string& task_id,
                                                   const std::string& checkpoint) const {
        return "task " + task_id + ": " +
               (checkpoint.empty() ? std::string("the copy kept as a standby") : "the checkpoint " + checkpoint) +
               " says the store holds offsets below " + std::to_string(progress.position) + ", but its changelog " +
               log_->where() + " ends at " + std::to_string(b.end) +
               ": the changelog lost records it had acknowledged, or the state directory belongs to another "
               "application. Nothing was restored; delete the task's folder to rebuild it from what the changelog "
               "holds";
    }

    /// Why a standby's copy of this store is stale and rebuilt.
    [[nodiscard]] std::string standby_stale_message(const bounds& b, const std::string& task_id) const {
        return "standby of task " + task_id + ": store '" + std::string(port_->name()) + "' holds offsets below " +
               std::to_string(progress.position) + ", but its changelog " + log_->where() +
               (b.past_end ? " now ends at " + std::to_string(b.end) +
                                 " (records it had were lost: an unclean leader election, a topic made again)"
                           : " now starts at " + std::to_string(b.start) + " (records it had not read were deleted)") +
               "; the copy is rebuilt from the changelog";
    }

    /// Why a standby whose consumer went back to `offset` is rebuilt.
    [[nodiscard]] std::string went_back_message(offset_t offset, const std::string& task_id) const {
        return "standby of task " + task_id + ": store '" + std::string(port_->name()) + "' read up to offset " +
               std::to_string(progress.position) + " of its changelog " + log_->where() + ", which then gave offset " +
               std::to_string(offset) +
               " (the log was truncated below it, and read again from its start); the copy is rebuilt from the "
               "changelog";
    }

    /// Why a standby that found records deleted before it read them (the log
    /// now starting at `start`) is rebuilt.
    [[nodiscard]] std::string deleted_message(offset_t start, const std::string& task_id) const {
        return standby_stale_message(bounds{start, progress.to, false, true}, task_id);
    }

    /// Records between where the store is and the end of its current replay.
    [[nodiscard]] std::int64_t lag() const noexcept {
        return static_cast<std::int64_t>(progress.to - std::min(progress.position, progress.to));
    }

    restore_progress progress;
    clock::time_point next_look{};  // a standby's next look at its changelog

private:
    bounds open(bool standby, bool follow, const kafka::partition_bounds* known) {
        source_ = std::make_unique<replay>(*log_, progress.position, follow, known);
        following_ = follow;
        bounds b{source_->range.start_offset(), source_->range.end_offset()};
        b.past_end = progress.position > b.end;
        b.before_start = standby && progress.position > 0 && progress.position < b.start;
        if (b.stale()) {
            source_.reset();
            return b;
        }
        progress.to = std::max(b.end, progress.position);
        progress.records_total = progress.to - progress.from;
        finished_ = false;
        lag_->set(static_cast<double>(lag()));
        total_->set(static_cast<double>(progress.records_total));
        return b;
    }

    /// The replay of one changelog partition, held still in memory (its
    /// iterator points into it). Made, it is being fetched; its iterator
    /// begins with the first slice.
    struct replay {
        replay(kafka::changelog& log, offset_t from, bool follow, const kafka::partition_bounds* known)
            : range(known != nullptr ? (follow ? log.follow(from, *known) : log.replay(from, *known))
                                     : (follow ? log.follow(from) : log.replay(from))) {}
        kafka::changelog::replay_range range;
        kafka::changelog::replay_range::iterator it;
        bool begun = false;
    };

    store_port* port_;
    kafka::changelog* log_;
    std::unique_ptr<replay> source_;
    bool following_ = false;  // source_ follows the changelog (a standby's)
    bool finished_ = false;
    clock::time_point started_ = clock::now();
    metrics::gauge *total_, *done_, *rate_, *lag_;
};

}  // namespace strata::runtime::detail
