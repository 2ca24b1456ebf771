#pragma once
/// @file
/// @brief What one `instance::run()` builds (instance.hpp), in the order it
/// is built, and tears down in reverse.
///
/// The order matters: the coordinator refuses a duplicate instance id
/// before the producer could fence anything of the other process; the
/// group consumer joins only once the producer, the outputs and the
/// topics exist; the reaper outlives the restore thread, which hands it
/// what it lets go of.

#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/committer.hpp>
#include <strata/runtime/detail/coordinator.hpp>
#include <strata/runtime/detail/follow_pacer.hpp>
#include <strata/runtime/detail/group_consumer.hpp>
#include <strata/runtime/detail/heartbeats.hpp>
#include <strata/runtime/detail/instance_producer.hpp>
#include <strata/runtime/detail/kafka_commit_port.hpp>
#include <strata/runtime/detail/liveness.hpp>
#include <strata/runtime/detail/output.hpp>
#include <strata/runtime/detail/reaper.hpp>
#include <strata/runtime/detail/restorer.hpp>
#include <strata/runtime/detail/state_directory.hpp>
#include <strata/runtime/detail/takeover.hpp>
#include <strata/runtime/detail/topics.hpp>
#include <strata/runtime/task_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace strata::runtime::detail {

struct instance_session {
    /// What the session calls back into its instance.
    struct hooks {
        restorer::build_fn build;                          // a task's stores, on the restore thread
        restore_callback on_restore;                       // restore progress
        const std::function<void(std::int64_t)>* rebalance_log = nullptr;  // the leader noticed a change
    };

    /// @throws what any part throws on its way up (a broker unreachable, a
    ///         state directory in use, a duplicate instance id, ...); the
    ///         parts built so far go again
    instance_session(const application_options& c, instance_topics& topics, metrics::registry& reg, hooks h)
        : dir(c.state_dir, c.group_name()),
          partitions(topics.check_inputs()),
          coordination(topics.ensure_coordination()),
          coord(c, coordination, partitions, *h.rebalance_log, reg),
          heartbeats(c, coordination),
          producer(c, [this] { return committer.may_write(); }),  // asked only once everything is built
          out(producer.get()),
          env{&c, producer.get(), &reg, [&topics](std::string_view store, const kafka::settings& configs) {
                  return topics.ensure_changelog(store, configs);
              },
              shared_changelog_reader(c, false), shared_changelog_reader(c, true), partitions},
          consumer(c, coordination, coord.leader()),
          commit_port(consumer, out, producer, commit_answer_wait(c), 15 * c.session_timeout),
          committer(committer_settings(c, coordination, heartbeats), commit_port, reg),
          takeover(c, reg),
          restore(
              std::move(h.build), [this](std::span<task* const> tasks) { takeover.prepare(tasks); }, reg,
              std::move(h.on_restore), c.restore_slice_records, std::chrono::milliseconds(100),
              {c.standby_fetch_interval, pacing_window(c), env.standby_reader, c.standby_pacing_from_partitions}) {
        if (c.on_bad_record == bad_record_action::dead_letter) topics.ensure_dead_letters();
    }

    instance_session(const instance_session&) = delete;
    instance_session& operator=(const instance_session&) = delete;

    state_directory dir;
    std::int32_t partitions;   // of every input topic: the application's number of tasks
    std::string coordination;  // the coordination topic's name
    coordinator coord;
    heartbeat_keeper heartbeats;  // on a thread of its own
    instance_producer producer;
    output out;
    task_environment env;
    group_consumer consumer;
    kafka_commit_port commit_port;
    detail::committer committer;  // and the at-least-once lease
    detail::takeover takeover;
    detail::reaper reaper;  // outlives the restore thread
    restorer restore;

private:
    /// Read committed, as every changelog of the runtime (task_context::changelog).
    /// The standbys' reader asks for idle partitions less often than every
    /// 10 ms (kafka::changelog_options::follower says why). Where it may
    /// be paced (follow_pacer.hpp: it fetches only in a window once a
    /// standby_fetch_interval), a fetch waits no more than a quarter of the
    /// window, so that one is answered before the pause drops it (and,
    /// unpaced below standby_pacing_from_partitions, a few idle fetches a
    /// second); never paced, it waits up to 500 ms (it returns as soon as
    /// records come).
    static std::shared_ptr<kafka::changelog_reader> shared_changelog_reader(const application_options& c,
                                                                            bool for_standbys) {
        kafka::changelog_options o;
        o.bootstrap_servers = c.bootstrap_servers;
        o.consumer_settings = c.consumer_settings;
        // Paced, a fetch should not outlast the window it is sent in.
        if (for_standbys)
            o.consumer_settings.try_emplace("fetch.wait.max.ms",
                                            c.standby_fetch_interval.count() > 0
                                                ? std::to_string(std::min<std::int64_t>(500, pacing_window(c).count() / 4 + 10))
                                                : std::string("500"));
        o.read_committed = true;
        return std::make_shared<kafka::changelog_reader>(o);
    }

    /// How long the standbys' reader fetches in each standby_fetch_interval.
    static std::chrono::milliseconds pacing_window(const application_options& c) {
        return std::min(c.standby_fetch_interval / 4, std::chrono::milliseconds(250));
    }

    /// How long the processing thread waits for an at-least-once commit's
    /// answer before it goes on (the commit stays pending, and its answer
    /// is read later: kafka_commit_port.hpp). At most a heartbeat interval
    /// with a liveness timeout: the leader decides on this thread, and a
    /// commit held behind the member's JoinGroup (a rebalance that waits for
    /// a dead member's session) held the leader 1.5 s (a quarter of the
    /// session) while an instance it was to find silent had been killed.
    /// Under heartbeats, no lease depends on the answer.
    static std::chrono::milliseconds commit_answer_wait(const application_options& c) {
        const std::chrono::milliseconds quarter_session = c.session_timeout / 4;
        if (c.liveness_timeout.count() <= 0) return quarter_session;
        return std::min(quarter_session, liveness{c.liveness_timeout}.heartbeat_interval());
    }

    static committer_options committer_settings(const application_options& c, const std::string& lease_topic,
                                                const heartbeat_keeper& heartbeats) {
        committer_options o;
        o.exactly_once = c.guarantee == processing_guarantee::exactly_once;
        o.instance = c.instance_id;
        o.input_topics = c.input_topics;
        o.session_timeout = c.session_timeout;
        o.heartbeat_lease_until = [&heartbeats] { return heartbeats.until(); };
        o.lease_topic = lease_topic;
        o.defer_at_most = c.transaction_timeout / 2;  // the transaction stays open meanwhile
        return o;
    }
};

}  // namespace strata::runtime::detail
