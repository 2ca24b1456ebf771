#pragma once
/// @file
/// @brief The committer, with no Kafka in it: when the tasks' work may be
/// written and committed, what a commit carries, the order of its steps
/// under each guarantee, and what a refused or aborted commit means. The
/// Kafka calls are behind `commit_port` (kafka_commit_port.hpp).
///
/// - A commit carries, for each input partition a task has read, the next
///   offset to read, with the partition's time, the instance and the wall
///   clock in Kafka Streams' metadata format (commit_metadata.hpp). A task
///   with nothing new since its last commit (no record, no punctuation) does
///   not make one happen.
/// - At-least-once: the stores are flushed, then every output and changelog
///   write is awaited, then the offsets go to the group: nothing is marked
///   consumed before what it caused is durable. An accepted commit renews
///   the lease (lease.hpp) from when it was sent. One the group refuses
///   while it rebalances is dropped: the work stays uncommitted, to go with
///   the next commit or be processed again by the next owner. One the
///   group does not answer in time counts the same, and renews nothing: its
///   offsets may still land later, which is harmless, as what they mark
///   consumed is durable already. None is sent while the member joins the
///   group again (group_stats.hpp says why): deferred, it counts the same.
/// - Under the lease: outside it nothing is committed, and keep_lease()
///   commits something nothing reads when a third of a session is left.
///   With heartbeats (the runtime has them), their lease replaces the
///   group's (liveness.hpp, heartbeats.hpp): `heartbeat_lease_until` says
///   until when.
/// - Exactly-once: the stores are flushed into the open transaction, the
///   offsets are sent into it, it commits, the next one begins; only then
///   do the stores that keep their committed offset in their own data take
///   their updates in. An aborted transaction leaves the stores ahead of
///   their changelogs: the caller rebuilds them. A fenced producer throws
///   (another instance owns the work now).
/// - Exactly-once, while the member joins the group again: a commit on
///   the interval waits (`deferred`), its work kept in the open
///   transaction, for at most `defer_at_most`. The transaction's offsets
///   carry the member's generation, and a transaction sent between the
///   group's new generation and the member's learning it is refused
///   (ILLEGAL_GENERATION) and aborted, and every running task rebuilt: a
///   fresh-clone run saw three such aborts in a row after a member joined.
///   A commit that hands tasks over or stops (`commit_kind::handover`)
///   does not wait: the next owner starts from what it commits.
/// - Under either, a write that failed ends the commit the same way:
///   nothing is committed and the tasks are rebuilt
///   (recover_from_failed_write); except that under at-least-once the
///   failed records of a task's changelogs and outputs concern that task
///   alone: the other tasks' work is committed, and only the tasks whose
///   writes failed are rebuilt (failed_tasks()). A record sent for no task
///   that failed rebuilds them all.

#include <strata/core/error.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/detail/commit_metadata.hpp>
#include <strata/runtime/detail/lease.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

/// @brief One input partition's offset to commit.
struct offset_to_commit {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string metadata;
    friend bool operator==(const offset_to_commit&, const offset_to_commit&) = default;
};

/// @brief The group's answer to an offset commit outside a transaction.
enum class group_answer {
    accepted,
    rebalancing,
    unanswered,  ///< not within the port's wait (the coordinator's connection is down or slow)
    deferred,    ///< not sent: the member is joining the group again (group_stats.hpp)
};
/// @brief How a transaction ended that was not fenced.
enum class transaction_end { committed, aborted };

/// @brief Why a commit is made: on the commit interval, or to hand tasks
/// over (a release, a stop), which must not wait (see the file comment).
enum class commit_kind { interval, handover };

/// @brief The tasks (by partition) some of whose output records the broker
/// did not acknowledge, and what it said of the first.
struct output_failures {
    std::vector<std::int32_t> tasks;
    std::string message;
};

/// @brief What a commit needs of Kafka.
class commit_port {
public:
    virtual ~commit_port() = default;
    /// At-least-once: returns once every output and changelog write is
    /// acknowledged or failed. @returns the tasks some of whose output
    /// records failed @throws a record of no task failed
    virtual output_failures flush_output() = 0;
    /// At-least-once: commits `offsets` to the group, waiting a bounded
    /// time for its answer (a commit left unanswered may still land later).
    /// @throws an error other than a rebalance under way
    virtual group_answer commit_to_group(const std::vector<offset_to_commit>& offsets) = 0;
    /// Exactly-once: sends `offsets` into the open transaction and commits it.
    /// @throws the producer was fenced or failed
    virtual transaction_end commit_transaction(const std::vector<offset_to_commit>& offsets) = 0;
    /// Exactly-once: opens the next transaction.
    virtual void begin_transaction() = 0;
    /// After a write failed (a record not acknowledged in time: its
    /// partition had no leader; or one the lease refused): exactly-once
    /// aborts the open transaction; at-least-once waits until everything
    /// handed to the producer has landed or failed, so a rebuild reads it.
    /// @returns false when the producer cannot go on (fenced, or failed for good)
    virtual bool discard_failed_writes() = 0;
    /// Whether the member is joining the group again (group_stats.hpp):
    /// a transaction's offsets sent now may carry a generation the group
    /// has left behind.
    [[nodiscard]] virtual bool group_rejoining() const { return false; }
};

/// @brief What the committer reads and changes of a task (runtime::task).
template <class T>
concept committable_task = requires(T& t, const T& ct) {
    { ct.partition() } -> std::convertible_to<std::int32_t>;
    { ct.id() } -> std::convertible_to<std::string>;
    { t.next_offsets } -> std::convertible_to<std::vector<std::int64_t>>;
    { t.partition_times } -> std::convertible_to<std::vector<std::int64_t>>;
    { t.uncommitted } -> std::convertible_to<std::uint64_t>;
    t.flush_stores();
    t.commit_self_checkpointing_stores();
};

struct committer_options {
    bool exactly_once = false;
    std::string instance;
    std::vector<std::string> input_topics;
    std::chrono::milliseconds session_timeout{10'000};
    /// Until when the heartbeats' lease holds (liveness.hpp); empty: the group's lease alone.
    std::function<std::chrono::steady_clock::time_point()> heartbeat_lease_until{};
    /// What keep_lease() commits: partition 0 of it, at offset 0.
    std::string lease_topic;
    /// Exactly-once: the longest an interval commit waits while the member
    /// joins the group again (the transaction stays open meanwhile).
    std::chrono::milliseconds defer_at_most{0};
    std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
    std::function<std::int64_t()> wall_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
};

enum class commit_outcome {
    nothing_to_commit,
    held,       ///< at-least-once, outside the lease
    committed,
    refused,    ///< at-least-once: the group rebalances, or did not answer in time; the work stays uncommitted
    deferred,   ///< exactly-once: the member joins the group again; the work stays in the open transaction
    aborted,    ///< a write failed (the transaction was aborted): rebuild the tasks
};

class committer {
public:
    using time_point = std::chrono::steady_clock::time_point;

    committer(committer_options o, commit_port& port, metrics::registry& reg)
        : o_(std::move(o)), port_(&port), registry_(&reg), lease_(o_.session_timeout) {}

    /// @brief Whether the instance may process, punctuate and commit now:
    /// always under exactly-once (fencing guards it), within the lease under at-least-once.
    [[nodiscard]] bool may_write() const { return o_.exactly_once || within_leases(o_.now()); }

    /// @brief At-least-once with heartbeats: whether their lease is out.
    /// The instance may then have been left out of a decision it has not
    /// read (compaction may even keep it from ever reading it), so it lets
    /// go of its tasks and starts none until it holds again (liveness.hpp).
    [[nodiscard]] bool heartbeat_lease_out() const {
        return !o_.exactly_once && o_.heartbeat_lease_until && o_.now() >= o_.heartbeat_lease_until();
    }

    /// @brief A new membership earns its own lease.
    void new_membership() {
        lease_.reset();
        next_lease_try_ = {};
        held_ = false;
    }

    /// @brief At-least-once, for a member: renews the lease when a third of
    /// a session is left (or it ran out) by committing `lease_topic`[0]@0,
    /// and counts the times it ran out.
    void keep_lease() {
        if (o_.exactly_once || o_.heartbeat_lease_until) return;
        const time_point sent = o_.now();
        if (lease_.renewal_due(sent) && sent >= next_lease_try_) {
            bool accepted = false;
            try {
                accepted = port_->commit_to_group({{o_.lease_topic, 0, 0, {}}}) == group_answer::accepted;
            } catch (const std::exception&) {
                // The member is gone (the caller hears it through its member
                // id) or the coordinator is away: no lease until a commit goes through.
            }
            if (accepted) lease_.confirmed(sent);
            else next_lease_try_ = o_.now() + std::chrono::milliseconds(50);
        }
        const bool valid = lease_.valid(o_.now());
        if (held_ && !valid)
            counter("strata_instance_lease_expired_total",
                    "Times this instance stopped writing because the group had not confirmed it a member lately")
                .inc();
        held_ = valid;
    }

    /// @brief The offsets a commit of `ts` carries.
    template <committable_task T>
    [[nodiscard]] std::vector<offset_to_commit> offsets_of(const std::vector<T*>& ts) const {
        std::vector<offset_to_commit> out;
        const std::int64_t wall = o_.wall_ms();
        for (const T* t : ts) {
            for (std::size_t i = 0; i < o_.input_topics.size() && i < t->next_offsets.size(); ++i) {
                if (t->next_offsets[i] < 0) continue;  // nothing read of it yet
                const std::int64_t time = i < t->partition_times.size() ? t->partition_times[i] : -1;
                out.push_back({o_.input_topics[i], t->partition(), t->next_offsets[i],
                               encode_commit_metadata({time, o_.instance, wall})});
            }
        }
        return out;
    }

    /// @brief Commits the work of the running tasks `ts`.
    template <committable_task T>
    commit_outcome commit(const std::vector<T*>& ts, commit_kind kind = commit_kind::handover) {
        if (!may_write()) return commit_outcome::held;
        bool work = false;
        for (const T* t : ts) work = work || t->uncommitted != 0;
        if (!work) return commit_outcome::nothing_to_commit;
        if (o_.exactly_once && kind == commit_kind::interval && defer_while_rejoining())
            return commit_outcome::deferred;
        const time_point start = o_.now();
        failed_.clear();
        std::vector<T*> flushed;  // the tasks whose writes all landed
        flushed.reserve(ts.size());
        std::exception_ptr failure;  // the first of some tasks' failed writes
        try {
            for (T* t : ts) {
                try {
                    t->flush_stores();
                    flushed.push_back(t);
                } catch (...) {
                    // At-least-once, the records a changelog (or, below,
                    // the output) failed to deliver are its task's alone:
                    // the other tasks' writes landed, and their work is
                    // committed. Rebuilding every task for one record that
                    // timed out turned a busy broker into rebuilds of all an
                    // instance's tasks, one after another (1,000 tasks,
                    // docs/benchmarks-runtime.md).
                    if (o_.exactly_once || !caused_by<changelog_error>(std::current_exception())) throw;
                    if (!failure) failure = std::current_exception();
                    failed_.push_back(t->partition());
                }
            }
            if (failure && flushed.empty()) std::rethrow_exception(failure);
            if (!o_.exactly_once) {
                // An output record that failed is its task's too.
                const output_failures lost = port_->flush_output();
                for (const std::int32_t p : lost.tasks) {
                    if (std::find(failed_.begin(), failed_.end(), p) == failed_.end()) failed_.push_back(p);
                    std::erase_if(flushed, [&](const T* t) { return t->partition() == p; });
                }
                if (!lost.tasks.empty() && !failure) failure = std::make_exception_ptr(changelog_error(lost.message));
                if (failure && flushed.empty()) std::rethrow_exception(failure);
            }
        } catch (...) {
            failed_.clear();  // every task is rebuilt
            if (!recover_from_failed_write(std::current_exception())) throw;
            last_failure_ = message_of(std::current_exception());
            return commit_outcome::aborted;
        }
        if (failure) {
            if (!recover_from_failed_write(failure)) std::rethrow_exception(failure);
            last_failure_ = message_of(failure);
        }
        const std::vector<offset_to_commit> offsets = offsets_of(flushed);
        if (!o_.exactly_once) {
            if (!offsets.empty()) {
                const time_point sent = o_.now();
                const group_answer a = port_->commit_to_group(offsets);
                if (a == group_answer::rebalancing) {
                    count_failed_commit();
                    return commit_outcome::refused;
                }
                if (a == group_answer::unanswered) {
                    counter("strata_instance_commits_unanswered_total",
                            "At-least-once commits the group did not answer in time")
                        .inc();
                    return commit_outcome::refused;
                }
                if (a == group_answer::deferred) {
                    count_deferred_commit();
                    return commit_outcome::refused;
                }
                lease_.confirmed(sent);
            }
        } else {
            if (port_->commit_transaction(offsets) == transaction_end::aborted) {
                count_failed_commit();
                last_failure_ = "the transaction was aborted";
                port_->begin_transaction();
                return commit_outcome::aborted;
            }
            port_->begin_transaction();
            for (T* t : ts) t->commit_self_checkpointing_stores();
        }
        const double seconds = std::chrono::duration<double>(o_.now() - start).count();
        for (T* t : flushed) {
            t->uncommitted = 0;
            const metrics::labels l{{"task", std::string(t->id())}};
            registry_->counter_for("strata_task_commits_total", "Commits of a task", l).inc();
            registry_->histogram_for("strata_task_commit_seconds", "Latency of a task's commits", l).observe(seconds);
        }
        return commit_outcome::committed;
    }

    /// @brief After `failure` (from a flush, or from processing that wrote
    /// to a store): a write that failed (a record not acknowledged in time,
    /// its partition without a leader; or one the lease refused) leaves the
    /// stores ahead of their changelogs. Under exactly-once the transaction
    /// is aborted and the next opened; under at-least-once what is still
    /// on its way is waited for (the lease bounds it). Either way the
    /// caller rebuilds the running tasks from their changelogs and resumes
    /// them at the committed offsets, as Kafka Streams does with a
    /// corrupted task: at-least-once processes those inputs again. A broker
    /// away longer than the message timeout is no reason to stop; the
    /// instance stops only when no broker answered for broker_timeout. Any
    /// other failure is the caller's.
    /// @returns whether the tasks are to be rebuilt
    bool recover_from_failed_write(const std::exception_ptr& failure) {
        if (!caused_by<changelog_error>(failure) || !port_->discard_failed_writes()) return false;
        count_failed_commit();
        if (o_.exactly_once) port_->begin_transaction();
        return true;
    }

    [[nodiscard]] const lease& current_lease() const noexcept { return lease_; }

    /// @brief At-least-once: the tasks (by partition) whose changelog writes
    /// failed in the last commit while the others' landed. Their work was
    /// not committed: the caller rebuilds them alone, whatever the commit
    /// returned (a commit that returns `aborted` rebuilds every task instead).
    [[nodiscard]] const std::vector<std::int32_t>& failed_tasks() const noexcept { return failed_; }

    /// @brief What made the last commit that returned `aborted` fail.
    [[nodiscard]] const std::string& last_failure() const noexcept { return last_failure_; }

    /// @brief The message of `e` (an exception that is not a std::exception: "unknown").
    [[nodiscard]] static std::string message_of(const std::exception_ptr& e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            return x.what();
        } catch (...) {
            return "unknown";
        }
    }

private:
    /// Exactly-once: whether an interval commit waits for the member to be
    /// steady in the group again, for at most defer_at_most in a row.
    bool defer_while_rejoining() {
        if (!port_->group_rejoining()) {
            deferring_since_.reset();
            return false;
        }
        const time_point now = o_.now();
        if (!deferring_since_) deferring_since_ = now;
        if (now - *deferring_since_ >= o_.defer_at_most) {
            deferring_since_.reset();  // commits now; the next may wait again
            return false;
        }
        count_deferred_commit();
        return true;
    }

    void count_deferred_commit() {
        counter("strata_instance_commits_deferred_total",
                "Commits held back while this member joined the group again (at-least-once: dropped, the work "
                "goes with the next; exactly-once: the work stays in the open transaction)")
            .inc();
    }

    metrics::counter& counter(std::string_view name, std::string_view help) {
        return registry_->counter_for(name, help, {{"instance", o_.instance}});
    }

    void count_failed_commit() {
        counter("strata_instance_commits_failed_total",
                "At-least-once commits the group refused or given up after a failed write, and exactly-once "
                "transactions aborted")
            .inc();
    }

    /// Whether `e`, or an exception nested in it, is an E.
    template <class E>
    static bool caused_by(const std::exception_ptr& e) {
        try {
            std::rethrow_exception(e);
        } catch (const E&) {
            return true;
        } catch (const std::nested_exception& n) {
            return n.nested_ptr() != nullptr && caused_by<E>(n.nested_ptr());
        } catch (...) {
            return false;
        }
    }

    committer_options o_;
    commit_port* port_;
    metrics::registry* registry_;
    /// With heartbeats, their lease alone (liveness.hpp): the leader leaves
    /// out a member the group expelled as it does a silent one, and a task
    /// such a member held starts elsewhere only once it is silent
    /// (handoff.hpp), so the group's lease adds nothing. It took away a
    /// session of processing whenever a member joined while a dead one was
    /// still in the group: commits are deferred while the group rebalances,
    /// and the group waits for the dead member's session to end.
    [[nodiscard]] bool within_leases(time_point now) const {
        if (o_.heartbeat_lease_until) return now < o_.heartbeat_lease_until();
        return lease_.valid(now);
    }

    lease lease_;
    std::string last_failure_;  // why the last aborted commit failed
    std::vector<std::int32_t> failed_;  // see failed_tasks()
    time_point next_lease_try_{};
    std::optional<time_point> deferring_since_;  // exactly-once: the first of the commits deferred in a row
    bool held_ = false;  // the lease was valid when keep_lease() last looked
};

}  // namespace strata::runtime::detail
