#pragma once
/// @file
/// @brief Interactive queries: reading the stores of a running application
/// from any thread while its tasks process.
///
/// A query names a partition (or a key, whose partition is computed) and a
/// read-only function over one of the partition's stores. The function runs
/// under the task's lock, which the processing thread and the restore thread
/// also hold while they change the stores: it sees the state between two
/// records, never half an update. A store that cannot answer says why, with
/// a `query_status`, instead of answering from the wrong state.

#include <strata/core/error.hpp>
#include <strata/runtime/metadata.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::runtime {

/// @brief Why a query was or was not answered.
enum class query_status {
    ok,                    ///< answered: the result holds the value
    not_running,           ///< the instance is not running (before run(), after it returned), or does not know
                           ///< the application's assignment yet
    restoring,             ///< the partition runs here but its stores are restoring (see restored/to_restore)
    not_owned,             ///< another instance runs the partition (see owner and owner_endpoint); for a standby
                           ///< read, also: this instance's standby is further behind than allowed
    rebalancing,           ///< the partition is moving: assigned here but not started yet, just given up, or not
                           ///< assigned to anyone yet. Ask again shortly.
    position_not_reached,  ///< the partition runs here but had not processed the asked input position within the wait
    unknown_partition,     ///< the partition number is outside the application's partitions
};

[[nodiscard]] constexpr const char* to_string(query_status s) noexcept {
    switch (s) {
        case query_status::ok: return "ok";
        case query_status::not_running: return "not_running";
        case query_status::restoring: return "restoring";
        case query_status::not_owned: return "not_owned";
        case query_status::rebalancing: return "rebalancing";
        case query_status::position_not_reached: return "position_not_reached";
        case query_status::unknown_partition: return "unknown_partition";
    }
    return "unknown";
}

/// @brief How a query may be answered.
struct read_options {
    /// Answer from this instance's standby copy of the partition when it does
    /// not run the partition itself. The answer may lag the active copy by
    /// `standby_lag` changelog records (given with it).
    bool allow_standby = false;
    /// The most changelog records a standby may be behind to answer.
    std::int64_t max_standby_lag = std::numeric_limits<std::int64_t>::max();
    /// Read your writes: answer only once the task has processed the input
    /// record at this offset (of input topic `position_topic`, in the
    /// queried partition), waiting up to `position_wait`. -1: no such bound.
    /// Only the active copy knows its input position: a standby never
    /// answers a query with a position.
    std::int64_t min_position = -1;
    std::size_t position_topic = 0;  ///< index into application_options::input_topics
    std::chrono::milliseconds position_wait{2'000};
};

/// @brief What a query learnt besides its value.
struct query_outcome {
    query_status status = query_status::not_running;
    std::int32_t partition = -1;
    std::string owner;           ///< the instance the assignment gives the partition ("" if none or unknown)
    std::string owner_endpoint;  ///< its endpoint ("" if unknown)
    /// While restoring: records applied, and at most to apply (an upper
    /// bound: a compacted changelog has gaps).
    std::uint64_t restored = 0;
    std::uint64_t to_restore = 0;
    bool from_standby = false;     ///< answered by a standby copy
    std::int64_t standby_lag = -1;  ///< that copy's lag in changelog records (-1: not a standby read)
    /// The next input offset the task will process (of the `position_topic`):
    /// the answer reflects every record before it. -1 when not known.
    std::int64_t position = -1;

    [[nodiscard]] bool ok() const noexcept { return status == query_status::ok; }
};

/// @brief The answer of a query: a value when `ok()`, else only why not.
template <class R>
struct query_result : query_outcome {
    std::optional<R> value;

    [[nodiscard]] const R& operator*() const& { return value.value(); }
    [[nodiscard]] const R* operator->() const { return &value.value(); }
};

/// @brief One task of this instance, as a status page shows it.
struct task_info {
    std::int32_t partition = -1;
    task_state state = task_state::created;  ///< restoring, running, or standby (a standby copy)
    std::uint64_t restored = 0;               ///< while restoring: records applied
    std::uint64_t to_restore = 0;             ///< while restoring: at most this many in all
    std::int64_t standby_lag = -1;            ///< a standby's lag in changelog records (-1: not looked yet)
};

/// @brief The tasks and the metadata of an instance as queries see them.
/// The processing thread publishes them; any thread reads.
class query_index {
public:
    using task_map = std::map<std::int32_t, std::shared_ptr<task>>;

    /// @brief The instance started (self: its id) or stopped running.
    void set_running(bool running, std::string self = {}) {
        const std::lock_guard lock(mutex_);
        running_ = running;
        self_ = std::move(self);
        if (!running) {
            active_.clear();
            standbys_.clear();
            metadata_.reset();
        }
    }

    void publish_tasks(const task_map& active, const task_map& standbys) {
        const std::lock_guard lock(mutex_);
        active_ = active;
        standbys_ = standbys;
    }

    void publish_metadata(std::shared_ptr<const application_metadata> m) {
        const std::lock_guard lock(mutex_);
        metadata_ = std::move(m);
    }

    /// @brief The newest metadata, or null when the instance is not running
    /// or has not read an assignment yet.
    [[nodiscard]] std::shared_ptr<const application_metadata> metadata() const {
        const std::lock_guard lock(mutex_);
        return metadata_;
    }

    /// @brief This instance's active tasks, then its standbys, by partition.
    [[nodiscard]] std::vector<task_info> tasks() const {
        task_map active, standbys;
        {
            const std::lock_guard lock(mutex_);
            active = active_;
            standbys = standbys_;
        }
        std::vector<task_info> out;
        for (const auto* m : {&active, &standbys})
            for (const auto& [p, t] : *m) {
                const task_state s = t->state();
                if (s == task_state::closed) continue;
                out.push_back({p, s, t->restore_done(), t->restore_total(), s == task_state::standby ? t->standby_lag() : -1});
            }
        return out;
    }

    /// @brief Runs f(task&) under the lock of partition p's task, if the
    /// partition can answer here; see query_status.
    template <class F>
    auto read(std::int32_t p, const read_options& o, F&& f) const
        -> query_result<std::remove_cvref_t<std::invoke_result_t<F&, task&>>> {
        using R = std::remove_cvref_t<std::invoke_result_t<F&, task&>>;
        static_assert(!std::ranges::view<R>,
                      "strata::runtime: a query returns a value, not a view into the store: the view would outlive "
                      "the lock that makes reading the store safe. Copy the elements into a container in the query");
        query_result<R> r;
        r.partition = p;
        std::shared_ptr<task> active, standby;
        std::shared_ptr<const application_metadata> md;
        std::string self;
        {
            const std::lock_guard lock(mutex_);
            if (!running_ || metadata_ == nullptr) return r;  // not_running
            md = metadata_;
            self = self_;
            if (const auto it = active_.find(p); it != active_.end()) active = it->second;
            if (const auto it = standbys_.find(p); it != standbys_.end()) standby = it->second;
        }
        if (p < 0 || p >= md->partitions()) {
            r.status = query_status::unknown_partition;
            return r;
        }
        const partition_metadata where = md->partition(p);
        r.owner = where.active;
        r.owner_endpoint = where.active_endpoint;

        if (active) {
            const auto deadline = std::chrono::steady_clock::now() + o.position_wait;
            for (;;) {
                const task_state s = active->state();
                if (s == task_state::created || s == task_state::restoring) {
                    r.status = query_status::restoring;
                    r.restored = active->restore_done();
                    r.to_restore = active->restore_total();
                    return r;
                }
                if (s != task_state::running) break;  // closed: given up
                {
                    const std::lock_guard lock(active->mutex());
                    if (active->state() != task_state::running) break;
                    r.position = position_of(*active, o.position_topic);
                    if (o.min_position < 0 || r.position > o.min_position) {
                        r.value.emplace(std::invoke(f, *active));
                        r.status = query_status::ok;
                        return r;
                    }
                }
                if (std::chrono::steady_clock::now() >= deadline) {
                    r.status = query_status::position_not_reached;
                    return r;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            r.status = query_status::rebalancing;
            return r;
        }

        if (standby && o.allow_standby && o.min_position < 0) {
            const std::lock_guard lock(standby->mutex());
            r.standby_lag = standby->standby_lag();
            if (standby->state() == task_state::standby && standby->built() && r.standby_lag >= 0 &&
                r.standby_lag <= o.max_standby_lag) {
                r.value.emplace(std::invoke(f, *standby));
                r.from_standby = true;
                r.status = query_status::ok;
                return r;
            }
        }
        r.status = where.active.empty() || where.active == self ? query_status::rebalancing : query_status::not_owned;
        return r;
    }

private:
    /// The next offset the task will process of input topic `topic` (under its lock).
    static std::int64_t position_of(const task& t, std::size_t topic) {
        std::int64_t at = -1;
        if (topic < t.next_offsets.size()) at = t.next_offsets[topic];
        if (topic < t.committed_offsets.size()) at = std::max(at, t.committed_offsets[topic]);
        return at;
    }

    mutable std::mutex mutex_;
    bool running_ = false;
    std::string self_;
    task_map active_;
    task_map standbys_;
    std::shared_ptr<const application_metadata> metadata_;
};

}  // namespace strata::runtime
