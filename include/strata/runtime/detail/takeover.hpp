#pragma once
/// @file
/// @brief What happens on the restore thread before a task taken over
/// restores: its predecessors are made unable to change its offsets or
/// changelogs (exactly-once), then where they left off is read. Order
/// matters (runtime-design I1, I3): offsets and the changelogs' ends read
/// after the fence agree; read before it, a last transaction could commit
/// in between, and the task would resume past inputs whose state changes
/// it never restored.

#include <strata/core/error.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/commit_metadata.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Partition p of every input topic: the input of task p.
[[nodiscard]] inline kafka::unique_partition_list inputs_of(const application_options& c, std::int32_t p) {
    kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(c.input_topics.size())));
    for (const std::string& topic : c.input_topics) rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), p);
    return l;
}

/// @brief The position of `topic` among the input topics, if it is one.
[[nodiscard]] inline std::optional<std::size_t> input_index(const application_options& c, std::string_view topic) {
    for (std::size_t i = 0; i < c.input_topics.size(); ++i)
        if (c.input_topics[i] == topic) return i;
    return std::nullopt;
}

class takeover {
public:
    using clock = std::chrono::steady_clock;

    takeover(const application_options& c, metrics::registry& reg)
        : c_(&c), registry_(&reg), offsets_(client(c, true)), uncommitted_(client(c, false)) {}

    /// @brief Fences the tasks' predecessors, waits for their changelogs to
    /// be stable, then looks up their committed input offsets, partition
    /// times and who committed them last. Tasks started together are looked
    /// up together: one request for all their changelogs' stable ends, one
    /// for their high watermarks, one for their committed offsets (one task
    /// at a time, an instance restarting 1,000 tasks of ten stores spent
    /// 7.6 ms a task here).
    void prepare(std::span<task* const> tasks) {
        for (const task* t : tasks) fence_predecessors(*t);
        await_stable_changelogs(tasks);
        look_up_committed(tasks);
    }

private:
    /// Committed offsets and stable ends are looked up by a consumer of the
    /// group's id that never joins it: the member's own lookups can wait
    /// while the group rebalances, which is when a task taken over needs one
    /// (a failover's restore took 700 ms with nothing to restore). The
    /// other reads the changelogs' high watermarks, beside the stable ends.
    static kafka::client client(const application_options& c, bool committed) {
        kafka::conf conf;
        conf.set("bootstrap.servers", c.bootstrap_servers);
        conf.set(c.consumer_settings);
        if (committed) {
            conf.set("group.id", c.group_name());
            conf.set("enable.auto.commit", "false");
        }
        conf.set("isolation.level", committed ? "read_committed" : "read_uncommitted");
        return kafka::client(RD_KAFKA_CONSUMER, std::move(conf));
    }

    /// Initialising a producer with another's transactional id aborts the
    /// transaction it left open, or waits until the one it was committing is
    /// complete, and makes every later write of the old producer fail.
    void fence_predecessors(const task& t) {
        for (const fence_target& f : t.fence) {
            {
                const std::lock_guard lock(mutex_);
                if (fenced_.contains({f.incarnation, f.decision.epoch, f.decision.version})) continue;
            }
            const auto start = clock::now();
            kafka::producer_options o;
            o.bootstrap_servers = c_->bootstrap_servers;
            o.extra = c_->producer_settings;
            o.transactional_id = f.transactional_id;
            o.extra["transaction.timeout.ms"] = std::to_string(c_->transaction_timeout.count());
            fence(o);
            registry_->histogram_for("strata_instance_fence_seconds",
                                     "Time to fence the producer of an instance that may still write for a task",
                                     {{"instance", c_->instance_id}})
                .observe(std::chrono::duration<double>(clock::now() - start).count());
            const std::lock_guard lock(mutex_);
            fenced_.insert({f.incarnation, f.decision.epoch, f.decision.version});
        }
    }

    /// Initializes transactions with the predecessor's transactional id.
    /// The first InitProducerId aborts the transaction it left open, and the
    /// broker answers it CONCURRENT_TRANSACTIONS while it writes the abort
    /// markers (a few milliseconds); librdkafka 2.0.2 then asks again only
    /// after a fixed 500 ms (rd_kafka_idemp_pid_timer_restart, not a
    /// setting), which was half of a failover under exactly-once. So the
    /// first tries are short, each with a client of its own: a client made
    /// after the abort began is answered at once. A try that timed out may
    /// have fenced already; another fences again, which is harmless.
    void fence(const kafka::producer_options& o) {
        const auto deadline = clock::now() + c_->broker_timeout;
        for (const std::chrono::milliseconds attempt : {std::chrono::milliseconds(100), std::chrono::milliseconds(250)}) {
            if (clock::now() + attempt >= deadline) break;
            try {
                const kafka::exactly_once fenced(o, attempt);
                return;
            } catch (const kafka::error& e) {
                // librdkafka says what the broker last answered when the
                // call's time runs out during the wait.
                if (e.code() != RD_KAFKA_RESP_ERR__TIMED_OUT && e.code() != RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS)
                    throw;
                registry_->counter_for("strata_instance_fence_retries_total",
                                       "Fences of a predecessor's producer tried again with a new client",
                                       {{"instance", c_->instance_id}})
                    .inc();
            }
        }
        const kafka::exactly_once fenced(
            o, std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
                        std::chrono::milliseconds(1000)));
    }

    /// Under exactly-once, waits until no transaction is open on the task's
    /// changelog partitions. Its previous owner let go after a commit, or was
    /// fenced; either way its last transaction is decided, but the markers
    /// that end it reach each partition on their own time. A commit returns
    /// before them, and the offsets of the transaction can be readable before
    /// its changelog records are: a restore that stopped at an older stable
    /// offset would miss what the offsets say was processed.
    void await_stable_changelogs(std::span<task* const> tasks) {
        if (c_->guarantee != processing_guarantee::exactly_once) return;
        std::vector<std::pair<std::string, std::int32_t>> partitions;
        std::vector<const task*> owner;  // of each partition
        for (const task* t : tasks)
            for (const auto& port : t->stores())
                if (const kafka::changelog* log = port->changelog(); log != nullptr) {
                    partitions.emplace_back(log->topic(), log->partition());
                    owner.push_back(t);
                }
        if (partitions.empty()) return;
        const auto deadline = clock::now() + c_->broker_timeout;
        const auto left = [&] {
            return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
                            std::chrono::milliseconds(100));
        };
        // The changelogs together: one request for the stable ends and one
        // for the high watermarks, not two per store (an instance restarting
        // 1,000 tasks of ten stores spent 13 ms a task here) nor per task.
        for (;;) {
            const std::vector<std::int64_t> stable = kafka::list_end_offsets(offsets_.get(), partitions, left());
            const std::vector<std::int64_t> high = kafka::list_end_offsets(uncommitted_.get(), partitions, left());
            std::size_t open = 0;
            while (open < partitions.size() && stable[open] >= high[open]) ++open;
            if (open == partitions.size()) return;
            if (clock::now() > deadline)
                throw changelog_error("strata::runtime: task " + owner[open]->id() + ": a transaction on " +
                                      partitions[open].first + "[" + std::to_string(partitions[open].second) +
                                      "] stayed open for " + std::to_string(c_->broker_timeout.count()) +
                                      " ms after its writer let go of the task or was fenced");
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

    /// The committed offsets of the tasks' inputs, asked again (in attempts
    /// of a quarter of broker_timeout) while the group coordinator moves: the
    /// campaign saw NOT_COORDINATOR stop an instance after a broker's death.
    kafka::unique_partition_list committed_inputs(std::span<task* const> tasks) {
        const auto deadline = clock::now() + c_->broker_timeout;
        for (;;) {
            kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(
                static_cast<int>(c_->input_topics.size() * tasks.size())));
            for (const task* t : tasks)
                for (const std::string& topic : c_->input_topics)
                    rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), t->partition());
            rd_kafka_resp_err_t err =
                rd_kafka_committed(offsets_.get(), l.get(), kafka::timeout_ms(c_->broker_timeout / 4));
            const task* failed = err == RD_KAFKA_RESP_ERR_NO_ERROR ? nullptr : tasks.front();
            for (int i = 0; err == RD_KAFKA_RESP_ERR_NO_ERROR && i < l->cnt; ++i)
                if ((err = l->elems[i].err) != RD_KAFKA_RESP_ERR_NO_ERROR) failed = &owner_of(tasks, l->elems[i]);
            const bool retriable = kafka::group_coordinator_unavailable(err) ||
                                   err == RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT;  // a transaction still open
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR || !retriable || clock::now() >= deadline) {
                if (failed != nullptr) kafka::check(err, "look up the committed offsets of task " + failed->id());
                return l;
            }
            // UNSTABLE_OFFSET_COMMIT lasts until the markers of the fenced
            // producer's transaction are written, a few milliseconds: at 200 ms
            // between tries, a takeover under exactly-once waited half a second here.
            std::this_thread::sleep_for(std::chrono::milliseconds(err == RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT ? 10 : 200));
        }
    }

    /// The task whose input `e` is.
    static task& owner_of(std::span<task* const> tasks, const rd_kafka_topic_partition_t& e) {
        const auto it =
            std::find_if(tasks.begin(), tasks.end(), [&](const task* t) { return t->partition() == e.partition; });
        if (it == tasks.end())
            throw changelog_error("strata::runtime: the committed offsets came back for " + std::string(e.topic) + "[" +
                                  std::to_string(e.partition) + "], which no task asked for");
        return **it;
    }

    void look_up_committed(std::span<task* const> tasks) {
        if (tasks.empty()) return;
        const kafka::unique_partition_list l = committed_inputs(tasks);
        for (task* t : tasks) {
            t->committed_offsets.assign(c_->input_topics.size(), RD_KAFKA_OFFSET_BEGINNING);
            t->partition_times.assign(c_->input_topics.size(), -1);
        }
        for (int i = 0; i < l->cnt; ++i) {
            const rd_kafka_topic_partition_t& e = l->elems[i];
            task& t = owner_of(tasks, e);
            kafka::check(e.err, "look up the committed offset of " + std::string(e.topic));
            const std::size_t topic = input_index(*c_, e.topic).value_or(0);
            if (e.offset >= 0) t.committed_offsets[topic] = e.offset;
            if (e.metadata == nullptr || e.metadata_size == 0) continue;
            // Written by strata or by Kafka Streams (commit_metadata.hpp).
            const commit_metadata m =
                decode_commit_metadata(std::string_view(static_cast<const char*>(e.metadata), e.metadata_size));
            t.partition_times[topic] = m.partition_time;
            if (!m.committed_by.empty()) {
                t.timeline.previous_owner = m.committed_by;
                t.timeline.previous_commit_ms = std::max(t.timeline.previous_commit_ms, m.commit_ms);
            }
        }
    }

    const application_options* c_;
    metrics::registry* registry_;
    kafka::client offsets_;      // committed offsets and stable ends
    kafka::client uncommitted_;  // high watermarks
    std::mutex mutex_;
    // Incarnations fenced already, with the decision they were fenced for
    // (handoff.hpp, fence_target, says why not the incarnation alone).
    std::set<std::tuple<std::string, std::int64_t, std::int64_t>> fenced_;
};

}  // namespace strata::runtime::detail
