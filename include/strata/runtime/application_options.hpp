#pragma once
/// @file
/// @brief What an application of the stream runtime is: its id, its cluster,
/// its input topics, where its instances keep local state, and how they
/// commit. Every instance of one application is started with the same
/// settings except `state_dir`, `instance_id` and `endpoint`.

#include <strata/core/error.hpp>
#include <strata/kafka/handles.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace strata::runtime {

/// @brief What a commit guarantees after a crash.
enum class processing_guarantee {
    /// Stores and their changelogs are flushed, then outputs, then the input
    /// offsets are committed. After a crash the inputs since the last commit
    /// are processed again: no update is lost, some may be applied twice.
    at_least_once,
    /// One Kafka transaction per instance and commit holds the changelog
    /// records, the output records and the input offsets: after a crash
    /// nothing of an unfinished commit is visible, and no input is applied twice.
    exactly_once,
};

/// @brief What happens to an input record whose key or value cannot be decoded.
enum class bad_record_action {
    fail,         ///< stop the instance with an error naming topic, partition and offset
    skip,         ///< count it (strata_task_records_skipped_total) and go on
    dead_letter,  ///< write it, unchanged and with its coordinates in headers, to the dead-letter topic; go on
};

/// @brief The settings of an application.
struct application_options {
    /// Names the consumer group, the changelog topics
    /// (`<application_id>-<store>-changelog`) and the folder under `state_dir`.
    std::string application_id{};
    std::string bootstrap_servers{};  ///< e.g. "127.0.0.1:9092"
    /// Co-partitioned input topics: each must have the same partition count,
    /// and partition p of every one of them belongs to task p. The group
    /// assigns the first topic's partitions; the others follow them.
    std::vector<std::string> input_topics{};
    /// The sub-topology of a topology this instance runs (topology.hpp sets
    /// it; an application of one sub-topology leaves it empty). Each
    /// sub-topology is a group of its own, `group_name()`: its tasks, its
    /// coordination topic, its transactional ids and its state folder are
    /// apart from the other sub-topologies', while the changelog topics
    /// stay `<application_id>-<store>-changelog` (store names are unique
    /// across a topology, as in Kafka Streams).
    std::string sub_topology{};

    /// Local state of this instance: a folder `<application_id>` in it holds
    /// one folder per task with the checkpoint and the data of persistent
    /// stores. Two running instances must not share it (it is locked).
    std::filesystem::path state_dir{};
    /// Names this instance to the group and, under exactly-once, in its
    /// transactional id (`<application_id>-<instance_id>`): an instance
    /// restarted with the same id fences its predecessor at once. Empty: the
    /// host name and the process id.
    std::string instance_id{};
    /// Where this instance answers queries, as `host:port`, announced to the
    /// other instances (application_metadata) so that they can send a query
    /// for a key to the instance that holds it. strata does not listen on it:
    /// the query gateway (or the user's own server) does. Empty: none.
    std::string endpoint{};

    processing_guarantee guarantee = processing_guarantee::at_least_once;
    /// How often running tasks commit. Zero: 5 s at-least-once, 100 ms exactly-once.
    std::chrono::milliseconds commit_interval{0};

    /// Warm copies of each task kept on other instances, by tailing the
    /// task's changelogs (at most one fewer than the instances). A task that
    /// moves to an instance with a copy restores only what the copy is behind.
    int standby_replicas = 0;
    /// A standby this many changelog records or fewer behind counts as
    /// caught up: a task moves to a new instance (scaling out) once that
    /// instance's copy of it is this close, and not before.
    std::int64_t acceptable_standby_lag = 10'000;
    /// How the standbys' reader of an instance with many standby partitions
    /// fetches: once it follows `standby_pacing_from_partitions` changelog
    /// partitions or more, it fetches for a quarter of this interval (at
    /// most 250 ms) once an interval and is paused in between
    /// (detail/follow_pacer.hpp); below that, and with an interval of zero,
    /// it fetches all the time. Why: a fetch that waits for records costs
    /// the broker a look at every partition it names on each append to any
    /// of them, and with 5,000 standby partitions an instance took a
    /// broker's request threads (two instances of 500 tasks and ten stores,
    /// exactly-once: every commit timed out; paced, they started in 36 s at
    /// 1 s, 30 s at 2 s and 22-28 s at 3 s: docs/benchmarks-runtime.md,
    /// "Scale"). The cost is freshness: a paced standby, and the lag it
    /// reports, is up to about an interval behind its changelog, so a query
    /// a standby answers (queries.hpp) and the choice of a warm standby
    /// (`acceptable_standby_lag`) see it that much older; a promoted one
    /// restores the rest.
    std::chrono::milliseconds standby_fetch_interval{3000};
    /// From how many standby changelog partitions on the standbys' reader is
    /// paced (see standby_fetch_interval; 0: whenever there is a standby).
    /// Measured unpaced, two exactly-once instances on one broker started
    /// in 11.7 s following 2,000 each and never got through at 3,500: half
    /// the count that worked, for a broker with less to spare.
    std::size_t standby_pacing_from_partitions = 1000;

    /// The group's session timeout: how long a dead instance keeps its
    /// partitions before the group moves them (the broker allows 6-300 s by default).
    std::chrono::milliseconds session_timeout{10'000};
    /// How long an instance may be silent on the coordination topic (it
    /// writes a heartbeat there every sixth of this) before its tasks move
    /// to others: a killed or cut-off instance is replaced after about this
    /// long, not after session_timeout. Under at-least-once an instance
    /// stops writing two thirds of it after its last acknowledged heartbeat,
    /// and a record's delivery is bounded by a third of it. It must exceed
    /// the longest pass of the processing thread (a processor's call on a
    /// record, a commit), or a slow instance loses its tasks while it works;
    /// at most session_timeout.
    std::chrono::milliseconds liveness_timeout{600};
    /// Under exactly-once: how long the broker lets a transaction stay open
    /// before aborting it. A killed instance's open transaction holds back
    /// readers of its partitions until then, so it bounds failover.
    std::chrono::milliseconds transaction_timeout{10'000};
    /// Bound on waiting for the cluster: creating topics, an offset lookup,
    /// a transaction. Past it the instance stops with an error instead of
    /// retrying forever. A single record's delivery (librdkafka's
    /// `message.timeout.ms`) is bounded tighter: by transaction_timeout under
    /// exactly-once, by a fifth of session_timeout and a third of
    /// liveness_timeout under at-least-once (see
    /// docs/runtime.md, "What the producer holds when the lease ends"); a
    /// record not delivered in time fails the commit and its tasks are
    /// rebuilt, and the instance goes on.
    std::chrono::milliseconds broker_timeout{60'000};

    /// Threads that process tasks in this instance. Each is a member of the
    /// group of its own, with its own consumers, producer (so its own
    /// transactions under exactly-once), restore thread and lease, and runs
    /// the tasks the leader gives it; the leader balances tasks over threads
    /// and keeps standbys on other instances (processes) than their active
    /// task. Thread 0 is `instance_id` and keeps `state_dir`; thread k >= 1 is
    /// `<instance_id>-t<k>`, with its local state in `<state_dir>/thread-<k>`.
    /// Queries are answered by whichever thread holds the partition. The
    /// store factory and the restore callback are then called from several
    /// threads at once, and processors (one copy per task) run on several:
    /// what they share must be safe to share. One more thread than the
    /// machine has cores gains nothing.
    int processing_threads = 1;

    /// Input records handed to processors per poll, at most.
    std::size_t max_poll_records = 1000;
    /// Partitions one commit covers, at most: a record of a task whose
    /// changelogs and output would take the work since the last commit past
    /// this waits for a commit first (detail/commit_width.hpp). librdkafka
    /// sends a request per partition, so a commit's time grows with the
    /// partitions it covers: without a bound, hundreds of tasks starting
    /// together made commits that outlived their records' delivery bound,
    /// and every task was rebuilt, again and again. Zero: 1,000 under
    /// exactly-once; under at-least-once one per millisecond of a record's
    /// delivery bound (200 at the default liveness_timeout).
    std::size_t max_partitions_per_commit = 0;
    /// Changelog records a restore applies before it looks at its other tasks again.
    std::size_t restore_slice_records = 10'000;

    bad_record_action on_bad_record = bad_record_action::fail;
    /// Where `bad_record_action::dead_letter` writes. Empty: `<application_id>-dead-letters`.
    std::string dead_letter_topic{};

    /// The topics the runtime creates (changelogs, with one partition per
    /// input partition, compacted; the coordination and dead-letter topics)
    /// get this replication factor; -1, the default, is the broker's
    /// (default.replication.factor). A topic with one replica loses what it
    /// holds with its broker's disk: the runtime warns (on_warning).
    std::int16_t changelog_replication_factor = -1;
    kafka::settings changelog_topic_configs{};

    /// A topology's repartition topics (topology.hpp) get this many
    /// partitions; 0: as many as the topology's input topic with the most,
    /// as Kafka Streams counts them.
    std::int32_t repartition_partitions = 0;
    /// How often a topology deletes the repartition records its readers
    /// committed (Kafka Streams' repartition.purge.interval.ms).
    std::chrono::milliseconds repartition_purge_interval{30'000};

    /// Where the runtime's warnings go (a topic with one replica, a standby
    /// rebuilt because its changelog lost records). Empty: standard error,
    /// one line each.
    std::function<void(const std::string&)> on_warning{};
    /// Where the runtime's notes on coordination go, one line each: a
    /// leader's claim, the members it found silent, the decisions it
    /// published, and what this instance did with each (tasks started,
    /// waiting, released), with the lease's lapses. What a log at INFO
    /// level would say, to tell afterwards why a failover took its time.
    /// Empty: nowhere.
    std::function<void(const std::string&)> on_note{};

    /// librdkafka settings every client of the instance gets (its consumers,
    /// producers and admin clients): the connection's security, e.g.
    /// security.protocol=SASL_SSL, sasl.mechanisms, sasl.username,
    /// sasl.password, ssl.ca.location. consumer_settings and
    /// producer_settings add to them, and win where both name a setting.
    kafka::settings client_settings{};
    kafka::settings consumer_settings{};  ///< librdkafka settings of the consumers, passed through
    kafka::settings producer_settings{};  ///< librdkafka settings of the producers, passed through

    [[nodiscard]] std::chrono::milliseconds effective_commit_interval() const noexcept {
        if (commit_interval.count() > 0) return commit_interval;
        return guarantee == processing_guarantee::exactly_once ? std::chrono::milliseconds(100)
                                                               : std::chrono::milliseconds(5'000);
    }
    /// The consumer group, and the prefix of the coordination topic and of
    /// the transactional ids: `application_id`, or
    /// `<application_id>-<sub_topology>` within a topology.
    [[nodiscard]] std::string group_name() const {
        return sub_topology.empty() ? application_id : application_id + "-" + sub_topology;
    }
    [[nodiscard]] std::string effective_dead_letter_topic() const {
        return dead_letter_topic.empty() ? application_id + "-dead-letters" : dead_letter_topic;
    }

    /// @throws usage_error a setting without which nothing can run
    void validate() const {
        if (application_id.empty()) throw usage_error("strata::runtime: application_id is empty");
        if (bootstrap_servers.empty()) throw usage_error("strata::runtime: bootstrap_servers is empty");
        if (input_topics.empty()) throw usage_error("strata::runtime: no input_topics");
        if (!std::all_of(sub_topology.begin(), sub_topology.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' || ch == '-';
            }))
            throw usage_error("strata::runtime: sub-topology name \"" + sub_topology +
                              "\" has a character a topic name cannot have (letters, digits, '.', '_', '-')");
        if (standby_replicas < 0) throw usage_error("strata::runtime: standby_replicas is negative");
        if (standby_fetch_interval.count() < 0)
            throw usage_error("strata::runtime: standby_fetch_interval is negative; 0 fetches all the time");
        if (repartition_partitions < 0 || repartition_purge_interval.count() <= 0)
            throw usage_error("strata::runtime: repartition_partitions is negative or repartition_purge_interval "
                              "is not positive");
        if (processing_threads < 1)
            throw usage_error("strata::runtime: processing_threads is " + std::to_string(processing_threads) +
                              "; it is at least 1");
        if (liveness_timeout.count() < 60)
            throw usage_error("strata::runtime: liveness_timeout is " + std::to_string(liveness_timeout.count()) +
                              " ms; it is at least 60 ms");
        if (liveness_timeout > session_timeout)
            throw usage_error("strata::runtime: liveness_timeout (" + std::to_string(liveness_timeout.count()) +
                              " ms) is over session_timeout (" + std::to_string(session_timeout.count()) +
                              " ms): the group would detect a dead instance first");
    }

    /// client_settings under consumer_settings and producer_settings, so
    /// that every client made from those has them (instance does it once).
    void apply_client_settings() {
        for (const auto& [name, value] : client_settings) {
            consumer_settings.try_emplace(name, value);
            producer_settings.try_emplace(name, value);
        }
    }

    /// Hands a warning to on_warning, or writes it to standard error.
    void warn(const std::string& what) const {
        if (on_warning) on_warning(what);
        else std::clog << "strata: warning: " << what << '\n';
    }
    /// Hands on_note, if set, a note on this instance: "instance <id>: what".
    void note(const std::string& what) const {
        if (on_note) on_note("instance " + instance_id + ": " + what);
    }
};

}  // namespace strata::runtime
