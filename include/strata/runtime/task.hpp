#pragma once
/// @file
/// @brief A task: the stores and the processor of one partition number of
/// the input, as the runtime drives it. `task` is the part the runtime sees
/// (states, stores, offsets, timeline); the typed part, with the user's
/// stores and processor, is in application.hpp. Users meet it in
/// `application::on_takeover` (its id and `takeover_timeline`); how the
/// runtime handles each of its stores is detail/store_port.hpp.

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/metrics/gauge.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/store_port.hpp>
#include <strata/runtime/error.hpp>
#include <strata/runtime/task_state.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime {

class task_context;

/// @brief Wall-clock milliseconds since the epoch: the unit of every
/// timeline, since its points are taken on different machines.
[[nodiscard]] inline std::int64_t wall_clock_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// @brief How a task came to run here, point by point (wall-clock ms; 0
/// where unknown). For a task taken over from an instance that died, the
/// gaps are the failover: detection (previous commit to the leader noticing
/// the membership change), assignment (to this instance taking the task),
/// restore (to its stores caught up), and the first poll (to its first record).
struct takeover_timeline {
    std::int64_t previous_commit_ms = 0;  ///< the last commit of the task's previous owner (from the commit's metadata)
    std::string previous_owner;           ///< the instance that made that commit
    std::int64_t noticed_ms = 0;          ///< the leader saw the membership change that moved the task
    std::int64_t assigned_ms = 0;         ///< this instance took the task
    std::int64_t restored_ms = 0;         ///< every store of the task caught up with its changelog
    std::int64_t first_record_ms = 0;     ///< the first input record was processed
    std::uint64_t records_restored = 0;   ///< changelog records the restore applied, over all stores
};

/// @brief The part of a task the runtime drives. The typed part (the user's
/// stores and processor) derives from it.
///
/// Threads: a task is built and restored on the instance's restore thread,
/// then handed over (under a mutex) to the processing thread. Whoever
/// changes its stores (the restore thread, then the processing thread)
/// holds `mutex()` while doing so, and so does an interactive query that
/// reads them from another thread. `state` and the restore figures may be
/// read from any thread.
class task {
public:
    explicit task(std::int32_t partition) : partition_(partition), id_(std::to_string(partition)) {}
    /// A task of a sub-topology: its id is `<sub_topology>_<partition>`,
    /// which sets it apart from the other sub-topologies' tasks of the same
    /// partition in metrics and messages (Kafka Streams' `1_3`, by name).
    task(std::int32_t partition, std::string_view sub_topology)
        : partition_(partition),
          id_(sub_topology.empty() ? std::to_string(partition)
                                   : std::string(sub_topology) + "_" + std::to_string(partition)) {}
    task(const task&) = delete;
    task& operator=(const task&) = delete;
    virtual ~task() = default;

    [[nodiscard]] std::int32_t partition() const noexcept { return partition_; }
    /// The task's name in metrics, logs and errors: its partition number
    /// (within a topology, prefixed with the sub-topology's name).
    [[nodiscard]] const std::string& id() const noexcept { return id_; }

    [[nodiscard]] task_state state() const noexcept { return state_.load(std::memory_order_acquire); }
    void set_state(task_state s) noexcept { state_.store(s, std::memory_order_release); }

    /// The task's stores, once built.
    [[nodiscard]] const std::vector<std::unique_ptr<detail::store_port>>& stores() const noexcept { return stores_; }

    /// Held while the task's stores change or are read by a query.
    [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }
    /// Whether the factory has built the stores (read under `mutex()`).
    [[nodiscard]] bool built() const noexcept { return built_; }

    /// Changelog records the running restore applied, and will apply in all,
    /// over the task's stores (for a standby: since it was promoted).
    [[nodiscard]] std::uint64_t restore_done() const noexcept { return restore_done_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t restore_total() const noexcept { return restore_total_.load(std::memory_order_relaxed); }
    void set_restore_progress(std::uint64_t done, std::uint64_t total) noexcept {
        restore_done_.store(done, std::memory_order_relaxed);
        restore_total_.store(total, std::memory_order_relaxed);
    }
    /// A standby's lag in changelog records (the largest over its stores),
    /// -1 until it has looked at its changelogs.
    [[nodiscard]] std::int64_t standby_lag() const noexcept { return standby_lag_.load(std::memory_order_relaxed); }
    void set_standby_lag(std::int64_t lag) noexcept { standby_lag_.store(lag, std::memory_order_relaxed); }

    /// Builds the task's stores with the user's factory (on the restore thread).
    virtual void build(task_context& context) = 0;
    /// Called on the processing thread when the task starts running.
    virtual void start() = 0;
    /// Decodes and processes one input record.
    /// @throws processing_error the processor threw; bad_record_error under `fail`
    virtual void process(const rd_kafka_message_t& m) = 0;
    /// Processes one record of input topic number `topic` under the task's
    /// lock (queries read the stores meanwhile), then moves the topic's next
    /// offset and partition time past it.
    /// @throws processing_error as process()
    void process_input(const rd_kafka_message_t& m, std::size_t topic) {
        const std::lock_guard lock(mutex_);
        process(m);
        next_offsets[topic] = m.offset + 1;
        if (const std::int64_t ts = rd_kafka_message_timestamp(&m, nullptr);
            topic < partition_times.size() && ts > partition_times[topic])
            partition_times[topic] = ts;
    }
    /// Sets the task's stream time before it starts, from its commits.
    virtual void resume_stream_time(std::int64_t timestamp) = 0;
    /// Runs the wall-clock punctuations that are due.
    /// @returns whether any ran (what they wrote is committed like records)
    virtual bool punctuate(std::chrono::steady_clock::time_point now) = 0;

    /// Flushes every store.
    void flush_stores() {
        const std::lock_guard lock(mutex_);
        for (auto& s : stores_) s->flush();
    }
    /// After a transaction committed: the stores that keep their committed
    /// offset in their own data commit their updates with it.
    void commit_self_checkpointing_stores() {
        const std::lock_guard lock(mutex_);
        for (auto& s : stores_)
            if (kafka::changelog* log = s->changelog(); log != nullptr && s->commits_itself())
                s->save_checkpoint(log->flush());
    }
    /// Whether local data may run ahead of what a transaction committed:
    /// a persistent store that does not keep uncommitted updates out of its
    /// durable data. Only such a task's data is wiped after a crash under
    /// exactly-once.
    [[nodiscard]] bool may_run_ahead_of_commits() const {
        for (const auto& s : stores_)
            if (s->persistent() && !s->commits_itself()) return true;
        return false;
    }
    /// Closes every store (after a flush, or without one when the state is
    /// thrown away); the task is closed from then on.
    void close_stores() noexcept {
        const std::lock_guard lock(mutex_);
        set_state(task_state::closed);  // under the lock: no query reads a closed store
        for (auto& s : stores_) {
            try {
                s->close();
            } catch (...) {
                // Closing is best effort: the changelog holds the state.
            }
        }
    }

    /// The next offset to read of each input topic (the one a commit names),
    /// -1 until the first record of that topic. Changed under `mutex()`.
    std::vector<std::int64_t> next_offsets;
    /// The task's checkpoint file (empty: none).
    std::filesystem::path checkpoint_path;
    /// The largest record timestamp seen of each input topic's partition
    /// (-1: none), committed with the offsets as Kafka Streams does.
    std::vector<std::int64_t> partition_times;
    /// The committed input offset of each input topic, looked up before the
    /// task starts (RD_KAFKA_OFFSET_BEGINNING where nothing was committed).
    std::vector<std::int64_t> committed_offsets;
    /// The task's consumer lag gauges, one per input topic (processing thread).
    std::vector<metrics::gauge*> lag_gauges;
    /// Under exactly-once: the transactional ids of instances that may have
    /// written for this task without letting go of it (not members of the
    /// decision that gave it here). They are fenced before the restore.
    std::vector<detail::fence_target> fence;
    /// Records processed and punctuations run since the last commit.
    std::uint64_t uncommitted = 0;
    takeover_timeline timeline;

protected:
    std::vector<std::unique_ptr<detail::store_port>> stores_;
    bool built_ = false;  // under mutex_

private:
    std::int32_t partition_;
    std::string id_;
    std::atomic<task_state> state_{task_state::created};
    mutable std::mutex mutex_;
    std::atomic<std::uint64_t> restore_done_{0};
    std::atomic<std::uint64_t> restore_total_{0};
    std::atomic<std::int64_t> standby_lag_{-1};
};

}  // namespace strata::runtime
