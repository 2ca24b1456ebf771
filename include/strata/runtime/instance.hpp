#pragma once
/// @file
/// @brief `instance`: one running copy of an application. It joins the
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
/// What decides lives in detail/, with no Kafka in it, tested alone and by
/// the simulation (test/runtime/unit/): who leads and what it decides
/// (leader.hpp), what a reader accepts (coordination_state.hpp), what an
/// instance does with a decision and whom it fences (handoff.hpp), when it
/// may write and how it commits (lease.hpp, committer.hpp), and its active
/// and standby tasks (task_manager.hpp). Over librdkafka: the group
/// membership (group_consumer.hpp), the takeover before a restore
/// (takeover.hpp) and the topics it makes (topics.hpp). This class holds
/// them together for one run() and carries out what they decide.

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/restore/checkpoint.hpp>
#include <strata/runtime/assignor.hpp>
#include <strata/runtime/config.hpp>
#include <strata/runtime/coordination.hpp>
#include <strata/runtime/detail/commit_metadata.hpp>
#include <strata/runtime/detail/committer.hpp>
#include <strata/runtime/detail/coordination_log.hpp>
#include <strata/runtime/detail/group_consumer.hpp>
#include <strata/runtime/detail/group_watch.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/kafka_commit_port.hpp>
#include <strata/runtime/detail/leader.hpp>
#include <strata/runtime/detail/reaper.hpp>
#include <strata/runtime/detail/takeover.hpp>
#include <strata/runtime/detail/task_manager.hpp>
#include <strata/runtime/detail/topics.hpp>
#include <strata/runtime/metadata.hpp>
#include <strata/runtime/output.hpp>
#include <strata/runtime/queries.hpp>
#include <strata/runtime/restorer.hpp>
#include <strata/runtime/state_directory.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/task_context.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>
#include <unistd.h>

namespace strata::runtime {

/// @brief Makes the typed task of a partition (see application.hpp).
using task_maker = std::function<std::shared_ptr<task>(std::int32_t partition, output& out)>;

/// @brief One running copy of an application; see the file comment.
class instance : private detail::task_host<task> {
public:
    /// @param reg the registry metrics go to (it must outlive the instance)
    instance(application_config config, task_maker make, metrics::registry& reg, restore_callback on_restore = {})
        : config_(std::move(config)), make_(std::move(make)), registry_(&reg), on_restore_(std::move(on_restore)) {
        validate();
        if (config_.instance_id.empty()) {
            char host[256] = {};
            (void)::gethostname(host, sizeof host - 1);
            config_.instance_id = std::string(host) + "-" + std::to_string(::getpid());
        }
        tasks_.emplace(static_cast<detail::task_host<task>&>(*this), reg, config_.instance_id);
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

    [[nodiscard]] const application_config& config() const noexcept { return config_; }
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
    ///         state directory in use. Nothing is committed after the failure.
    void run() {
        state_directory dir(config_.state_dir, config_.application_id);
        dir_ = &dir;
        partitions_ = topics_.check_inputs();
        const std::string coordination = coordination_topic_name(config_.application_id);
        topics_.ensure_coordination(coordination);
        detail::coordination_reader reader(config_.bootstrap_servers, coordination, config_.consumer_settings);
        reader_ = &reader;
        started_ms_ = wall_clock_ms();
        incarnation_ = make_incarnation();
        reader.watch_for_duplicates({config_.instance_id, incarnation_, started_ms_});
        kafka::settings writer_settings = config_.producer_settings;
        writer_settings.try_emplace("message.timeout.ms", std::to_string(config_.broker_timeout.count()));
        detail::coordination_writer writer(config_.bootstrap_servers, coordination, writer_settings);
        writer_ = &writer;
        refuse_a_running_duplicate();
        start_producer();
        output out(producer_);
        output_ = &out;
        if (config_.on_bad_record == bad_record_action::dead_letter) topics_.ensure_dead_letters();
        task_environment env{&config_, producer_, registry_,
                             [this](std::string_view store) { return topics_.ensure_changelog(store); }};
        env_ = &env;
        detail::group_watch watch(config_.bootstrap_servers, config_.application_id, config_.broker_timeout);
        watch_ = &watch;
        detail::leader_options lo;
        lo.instance = config_.instance_id;
        lo.tasks = partitions_;
        lo.standby_replicas = config_.standby_replicas;
        lo.acceptable_lag = config_.acceptable_standby_lag;
        lo.status_retention = std::max<std::chrono::milliseconds>(6 * config_.session_timeout, std::chrono::minutes(1));
        leader_.emplace(std::move(lo));
        detail::group_consumer consumer(config_, coordination, *leader_);
        consumer_ = &consumer;
        detail::kafka_commit_port commit_port(consumer.get(), out, eos_, producer_);
        detail::committer_options co;
        co.exactly_once = config_.guarantee == processing_guarantee::exactly_once;
        co.instance = config_.instance_id;
        co.input_topics = config_.input_topics;
        co.session_timeout = config_.session_timeout;
        co.lease_topic = coordination;
        detail::committer committer(std::move(co), commit_port, *registry_);
        committer_ = &committer;
        detail::takeover takeover(config_, *registry_);
        detail::reaper reaper;  // declared before the restorer: outlives it
        reaper_ = &reaper;
        restorer r([this](task& t) { build(t); }, [&takeover](task& t) { takeover.prepare(t); }, *registry_, on_restore_,
                   config_.restore_batch_records);
        restorer_ = &r;

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
            if (!failed_) {
                commit(tasks_->running());
                tasks_->close_all(!failed_);
            } else {
                abandon_transaction();
                tasks_->close_all(false);
            }
            publish_status(true);  // withdrawn: the leader moves its tasks at once
            if (!failed_) decide_once_more();
            writer.flush();
        } catch (...) {
            if (!failure) failure = std::current_exception();
            failed_ = true;
            queries_.set_running(false);
            tasks_->close_all(false);
        }
        try {
            consumer.close();  // leaves the group at once
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
        r.stop();
        restorer_ = nullptr;
        reaper_ = nullptr;  // the reaper finishes its work when run() returns
        consumer_ = nullptr;
        watch_ = nullptr;
        committer_ = nullptr;
        leader_.reset();
        writer_ = nullptr;
        reader_ = nullptr;
        eos_.reset();
        env_ = nullptr;
        output_ = nullptr;
        producer_.reset();
        dir_ = nullptr;
        if (failure) std::rethrow_exception(failure);
    }

private:
    using clock = std::chrono::steady_clock;

    // ------------------------------------------------------------ startup --

    void validate() const {
        if (config_.application_id.empty()) throw usage_error("strata::runtime: application_id is empty");
        if (config_.bootstrap_servers.empty()) throw usage_error("strata::runtime: bootstrap_servers is empty");
        if (config_.input_topics.empty()) throw usage_error("strata::runtime: no input_topics");
        if (config_.standby_replicas < 0) throw usage_error("strata::runtime: standby_replicas is negative");
    }

    /// Before this process has a producer or joins the group: when the
    /// coordination topic's last word under this instance id is another
    /// process's, and not a withdrawal, that process crashed or still runs.
    /// Watch its statuses for a moment (it publishes every 500 ms): one that
    /// still runs is found before anything of it is fenced.
    void refuse_a_running_duplicate() {
        const auto deadline = clock::now() + config_.broker_timeout;
        while (!reader_->caught_up() && clock::now() < deadline) {
            (void)reader_->poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        const instance_status* last = reader_->state().status_of(config_.instance_id);
        if (last == nullptr || last->withdrawn || last->incarnation == incarnation_) return;
        publish_status(false);
        const auto watch_until = clock::now() + std::chrono::milliseconds(1'500);
        while (clock::now() < watch_until) {
            (void)reader_->poll();
            throw_if_duplicate();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    void throw_if_duplicate() const {
        if (const auto& other = reader_->state().duplicates()->conflict())
            throw usage_error("strata::runtime: another process runs with instance id " + config_.instance_id +
                              " (incarnation " + other->incarnation + ", started at " +
                              std::to_string(other->started_ms) + " ms, endpoint '" + other->endpoint +
                              "'; this one: incarnation " + incarnation_ + ", started at " +
                              std::to_string(started_ms_) + " ms): every instance needs an id of its own. "
                              "This one, the later, stops");
    }

    [[nodiscard]] static std::string make_incarnation() {
        std::random_device rd;
        const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
        std::array<char, 17> hex{};
        (void)std::snprintf(hex.data(), hex.size(), "%016llx", static_cast<unsigned long long>(r));
        return hex.data();
    }

    void start_producer() {
        kafka::producer_options o;
        o.bootstrap_servers = config_.bootstrap_servers;
        o.extra = config_.producer_settings;
        auto delivery_timeout = config_.broker_timeout;
        if (config_.guarantee == processing_guarantee::exactly_once)
            delivery_timeout = std::min(delivery_timeout, config_.transaction_timeout);  // librdkafka requires it
        if (!o.extra.contains("message.timeout.ms"))
            o.extra["message.timeout.ms"] = std::to_string(delivery_timeout.count());
        if (config_.guarantee == processing_guarantee::exactly_once) {
            o.transactional_id = transactional_id();
            o.extra["transaction.timeout.ms"] = std::to_string(config_.transaction_timeout.count());
            eos_.emplace(std::move(o), config_.broker_timeout);
            producer_ = eos_->shared_producer();
            eos_->begin();
        } else {
            producer_ = std::make_shared<kafka::producer>(std::move(o));
        }
    }

    [[nodiscard]] std::string transactional_id() const { return config_.application_id + "-" + config_.instance_id; }

    // ------------------------------------------------------- the main loop --

    void loop() {
        const auto interval = config_.effective_commit_interval();
        auto next_commit = clock::now() + interval;
        consumer_->heard_from_cluster();
        while (!stop_requested_.load(std::memory_order_relaxed)) {
            consumer_->rethrow_callback_failure();
            if (auto f = restorer_->failure()) std::rethrow_exception(f);
            try {
                pass(interval, next_commit);
            } catch (...) {
                if (!producer_fenced()) throw;
                renew_after_fencing();
            }
        }
        consumer_->rethrow_callback_failure();
    }

    /// One pass of the loop.
    void pass(std::chrono::milliseconds interval, clock::time_point& next_commit) {
        consumer_->check_reachable();
        coordinate();
        start_restored();
        replace_lost_standbys();
        if (tasks_->take_state_changed()) publish_tasks();
        producer_->poll();
        const std::uint64_t acked = writer_->acknowledged();
        if (acked != acknowledged_) {
            acknowledged_ = acked;
            consumer_->heard_from_cluster();
        }
        if (writer_->poll() > 0) {
            // The coordination partition is away (its leader down, say): go
            // on with what this instance owns, and publish again.
            counter("strata_instance_coordination_publish_failed_total",
                    "Statuses, claims and decisions that did not reach the coordination topic").inc();
            status_dirty_ = true;
            leader_->writes_lost();
        }
        keep_lease();
        if (!may_write()) {
            // Not confirmed a member lately: nothing is processed, punctuated
            // or committed until it is (or it hears it was dropped). The
            // consumer is still polled, for its rebalances to go on.
            consumer_->hold_inputs(true);
            consumer_->serve_group_only();
            return;
        }
        consumer_->hold_inputs(false);
        poll_records();
        const auto now = clock::now();
        for (task* t : tasks_->running())
            if (t->punctuate(now)) ++t->uncommitted;  // committed like records
        if (now >= next_commit) {
            commit(tasks_->running());
            next_commit = clock::now() + interval;
            publish_lag();
        }
    }

    // ------------------------------------------------------------- lease --
    // (see detail/lease.hpp; under exactly-once the predecessor is fenced instead)

    [[nodiscard]] bool may_write() const { return committer_->may_write(); }

    /// Renews the lease when a third of the session is left (or it ran
    /// out), by committing the coordination partition's offset.
    void keep_lease() {
        if (!member_id_.empty()) committer_->keep_lease();
    }

    /// Whether the transactional producer was fenced: another instance took
    /// over a task of this one, or a process started with its instance id.
    [[nodiscard]] bool producer_fenced() const {
        if (!eos_ || !producer_) return false;
        std::array<char, 256> why{};
        const rd_kafka_resp_err_t err = rd_kafka_fatal_error(producer_->get(), why.data(), why.size());
        return err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
               err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
    }

    /// After this instance's producer was fenced: nothing it wrote since its
    /// last commit will be visible, and every task and standby holds the
    /// fenced producer through its changelogs. They all go, a new producer
    /// takes the transactional id back, and the tasks the decision still
    /// gives here restore again from their changelogs.
    void renew_after_fencing() {
        counter("strata_instance_fenced_total", "Times this instance's producer was fenced").inc();
        const auto now = clock::now();
        std::erase_if(renewals_, [&](clock::time_point t) { return now - t > std::chrono::minutes(1); });
        renewals_.push_back(now);
        if (renewals_.size() > 10)
            throw kafka::kafka_error("strata::runtime: the producer of " + config_.instance_id +
                                         " was fenced more than 10 times within a minute: is another process "
                                         "running with instance id " + config_.instance_id + "?",
                                     RD_KAFKA_RESP_ERR__FENCED);
        tasks_->release_all();
        tasks_->drop_standbys();
        // The restore thread holds no task now: the producer can change.
        eos_.reset();
        start_producer();
        output_->rebind(producer_);
        env_->producer = producer_;
        status_dirty_ = true;
        act_again_ = true;
    }

    void poll_records() {
        const int wait_ms = tasks_->has_running() ? 10 : 50;
        kafka::unique_message m;
        for (std::size_t n = 0; n < config_.max_poll_records; ++n) {
            const detail::polled got = consumer_->poll(n == 0 ? wait_ms : 0, m);
            if (consumer_->lost()) return;  // heard in this poll: nothing more is processed (coordinate() lets go)
            if (got == detail::polled::nothing) return;
            if (got == detail::polled::error) continue;
            const auto it = tasks_->active().find(m->partition);
            // Only running tasks have their input assigned; a record of
            // another task is left over from an assignment just given back.
            // (The coordination partition is paused and never delivers.)
            if (it == tasks_->active().end() || it->second->state() != task_state::running) continue;
            const std::optional<std::size_t> topic = detail::input_index(config_, rd_kafka_topic_name(m->rkt));
            if (!topic) continue;
            task& t = *it->second;
            {
                const std::lock_guard lock(t.mutex());  // queries read the stores meanwhile
                t.process(*m);
                t.next_offsets[*topic] = m->offset + 1;
                if (const std::int64_t ts = rd_kafka_message_timestamp(m.get(), nullptr);
                    *topic < t.partition_times.size() && ts > t.partition_times[*topic])
                    t.partition_times[*topic] = ts;
            }
            ++t.uncommitted;
            if (t.timeline.first_record_ms == 0) first_record(t);
        }
    }

    // ------------------------------------------------------- coordination --

    /// Reads the coordination topic, decides as leader, and acts on the
    /// newest decision made for this membership (see detail/handoff.hpp).
    void coordinate() {
        const auto now = clock::now();
        const bool changed = reader_->poll();
        throw_if_duplicate();
        const bool rejoined = refresh_membership();
        lead(now);
        if (changed || rejoined || waiting_for_release_ || act_again_) act();
        if (changed) publish_metadata();
        if (tasks_->take_set_changed()) status_dirty_ = true;
        if (status_dirty_ || now >= next_status_) publish_status(false);
    }

    /// Follows this instance's member id. A membership lost (the group
    /// expelled it: its session ended, or librdkafka says the assignment was
    /// lost) ends every active task here at once, before anything more is
    /// processed or committed: another instance may own them by now.
    /// @returns whether the member id changed
    bool refresh_membership() {
        std::string id = consumer_->member_id();
        if (id == member_id_ && !consumer_->lost()) return false;
        if ((!member_id_.empty() && id != member_id_) || consumer_->lost()) lose_membership();
        consumer_->clear_lost();
        member_id_ = std::move(id);
        committer_->new_membership();  // a new membership earns its own lease
        status_dirty_ = true;
        return true;
    }

    /// Hands queries the metadata as of the coordination topic's newest
    /// assignment and statuses.
    void publish_metadata() {
        const std::optional<assignment>& a = reader_->state().latest();
        if (!a) return;
        queries_.publish_metadata(std::make_shared<const application_metadata>(partitions_, *a, reader_->state().statuses()));
    }

    /// Hands queries the tasks as they are now.
    void publish_tasks() {
        queries_.publish_tasks(tasks_->active(), tasks_->standbys());
    }

    /// The leader (see detail/leader.hpp): claims its epoch, watches the
    /// membership, and publishes a decision whenever the membership or a
    /// status changes it.
    void lead(clock::time_point now) {
        if (!leader_->elected()) return;
        if (std::optional<leader_claim> c = leader_->claim_to_write()) writer_->publish(*c);
        leader_->observe(reader_->state());
        if (!leader_->leading()) return;
        if (std::optional<std::vector<detail::group_member>> m = watch_->poll())
            leader_->members_listed(std::move(*m), describe_sent_);
        if (consumer_->take_changed() || now >= next_describe_) {
            if (watch_->request()) describe_sent_ = now;
            next_describe_ = now + std::chrono::milliseconds(250);
        }
        // Decide only once the coordination topic is read to its end.
        if (!reader_->caught_up()) return;
        if (std::optional<assignment> a = leader_->decide(reader_->state(), wall_clock_ms())) {
            if (a->noticed_ms != noticed_ms_) {
                noticed_ms_ = a->noticed_ms;
                if (rebalance_log_) rebalance_log_(noticed_ms_);
            }
            writer_->publish(*a);
        }
        for (const std::string& gone : leader_->statuses_to_remove(reader_->state(), now)) writer_->remove_status(gone);
    }

    /// A leader that stops decides once more, for the others, when it reads
    /// its withdrawal back: its tasks then move at once, not after the group
    /// has noticed it left (up to a heartbeat interval) and its successor
    /// has claimed and listed the members (a stop took 1.2 to 3.5 s so).
    /// Safe as any decision: it runs nothing now, the others still wait for
    /// each other's statuses, and a successor's claim outranks it.
    void decide_once_more() {
        if (!leader_->leading()) return;
        const auto deadline = clock::now() + std::chrono::seconds(2);
        while (!reader_->state().withdrew(config_.instance_id, member_id_)) {
            if (clock::now() >= deadline) return;
            (void)writer_->poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            (void)reader_->poll();
        }
        leader_->observe(reader_->state());
        if (!leader_->leading()) return;
        if (std::optional<assignment> a = leader_->decide(reader_->state(), wall_clock_ms())) {
            if (rebalance_log_) rebalance_log_(a->noticed_ms);
            writer_->publish(*a);
        }
    }

    /// Brings this instance's tasks in line with the newest decision:
    /// releases what moved away (after a commit), starts what moved here
    /// once no other member may still run it, keeps the standbys it lists.
    void act() {
        const std::optional<assignment>& latest = reader_->state().latest();
        if (!latest) return;
        const assignment& a = *latest;
        const detail::local_tasks mine{config_.instance_id, member_id_, tasks_->active_partitions(),
                                       tasks_->standby_partitions()};
        const detail::handoff_plan plan = detail::plan_handoff(a, reader_->state(), mine);
        waiting_for_release_ = !plan.wait.empty();
        act_again_ = false;

        // Release first, with one commit for all of them (none when the
        // decision is not for this membership: such a commit is refused).
        if (!plan.release.empty()) {
            if (plan.member) commit(tasks_->running());
            else abandon_and_begin();
            for (std::int32_t p : plan.release) tasks_->release(p, plan.member && !failed_);
        }
        if (!plan.member) return;
        for (std::int32_t p : plan.start) start_task(p, a);
        for (std::int32_t p : plan.add_standby) tasks_->start_standby(p);
        for (std::int32_t p : plan.drop_standby) tasks_->drop_standby(p);
        if (acted_ != a.id()) {
            acted_ = a.id();
            status_dirty_ = true;
        }
    }

    void publish_status(bool withdrawn) {
        instance_status s{};
        s.instance = config_.instance_id;
        s.member_id = member_id_;
        s.incarnation = incarnation_;
        s.started_ms = started_ms_;
        if (eos_) s.transactional_id = transactional_id();
        s.endpoint = config_.endpoint;
        s.published_ms = wall_clock_ms();
        s.acted_epoch = acted_.epoch;
        s.acted_version = acted_.version;
        s.withdrawn = withdrawn;
        for (const auto& [p, t] : tasks_->active()) s.active.push_back(p);
        for (const auto& [p, t] : tasks_->standbys())
            if (const std::int64_t lag = t->standby_lag(); lag >= 0) s.standbys.push_back({p, lag});
        writer_->publish(s);
        status_dirty_ = false;
        next_status_ = clock::now() + std::chrono::milliseconds(500);
    }

    // ---------------------------------------------------------- the tasks --

    /// Takes task p (detail/task_manager.hpp). Its input partitions are
    /// assigned once it has restored (start_restored).
    void start_task(std::int32_t p, const assignment& a) {
        tasks_->start(p, [&](task& t) {
            t.fence = predecessors_to_fence(a);
            t.timeline = {};
            t.timeline.noticed_ms = a.noticed_ms;
            t.timeline.assigned_ms = wall_clock_ms();
        });
    }

    /// Under exactly-once, the producers to fence before task p restores
    /// here (see detail/handoff.hpp).
    [[nodiscard]] std::vector<detail::fence_target> predecessors_to_fence(const assignment& a) const {
        if (!eos_) return {};
        return detail::fence_targets(a, reader_->state(), config_.instance_id);
    }

    // The task manager's host (detail/task_manager.hpp):

    std::shared_ptr<task> make_task(std::int32_t p) override { return make_(p, *output_); }
    void restore(std::shared_ptr<task> t) override { restorer_->add(std::move(t)); }
    void keep_current(std::shared_ptr<task> t) override { restorer_->add_standby(std::move(t)); }
    bool promote(task& standby) override { return restorer_->promote(standby); }
    void dispose(std::shared_ptr<task> t) override { reaper_->dispose(std::move(t)); }

    /// With `clean`, after a commit, the checkpoint records what the stores
    /// hold (under at-least-once their flush wrote it already).
    void close_stores(task& t, bool clean) override {
        restorer_->cancel(t);
        if (clean && config_.guarantee == processing_guarantee::exactly_once) {
            const std::lock_guard lock(t.mutex());
            for (const auto& s : t.stores())
                if (auto* log = s->changelog(); log != nullptr && s->persistent()) s->save_checkpoint(log->flush());
        }
        t.close_stores();
    }

    void unassign_inputs(task& t) override { consumer_->unassign_inputs(t.partition()); }

    /// Builds the task's stores (on the restore thread).
    void build(task& t) {
        const std::int32_t p = t.partition();
        t.checkpoint_path = dir_->checkpoint(p);
        // Local data without a checkpoint cannot be trusted: start clean.
        if (!std::filesystem::exists(t.checkpoint_path)) dir_->wipe_task(p);
        task_context ctx(*env_, p, dir_->task_dir(p), t.checkpoint_path);
        t.build(ctx);
    }

    /// Starts the tasks the restore thread has finished with.
    void start_restored() {
        for (std::shared_ptr<task>& t : restorer_->take_ready()) {
            if (!tasks_->holds(t)) continue;  // released meanwhile
            if (config_.guarantee == processing_guarantee::exactly_once && t->may_run_ahead_of_commits()) {
                // From now on the local state runs ahead of what is committed:
                // without a checkpoint, a crash wipes it (see build()). Stores
                // that keep uncommitted updates out of their durable data
                // (self_checkpointing_store) never run ahead, and are not wiped.
                std::error_code ec;
                std::filesystem::remove(t->checkpoint_path, ec);
            }
            // Assigned only now, at the committed offsets: assigning earlier
            // and seeking later left librdkafka with an outdated offset query
            // and a task's first records 500 ms late.
            consumer_->assign_inputs(t->partition(), t->committed_offsets);
            t->next_offsets.assign(config_.input_topics.size(), -1);
            t->partition_times.resize(config_.input_topics.size(), -1);
            // Stream time goes on from where the previous owner (strata or
            // Kafka Streams) left it, as its commits say.
            if (const std::int64_t resumed = *std::max_element(t->partition_times.begin(), t->partition_times.end());
                resumed >= 0)
                t->resume_stream_time(resumed);
            tasks_->started(*t);
            t->start();
        }
    }

    /// Replaces the standbys the restore thread found stale (restorer::
    /// lost_standby): each goes, with its checkpoint, and act() starts the
    /// decision's standby again, from an empty folder. One promoted in the
    /// meantime is released and started again the same way.
    void replace_lost_standbys() {
        for (restorer::lost_standby& lost : restorer_->take_lost()) {
            counter("strata_standby_rebuilt_total",
                    "Standby tasks rebuilt because their changelog no longer held what they were built from")
                .inc();
            config_.warn(lost.why);
            const std::int32_t p = lost.t->partition();
            const auto holds = [&](const auto& tasks) {
                const auto it = tasks.find(p);
                return it != tasks.end() && it->second == lost.t;
            };
            if (holds(tasks_->standbys())) tasks_->drop_standby(p);
            else if (holds(tasks_->active())) tasks_->release(p, false);
            else continue;  // replaced already
            std::error_code ec;
            std::filesystem::remove(dir_->checkpoint(p), ec);  // in case closing wrote it again
            act_again_ = true;
        }
    }

    /// Sets each running task's consumer lag (records between its position
    /// and the end of each input partition, as of the last fetch: no request).
    void publish_lag() {
        for (task* t : tasks_->running()) {
            const std::int32_t p = t->partition();
            if (t->lag_gauges.empty())
                for (const std::string& topic : config_.input_topics)
                    t->lag_gauges.push_back(&registry_->gauge_for(
                        "strata_task_consumer_lag_records",
                        "Input records a task has yet to process, as of the last fetch", {{"task", t->id()}, {"topic", topic}}));
            for (std::size_t i = 0; i < config_.input_topics.size(); ++i) {
                std::int64_t low = 0, high = 0;
                if (rd_kafka_get_watermark_offsets(consumer_->get(), config_.input_topics[i].c_str(), p, &low, &high) !=
                        RD_KAFKA_RESP_ERR_NO_ERROR ||
                    high < 0)
                    continue;
                const std::int64_t at = t->next_offsets[i] >= 0 ? t->next_offsets[i] : t->committed_offsets[i];
                t->lag_gauges[i]->set(static_cast<double>(std::max<std::int64_t>(high - std::max<std::int64_t>(at, low), 0)));
            }
        }
    }

    void first_record(task& t) {
        t.timeline.first_record_ms = wall_clock_ms();
        const auto& tl = t.timeline;
        const auto phase = [&](const char* name, std::int64_t from, std::int64_t to) {
            if (from == 0 || to == 0) return;
            registry_->gauge_for("strata_task_takeover_seconds",
                                 "The last takeover of a task, phase by phase: the previous owner's last commit to "
                                 "the leader noticing (detection), to this instance taking the task (assignment), "
                                 "to its stores restored (restore), to its first record processed (first_record)",
                                 {{"task", t.id()}, {"phase", name}})
                .set(static_cast<double>(to - from) / 1000.0);
        };
        phase("detection", tl.previous_commit_ms, tl.noticed_ms);
        phase("assignment", tl.noticed_ms, tl.assigned_ms);
        phase("restore", tl.assigned_ms, tl.restored_ms);
        phase("first_record", tl.restored_ms, tl.first_record_ms);
        phase("total", tl.previous_commit_ms, tl.first_record_ms);
        if (takeover_log_) takeover_log_(t);
    }

    // ---------------------------------------------------------- the group --

    /// This instance dropped out of the group. Its active tasks end here at
    /// once, uncommitted (a commit would be refused, and another instance
    /// may own them already); under exactly-once the open transaction is
    /// aborted. Standbys stay: they write nothing. It rejoins by itself and
    /// runs again what a decision made for its new membership gives it.
    void lose_membership() {
        counter("strata_instance_membership_lost_total", "Times the group dropped this instance").inc();
        status_dirty_ = true;
        abandon_and_begin();
        tasks_->release_all();
    }

    /// Aborts the open transaction (if any) and opens the next one.
    void abandon_and_begin() {
        if (!eos_) return;
        abandon_transaction();
        eos_->begin();
    }

    // ------------------------------------------------------------ commits --

    /// Commits the given running tasks (see detail/committer.hpp).
    void commit(const std::vector<task*>& ts) {
        if (committer_->commit(ts) == detail::commit_outcome::aborted) rebuild_after_abort();
    }

    /// After an aborted transaction: every running task is rebuilt from its
    /// changelog, and resumes from its committed input offsets.
    void rebuild_after_abort() {
        tasks_->rebuild_running([](task& t) { t.timeline.assigned_ms = wall_clock_ms(); });
    }

    void abandon_transaction() noexcept {
        if (!eos_) return;
        try {
            eos_->abort();
        } catch (...) {
            // The producer is fenced or failed: its transaction ends with it.
        }
    }

    metrics::counter& counter(std::string_view name, std::string_view help) {
        return registry_->counter_for(name, help, {{"instance", config_.instance_id}});
    }

public:
    /// @brief Called on the processing thread of the leader when it sees the
    /// group's membership change (wall-clock ms), before it decides.
    void on_rebalance_noticed(std::function<void(std::int64_t)> fn) { rebalance_log_ = std::move(fn); }

private:
    application_config config_;
    task_maker make_;
    metrics::registry* registry_;
    restore_callback on_restore_;
    std::function<void(const task&)> takeover_log_;
    std::function<void(std::int64_t)> rebalance_log_;
    std::atomic<bool> stop_requested_{false};
    bool failed_ = false;

    // Alive during run():
    state_directory* dir_ = nullptr;
    std::int32_t partitions_ = 0;
    std::optional<kafka::exactly_once> eos_;
    std::shared_ptr<kafka::producer> producer_;
    output* output_ = nullptr;
    task_environment* env_ = nullptr;
    detail::coordination_reader* reader_ = nullptr;
    detail::coordination_writer* writer_ = nullptr;
    detail::group_watch* watch_ = nullptr;
    std::optional<detail::leader> leader_;
    detail::group_consumer* consumer_ = nullptr;
    restorer* restorer_ = nullptr;
    detail::reaper* reaper_ = nullptr;
    std::optional<detail::task_manager<task>> tasks_;  // active and standby tasks
    detail::committer* committer_ = nullptr;  // and the at-least-once lease
    std::uint64_t acknowledged_ = 0;                 // coordination publications acknowledged so far
    detail::instance_topics topics_{config_};
    query_index queries_;

    // Coordination (processing thread):
    std::string member_id_;            // this instance's membership of the group, "" while it has none
    bool status_dirty_ = true;
    bool waiting_for_release_ = false;
    bool act_again_ = false;           // the tasks changed without a new decision (after fencing)
    decision_id acted_{};
    std::string incarnation_;          // unique to this run()
    std::int64_t started_ms_ = 0;
    std::vector<clock::time_point> renewals_;  // of the producer after fencing, in the last minute
    std::int64_t noticed_ms_ = 0;
    clock::time_point describe_sent_{};
    clock::time_point next_describe_{};
    clock::time_point next_status_{};
};

}  // namespace strata::runtime
