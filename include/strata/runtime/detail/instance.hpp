#pragma once
/// @file
/// @brief `instance`: one running copy of an application (what
/// `application` in application.hpp runs; users do not name it). It joins the
/// application's consumer group, runs the tasks the leader assigns it (see
/// coordination.hpp and assignor.hpp), has new tasks restored and standby
/// tasks kept current on a thread of their own while the running ones
/// process, commits on an interval (at-least-once or exactly-once), and
/// hands tasks over cleanly when the leader moves them.
///
/// The processing thread is the one that calls `run()`: it polls the group
/// consumer (librdkafka serves rebalances from the poll), reads the
/// coordination topic, decides as leader, hands each record to its task,
/// punctuates and commits. The restore thread (restorer.hpp) builds tasks
/// with the user's factory, fences their predecessors and looks up their
/// offsets, and replays their changelogs. Tasks pass from one to the other
/// under a mutex; nothing else is shared.
///
/// What decides lives beside it in detail/, with no Kafka in it, tested alone and by
/// the simulation (test/runtime/unit/): who leads and what it decides
/// (leader.hpp), what a reader accepts (coordination_state.hpp), what an
/// instance does with a decision and whom it fences (handoff.hpp), when it
/// may write and how it commits (lease.hpp, committer.hpp), and its active
/// and standby tasks (task_manager.hpp). Over librdkafka: the coordination
/// topic as one instance uses it (coordinator.hpp), the group membership
/// (group_consumer.hpp), the producer (instance_producer.hpp), the takeover
/// before a restore (takeover.hpp) and the topics it makes (topics.hpp).
/// One run() builds them all (instance_session.hpp); what happens to a task
/// between the task manager's steps is task_lifecycle.hpp's. This class
/// carries out, pass by pass, what they decide.

#include <strata/kafka/handles.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/commit_width.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/instance_session.hpp>
#include <strata/runtime/detail/output.hpp>
#include <strata/runtime/detail/restorer.hpp>
#include <strata/runtime/detail/task_gauges.hpp>
#include <strata/runtime/detail/task_lifecycle.hpp>
#include <strata/runtime/detail/task_manager.hpp>
#include <strata/runtime/detail/topics.hpp>
#include <strata/runtime/error.hpp>
#include <strata/runtime/metadata.hpp>
#include <strata/runtime/queries.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>
#include <unistd.h>

namespace strata::runtime::detail {

/// @brief One running copy of an application; see the file comment.
class instance {
public:
    /// @param reg the registry metrics go to (it must outlive the instance)
    /// @param process of a processing thread: the id of the instance it is a
    ///        thread of, which the leader keeps standbys away from (see
    ///        assignor.hpp); empty for an instance of one thread
    instance(application_options config, task_maker make, metrics::registry& reg, restore_callback on_restore = {},
             std::string process = {})
        : config_(std::move(config)), registry_(&reg), on_restore_(std::move(on_restore)),
          lifecycle_(config_, std::move(make), reg), process_(std::move(process)) {
        config_.validate();
        config_.apply_client_settings();
        if (config_.instance_id.empty()) config_.instance_id = default_instance_id();
        tasks_.emplace(lifecycle_, reg, config_.instance_id);
    }

    /// @brief The id of an instance not given one: the host name and the process id.
    [[nodiscard]] static std::string default_instance_id() {
        char host[256] = {};
        (void)::gethostname(host, sizeof host - 1);
        return std::string(host) + "-" + std::to_string(::getpid());
    }

    instance(const instance&) = delete;
    instance& operator=(const instance&) = delete;

    /// @brief Asks `run()` to commit, give its tasks back and return.
    /// Safe from any thread and from a signal handler.
    void stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }

    /// @brief Receives every task's restore progress (on the restore thread).
    /// Set it before run().
    void set_restore_callback(restore_callback fn) { on_restore_ = std::move(fn); }

    /// @brief Called on the processing thread with every task this instance
    /// starts, once it processed its first record (its timeline is complete then).
    void on_takeover(std::function<void(const task&)> fn) { takeover_log_ = std::move(fn); }

    /// @brief Called on the processing thread of the leader when it sees the
    /// group's membership change (wall-clock ms), before it decides.
    void on_rebalance_noticed(std::function<void(std::int64_t)> fn) { rebalance_log_ = std::move(fn); }

    [[nodiscard]] const application_options& options() const noexcept { return config_; }
    [[nodiscard]] metrics::registry& metrics() const noexcept { return *registry_; }

    /// @brief This instance's tasks and the application's metadata, as
    /// queries from any thread see them (see queries.hpp).
    [[nodiscard]] const query_index& queries() const noexcept { return queries_; }

    /// @brief Joins the group and processes until `stop()`; then commits,
    /// closes every task, says so on the coordination topic and leaves the
    /// group at once, so its tasks move without waiting for the session timeout.
    /// @throws error what stopped it: a processor's error (with the record's
    ///         coordinates), an undecodable record under `fail`, a broker
    ///         unreachable past `broker_timeout`, a fenced producer, a
    ///         state directory in use, another process with this instance
    ///         id. Nothing is committed after the failure.
    void run() {
        detail::instance_session s(config_, topics_, *registry_,
                                   {[this](task& t) { lifecycle_.build(t); }, on_restore_, &rebalance_log_});
        s_ = &s;
        width_ = detail::commit_width(config_.max_partitions_per_commit != 0
                                          ? config_.max_partitions_per_commit
                                          : detail::default_commit_width(s.producer.exactly_once(),
                                                                         detail::at_least_once_delivery_bound(config_)));
        s.coord.set_process(process_);
        lifecycle_.attach(&s);
        queries_.set_running(true, config_.instance_id);
        std::exception_ptr failure;
        try {
            loop();
        } catch (...) {
            failure = std::current_exception();
        }
        failed_ = failure != nullptr;
        try {
            queries_.set_running(false);  // no query waits for what closes now
            if (!failed_ && last_commit()) {
                s.producer.settle();  // the commit may have been held: nothing lands after the withdrawal
                tasks_->close_all(true);
            } else {
                s.producer.abandon();
                s.producer.settle();
                tasks_->close_all(false);
            }
            publish_status(true);  // withdrawn: the leader moves its tasks at once
            if (!failed_) s.coord.decide_once_more();
            if (!s.coord.flush()) {
                publish_status(true);  // once more, in case what failed was older
                if (!s.coord.flush())
                    config_.warn("instance " + config_.instance_id +
                                 ": its withdrawal did not reach the coordination topic; its tasks move once the "
                                 "group notices it left");
            }
        } catch (...) {
            if (!failure) failure = std::current_exception();
            failed_ = true;
            queries_.set_running(false);
            tasks_->close_all(false);
        }
        try {
            s.consumer.close();  // leaves the group at once
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
        s.restore.stop();
        s_ = nullptr;  // the session's parts go in reverse order; the reaper finishes its work last
        lifecycle_.attach(nullptr);
        if (failure) std::rethrow_exception(failure);
    }

private:
    using clock = std::chrono::steady_clock;

    // ------------------------------------------------------- the main loop --

    void loop() {
        const auto interval = config_.effective_commit_interval();
        auto next_commit = clock::now() + interval;
        s_->consumer.heard_from_cluster();
        while (!stop_requested_.load(std::memory_order_relaxed)) {
            s_->consumer.rethrow_callback_failure();
            if (auto f = s_->restore.failure()) std::rethrow_exception(f);
            if (auto f = s_->heartbeats.failure()) std::rethrow_exception(f);
            try {
                pass(interval, next_commit);
            } catch (...) {
                if (!s_->producer.needs_renewal()) throw;
                renew_producer();
            }
        }
        s_->consumer.rethrow_callback_failure();
    }

    /// One pass of the loop.
    void pass(std::chrono::milliseconds interval, clock::time_point& next_commit) {
        s_->consumer.check_reachable();
        coordinate();
        lifecycle_.start_restored(*tasks_);
        if (lifecycle_.replace_lost_standbys(*tasks_)) act_again_ = true;
        if (tasks_->take_state_changed()) queries_.publish_tasks(tasks_->active(), tasks_->standbys());
        s_->producer.get()->poll();
        const detail::coordinator::writes w = s_->coord.poll_writes();
        if (w.acknowledged) s_->consumer.heard_from_cluster();
        if (s_->heartbeats.lapses() != lapses_seen_) {
            lapses_seen_ = s_->heartbeats.lapses();
            if (!s_->producer.exactly_once() && !tasks_->active().empty()) let_go_without_lease();
        }
        if (w.lost)
            counter("strata_instance_coordination_publish_failed_total",
                    "Statuses, claims and decisions that did not reach the coordination topic").inc();
        if (!s_->coord.member_id().empty()) s_->committer.keep_lease();
        if (s_->committer.heartbeat_lease_out() && !tasks_->active().empty()) let_go_without_lease();
        if (!s_->committer.may_write()) {
            // Its heartbeats' lease is out (detail/liveness.hpp): nothing is
            // processed, punctuated or committed until it holds (or it hears it
            // was dropped). The consumer is still polled, for its rebalances.
            if (!held_) note("holds its inputs: its lease is out");
            held_ = true;
            s_->consumer.hold_inputs(true);
            s_->consumer.serve_group_only();
            return;
        }
        if (held_) note("writes again: its lease holds");
        held_ = false;
        s_->consumer.hold_inputs(false);
        poll_records();
        const auto now = clock::now();
        try {
            for (task* t : tasks_->running())
                if (t->punctuate(now)) ++t->uncommitted;  // committed like records
        } catch (...) {
            rebuild_after_failed_write_or_rethrow();
        }
        if (now >= next_commit || width_.full()) {
            commit(tasks_->running(), detail::commit_kind::interval);
            next_commit = clock::now() + interval;
            detail::publish_consumer_lag(*registry_, s_->consumer.inputs(), config_, tasks_->running());
        }
    }

    /// After this instance's producer was fenced, or its transaction could
    /// be neither completed nor aborted: nothing it wrote since its last
    /// commit is known to be visible, and every task and standby holds the
    /// producer through its changelogs. They all go, a new producer takes
    /// the transactional id back (ending that transaction), and the tasks
    /// the decision still gives here restore again from their changelogs.
    void renew_producer() {
        note(s_->producer.fenced() ? "its producer was fenced: makes a new one"
                                   : "its transaction is in doubt: makes a new producer");
        if (s_->producer.fenced()) counter("strata_instance_fenced_total", "Times this instance's producer was fenced").inc();
        else
            counter("strata_instance_transactions_in_doubt_total",
                    "Transactions neither committed nor aborted within broker_timeout (the producer was made anew)")
                .inc();
        tasks_->release_all();
        tasks_->drop_standbys();
        // The restore thread holds no task now: the producer can change.
        s_->producer.renew();
        s_->out.rebind(s_->producer.get());
        s_->env.producer = s_->producer.get();
        s_->coord.status_changed();
        act_again_ = true;
        // Fenced, it was cut off or paused while others took its tasks over,
        // and the decision that moved them may not have reached its reader
        // yet: acting on the older one, it would start those tasks again
        // beside their new owners, with a producer no fence ever touched.
        // It acts again once its reader has read back a heartbeat it sent
        // after this (see act()).
        resync_after_ms_ =
            std::chrono::duration_cast<std::chrono::milliseconds>(clock::now().time_since_epoch()).count();
    }

    void poll_records() {
        const int wait_ms = tasks_->has_running() ? 10 : 50;
        kafka::unique_message m;
        for (std::size_t n = 0; n < config_.max_poll_records; ++n) {
            const detail::polled got = s_->consumer.poll(n == 0 ? wait_ms : 0, m);
            if (s_->consumer.lost()) return;  // heard in this poll: nothing more is processed (coordinate() lets go)
            if (got == detail::polled::nothing) return;
            if (got == detail::polled::error) continue;
            // The lease is looked at before each record, not once a pass: a
            // process paused in the middle of a batch wakes with the rest of
            // it in hand, and another instance may run those tasks by then.
            if (!s_->committer.may_write()) {
                s_->consumer.put_back(*m);
                return;
            }
            const auto it = tasks_->active().find(m->partition);
            // Only running tasks have their input assigned; a record of
            // another task is left over from an assignment just given back.
            // (The coordination partition is paused and never delivers.)
            if (it == tasks_->active().end() || it->second->state() != task_state::running) continue;
            const std::optional<std::size_t> topic = detail::input_index(config_, rd_kafka_topic_name(m->rkt));
            if (!topic) continue;
            task& t = *it->second;
            // A task's partitions are counted once a commit, not per record.
            if (!width_.in_work(t.partition()) && !width_.admits(t.partition(), partitions_written_by(t))) {
                s_->consumer.put_back(*m);  // after the commit this pass makes (commit_width.hpp)
                return;
            }
            try {
                t.process_input(*m, *topic);
            } catch (const processing_error&) {
                rebuild_after_failed_write_or_rethrow();
                return;
            }
            ++t.uncommitted;
            if (t.timeline.first_record_ms == 0) {
                detail::record_first_record(*registry_, t);
                if (takeover_log_) takeover_log_(t);
            }
        }
    }

    // ------------------------------------------------------- coordination --

    /// Reads the coordination topic, decides as leader, and acts on the
    /// newest decision made for this membership (see detail/handoff.hpp).
    void coordinate() {
        const auto now = clock::now();
        const bool changed = s_->coord.read();
        const bool rejoined = refresh_membership();
        s_->coord.lead(now, s_->consumer.take_changed());
        if (changed || rejoined || waiting_for_release_ || act_again_) act();
        if (changed) publish_metadata();
        if (tasks_->take_set_changed()) s_->coord.status_changed();
        if (s_->coord.status_due(now)) publish_status(false);
    }

    /// Follows this instance's member id. A membership lost (the group
    /// expelled it: its session ended, or librdkafka says the assignment was
    /// lost) ends every active task here at once, before anything more is
    /// processed or committed: another instance may own them by now. Its
    /// standbys stay (they write nothing); under exactly-once the open
    /// transaction is aborted. It rejoins by itself and runs again what a
    /// decision made for its new membership gives it.
    /// @returns whether the member id changed
    bool refresh_membership() {
        std::string id = s_->consumer.member_id();
        const std::string& was = s_->coord.member_id();
        if (id == was && !s_->consumer.lost()) return false;
        if ((!was.empty() && id != was) || s_->consumer.lost()) {
            note("the group dropped its membership " + was + ": lets go of its tasks");
            counter("strata_instance_membership_lost_total", "Times the group dropped this instance").inc();
            s_->producer.abandon_and_begin();
            s_->producer.settle();
            tasks_->release_all();
        }
        s_->consumer.clear_lost();
        s_->commit_port.act_for(id);
        s_->heartbeats.set_member(id);
        s_->coord.set_member_id(std::move(id));
        s_->committer.new_membership();  // a new membership earns its own lease
        return true;
    }

    /// Under at-least-once, once the heartbeats' lease is out (or ran out
    /// since the last look: heartbeats.hpp counts it), this instance may have
    /// been left out of a decision it has not read: it lets go of every
    /// active task without a commit (nothing it holds lands after this), and
    /// starts them again, restored, once it holds a lease and a decision
    /// gives them here (liveness.hpp).
    void let_go_without_lease() {
        note("its heartbeats' lease ran out: lets go of its tasks");
        counter("strata_instance_tasks_let_go_total",
                "Times this instance let go of its tasks because its heartbeats' lease ran out")
            .inc();
        s_->producer.abandon_and_begin();
        s_->producer.settle();
        tasks_->release_all();
        s_->coord.status_changed();
        act_again_ = true;
    }

    /// Hands queries the metadata as of the coordination topic's newest
    /// assignment and statuses.
    void publish_metadata() {
        const std::optional<assignment>& a = s_->coord.state().latest();
        if (!a) return;
        queries_.publish_metadata(
            std::make_shared<const application_metadata>(s_->partitions, *a, s_->coord.state().statuses()));
    }

    /// Brings this instance's tasks in line with the newest decision:
    /// releases what moved away (after a commit), starts what moved here
    /// once no other member may still run it, keeps the standbys it lists.
    void act() {
        if (resync_after_ms_ >= 0) {  // after a renewal: see renew_producer()
            if (!s_->coord.read_own_heartbeat_after(resync_after_ms_)) {
                act_again_ = true;
                return;
            }
            resync_after_ms_ = -1;
        }
        const std::optional<assignment>& latest = s_->coord.state().latest();
        if (!latest) return;
        const assignment& a = *latest;
        const detail::local_tasks mine{config_.instance_id, s_->coord.member_id(), tasks_->active_partitions(),
                                       tasks_->standby_partitions()};
        const detail::handoff_plan plan =
            detail::plan_handoff(a, s_->coord.state(), mine, {clock::now(), config_.liveness_timeout});
        waiting_for_release_ = !plan.wait.empty();
        act_again_ = false;
        note_plan(a, plan);

        // Release first, with one commit for all of them (none when the
        // decision is not for this membership: such a commit is refused).
        if (!plan.release.empty()) {
            if (plan.member) commit(tasks_->running());
            else s_->producer.abandon_and_begin();
            s_->producer.settle();  // nothing of theirs lands after the next owner began
            for (std::int32_t p : plan.release) tasks_->release(p, plan.member && !failed_);
        }
        if (!plan.member) return;
        if (s_->committer.heartbeat_lease_out() && !plan.start.empty()) {
            act_again_ = true;  // started once the lease holds (let_go_without_lease)
        } else {
            for (std::int32_t p : plan.start) start_task(p, a);
        }
        for (std::int32_t p : plan.add_standby) tasks_->start_standby(p);
        for (std::int32_t p : plan.drop_standby) tasks_->drop_standby(p);
        s_->coord.acted_on(a.id());
    }

    /// Notes what it does with a decision (on_note): once for each new
    /// decision, and again when what it does changes (a task waited for
    /// starts), not when it has nothing more to do.
    void note_plan(const assignment& a, const detail::handoff_plan& plan) {
        if (!config_.on_note) return;
        const auto list = [](const char* what, const std::vector<std::int32_t>& ps) {
            std::string out;
            for (const std::int32_t p : ps)
                out += (out.empty() ? std::string(" ") + what + " " : ",") + std::to_string(p);
            return out;
        };
        const std::string what = (plan.member ? "" : " not a member of it") + list("releases", plan.release) +
                                 list("starts", plan.start) + list("waits for", plan.wait) +
                                 list("adds standbys", plan.add_standby) + list("drops standbys", plan.drop_standby);
        const bool same_decision = noted_decision_ == a.id();
        if ((same_decision && what.empty()) || (same_decision && what == noted_plan_)) return;
        noted_decision_ = a.id();
        noted_plan_ = what;
        note("acts on decision " + std::to_string(a.epoch) + "." + std::to_string(a.version) + ":" +
             (what.empty() ? " nothing to do" : what));
    }
    void note(const std::string& what) const {
        config_.note(what);
    }

    void publish_status(bool withdrawn) {
        instance_status st{};
        st.transactional_id = s_->producer.transactional_id();
        st.withdrawn = withdrawn;
        for (const auto& [p, t] : tasks_->active()) st.active.push_back(p);
        for (const auto& [p, t] : tasks_->standbys())
            if (const std::int64_t lag = t->standby_lag(); lag >= 0) st.standbys.push_back({p, lag});
        s_->coord.publish_status(std::move(st));
    }

    // ---------------------------------------------------------- the tasks --

    /// Takes task p (detail/task_manager.hpp). Its input partitions are
    /// assigned once it has restored (task_lifecycle::start_restored). Under exactly-once,
    /// the producers that may still write for it are fenced first.
    void start_task(std::int32_t p, const assignment& a) {
        tasks_->start(p, [&](task& t) {
            t.fence = s_->producer.exactly_once() ? s_->coord.predecessors_to_fence(a)
                                                  : std::vector<detail::fence_target>{};
            t.timeline = {};
            t.timeline.noticed_ms = a.noticed_ms;
            t.timeline.assigned_ms = wall_clock_ms();
        });
    }

    // ------------------------------------------------------------ commits --

    /// Commits the given running tasks (see detail/committer.hpp). After a
    /// failed write (an aborted transaction) every running task is rebuilt
    /// from its changelog, and resumes from its committed input offsets.
    void commit(const std::vector<task*>& ts, detail::commit_kind kind = detail::commit_kind::handover) {
        const detail::commit_outcome outcome = s_->committer.commit(ts, kind);
        // Held or deferred, the work stays open (or its records in flight).
        if (outcome != detail::commit_outcome::held && outcome != detail::commit_outcome::deferred) width_.committed();
        if (outcome == detail::commit_outcome::aborted)
            rebuild_after_failed_write("a commit failed (" + s_->committer.last_failure() + ")");
        else if (const std::vector<std::int32_t>& failed = s_->committer.failed_tasks(); !failed.empty())
            rebuild_tasks_after_failed_write(failed);
    }

    /// The commit of a stop. A producer fenced meanwhile (another instance
    /// took a task over while this one was out of the group) is no failure
    /// of the stop: its transaction is aborted, and the tasks' next owners
    /// process again what it held, as after a kill.
    /// @returns false when fenced: the tasks close without a checkpoint
    bool last_commit() {
        try {
            commit(tasks_->running());
            return true;
        } catch (...) {
            if (!s_->producer.needs_renewal()) throw;
            counter("strata_instance_fenced_total", "Times this instance's producer was fenced").inc();
            config_.warn("instance " + config_.instance_id +
                         ": its producer was fenced as it stopped; what it processed since its last commit is "
                         "processed again by the tasks' next owners");
            return false;
        }
    }

    /// Says why, since a rebuild restores every running task: at scale, or
    /// with the broker starved, rebuilds one after another were the whole of
    /// a slow start, and nothing said so.
    void rebuild_after_failed_write(const std::string& why) {
        const std::string bound =
            config_.guarantee == processing_guarantee::exactly_once
                ? std::string()
                : " (under at-least-once a record not acknowledged within " +
                      std::to_string(detail::at_least_once_delivery_bound(config_).count()) +
                      " ms fails: a third of liveness_timeout, a fifth of session_timeout; raise them if the "
                      "broker is often slower)";
        config_.warn("instance " + config_.instance_id + ": " + why + "; its " +
                     std::to_string(tasks_->running().size()) +
                     " running task(s) are rebuilt from their changelogs and process their inputs again from the "
                     "last commit" + bound);
        tasks_->rebuild_running([](task& t) { t.timeline.assigned_ms = wall_clock_ms(); });
    }

    /// At-least-once: the tasks whose changelog or output records failed in
    /// a commit that committed the others' work are rebuilt alone.
    void rebuild_tasks_after_failed_write(const std::vector<std::int32_t>& failed) {
        std::string which;
        for (const std::int32_t p : failed) which += (which.empty() ? "" : ", ") + std::to_string(p);
        config_.warn("instance " + config_.instance_id + ": a commit failed for task(s) " + which + " (" +
                     s_->committer.last_failure() +
                     "); they are rebuilt from their changelogs and process their inputs again from their last "
                     "commit, the other running tasks committed (under at-least-once a record not acknowledged "
                     "within " +
                     std::to_string(detail::at_least_once_delivery_bound(config_).count()) +
                     " ms fails: a third of liveness_timeout, a fifth of session_timeout; raise them if the broker "
                     "is often slower)");
        tasks_->rebuild_running([](task& t) { t.timeline.assigned_ms = wall_clock_ms(); },
                                [&](std::int32_t p) { return std::find(failed.begin(), failed.end(), p) != failed.end(); });
    }

    /// In a handler: a write that failed, or that the lease refused, has the
    /// running tasks rebuilt (committer.hpp); any other failure goes on up.
    void rebuild_after_failed_write_or_rethrow() {
        const std::exception_ptr failure = std::current_exception();
        if (!s_->committer.recover_from_failed_write(failure)) throw;
        rebuild_after_failed_write("a write failed (" + detail::committer::message_of(failure) + ")");
    }

    /// The partitions a task's work may write between two commits: its
    /// changelogs and one output partition (commit_width.hpp).
    static std::size_t partitions_written_by(const task& t) {
        std::size_t n = 1;
        for (const auto& s : t.stores())
            if (s->changelog() != nullptr) ++n;
        return n;
    }

    metrics::counter& counter(std::string_view name, std::string_view help) {
        return registry_->counter_for(name, help, {{"instance", config_.instance_id}});
    }

    application_options config_;
    metrics::registry* registry_;
    restore_callback on_restore_;
    detail::task_lifecycle lifecycle_;  // builds, restores, starts and closes the tasks
    std::string process_;               // of a processing thread: its instance's id
    std::function<void(const task&)> takeover_log_;
    std::function<void(std::int64_t)> rebalance_log_;
    std::atomic<bool> stop_requested_{false};
    bool failed_ = false;
    detail::instance_topics topics_{config_};
    query_index queries_;
    std::optional<detail::task_manager<task>> tasks_;  // active and standby tasks

    // During run() (processing thread):
    detail::instance_session* s_ = nullptr;
    bool waiting_for_release_ = false;
    bool act_again_ = false;  // the tasks changed without a new decision (after fencing, a lost standby)
    std::uint64_t lapses_seen_ = 0;  // of the heartbeats' lease, acted on
    std::int64_t resync_after_ms_ = -1;  // renewed then (steady ms): no decision acted on until read past it
    bool held_ = false;                  // its inputs held for want of a lease
    detail::commit_width width_{0};      // the partitions the work since the last commit covers
    detail::decision_id noted_decision_{};  // the last decision note_plan() noted, and what it did
    std::string noted_plan_;
};

}  // namespace strata::runtime::detail
