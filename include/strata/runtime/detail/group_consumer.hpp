#pragma once
/// @file
/// @brief The instance's membership of the application's consumer group,
/// over librdkafka. It subscribes to the coordination topic only: the group
/// elects the leader (the member given its one partition), detects dead
/// members, and fences the commits of expelled ones. Input partitions are
/// assigned by the instance itself, task by task, to a consumer of their
/// own beside the group's, which joins no group: librdkafka (2.0.2,
/// rd_kafka_assignment_serve) starts no newly assigned partition's fetcher
/// while an offset commit of its handle is unanswered, and an at-least-once
/// commit waits behind the member's JoinGroup for as long as the group
/// waits for a dead member's session. A task taken over then had its first
/// record 0.6 to 1.5 s late (docs/benchmarks-runtime.md, "Failover under a
/// second").
///
/// It tells the leader part when it is elected or deposed, says when the
/// membership changed or was lost, turns consumer errors into clear ones
/// (a group held by another protocol, a missing input, no broker for
/// `broker_timeout`), and pauses the inputs while the lease is out.

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/group_stats.hpp>
#include <strata/runtime/detail/leader.hpp>
#include <strata/runtime/detail/takeover.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief What one poll of the group consumer gave.
enum class polled { nothing, error, record };

class group_consumer {
public:
    using clock = std::chrono::steady_clock;

    group_consumer(const application_options& c, const std::string& coordination, leader& l)
        : c_(&c), leader_(&l), consumer_(RD_KAFKA_CONSUMER, conf(c, this)),
          inputs_(RD_KAFKA_CONSUMER, inputs_conf(c)) {
        rd_kafka_poll_set_consumer(consumer_.get());
        rd_kafka_poll_set_consumer(inputs_.get());
        // The input topics' leaders, known before any of their partitions is
        // assigned: librdkafka starts fetching a partition whose leader it
        // does not know yet only 500 ms later.
        for (const std::string& topic : c.input_topics)
            (void)kafka::probe_topic(inputs_.get(), c.bootstrap_servers, topic, c.broker_timeout);
        const kafka::unique_partition_list topics = kafka::one_partition(coordination, RD_KAFKA_PARTITION_UA);
        kafka::check(rd_kafka_subscribe(consumer_.get(), topics.get()), "subscribe to " + coordination);
    }
    group_consumer(const group_consumer&) = delete;
    group_consumer& operator=(const group_consumer&) = delete;

    /// librdkafka 2.0.2 aborts the process (`rd_kafka_sticky_assignor_state_destroy:
    /// Assertion 'assignor_state' failed`) when it destroys a consumer that
    /// joined the group but never completed a SyncGroup: a duplicate instance
    /// refused in the middle of its first rebalance. Such a handle is closed
    /// and abandoned instead (its threads and memory stay until the process
    /// ends); one that had an assignment, even an empty one, is destroyed.
    ~group_consumer() {
        if (consumer_.get() == nullptr) return;  // given up in close()
        if (synced_ || (!joined_ && member_id().empty())) return;
        (void)rd_kafka_consumer_close(consumer_.get());
        consumer_.abandon();
    }

    /// @brief The group's handle: offset commits and the group's metadata go through it.
    [[nodiscard]] rd_kafka_t* get() const noexcept { return consumer_.get(); }
    /// @brief The inputs' handle (their fetch positions and watermarks).
    [[nodiscard]] rd_kafka_t* inputs() const noexcept { return inputs_.get(); }

    /// @brief The member id in the group, "" while it has none.
    [[nodiscard]] std::string member_id() const {
        std::string id;
        if (char* m = rd_kafka_memberid(consumer_.get()); m != nullptr) {
            id = m;
            rd_kafka_mem_free(consumer_.get(), m);
        }
        return id;
    }

    /// @brief librdkafka said in a rebalance that the assignment was lost:
    /// the group dropped this member.
    [[nodiscard]] bool lost() const noexcept { return lost_; }
    void clear_lost() noexcept { lost_ = false; }
    /// @brief Whether this member is in the middle of joining the group, as
    /// its statistics last said (every 100 ms): an offset commit sent now
    /// could start another rebalance (group_stats.hpp).
    [[nodiscard]] bool rejoining() const noexcept { return !steady_; }
    /// @brief Whether a rebalance happened since the last call.
    [[nodiscard]] bool take_changed() noexcept { return std::exchange(changed_, false); }
    /// @brief What a rebalance callback threw (librdkafka cannot carry it).
    void rethrow_callback_failure() const {
        if (failure_) std::rethrow_exception(failure_);
    }

    /// @brief Serves the group's callbacks (rebalances, statistics), then
    /// gives the next input record within `wait_ms`, into `out`: as often
    /// as when both came through one handle, so the join state the
    /// committer reads is as fresh (a pass may take seconds of records).
    /// An error is dealt with here: retried by librdkafka, or thrown when
    /// it will not pass.
    polled poll(int wait_ms, kafka::unique_message& out) {
        serve_group(0);
        out.reset(rd_kafka_consumer_poll(inputs_.get(), wait_ms));
        if (!out) return polled::nothing;
        if (out->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            error(*out);
            return polled::error;
        }
        unreachable_since_.reset();
        heard_from_cluster();
        return polled::record;
    }

    /// @brief Polls for the group's callbacks only (the lease is out). A
    /// record that comes anyway (fetched before the pause) is not processed:
    /// its partition is sought back to it, to come again with the lease.
    void serve_group_only() {
        serve_group(10);
        kafka::unique_message m;
        if (poll(0, m) == polled::record) put_back(*m);
    }

    /// @brief Seeks an input record's partition back to it, unprocessed: it
    /// comes again with the next poll that may process it.
    void put_back(const rd_kafka_message_t& m) {
        if (m.rkt != nullptr && input_index(*c_, rd_kafka_topic_name(m.rkt)))
            (void)rd_kafka_seek(m.rkt, m.partition, m.offset, 1000);
    }

    // The inputs of task p, from where it resumes; paused while the lease is out.
    void assign_inputs(std::int32_t p, const std::vector<std::int64_t>& offsets) {
        const kafka::unique_partition_list l = inputs_of(*c_, p);
        for (int i = 0; i < l->cnt; ++i) l->elems[i].offset = offsets[static_cast<std::size_t>(i)];
        // librdkafka keeps a partition's pause across an unassign and a new
        // assign: one paused while the lease was out, then given back
        // before the lease returned (so not resumed), would stay paused
        // when assigned again, and its task would never get a record. It is
        // resumed before the assignment, and only if it was paused: a resume
        // after it makes the offset lookup of a task with no commit yet
        // (offset BEGINNING) come back "outdated", and librdkafka asks again
        // only after 500 ms (every task of a new application started half a
        // second late).
        if (!held_ && paused_.erase(p) > 0) (void)rd_kafka_resume_partitions(inputs_.get(), l.get());
        kafka::check(rd_kafka_incremental_assign(inputs_.get(), l.get()), "assign the input of task " + std::to_string(p));
        if (held_) {
            (void)rd_kafka_pause_partitions(inputs_.get(), l.get());
            paused_.insert(p);
        }
        assigned_.insert(p);
    }
    void unassign_inputs(std::int32_t p) {
        if (assigned_.erase(p) == 0) return;
        const kafka::unique_partition_list l = inputs_of(*c_, p);
        kafka::check(rd_kafka_incremental_unassign(inputs_.get(), l.get()), "unassign the input of task " + std::to_string(p));
    }
    void hold_inputs(bool hold) {
        if (hold == held_) return;
        held_ = hold;
        for (std::int32_t p : assigned_) {
            const kafka::unique_partition_list l = inputs_of(*c_, p);
            if (hold) {
                (void)rd_kafka_pause_partitions(inputs_.get(), l.get());
                paused_.insert(p);
            } else {
                (void)rd_kafka_resume_partitions(inputs_.get(), l.get());
                paused_.erase(p);
            }
        }
    }

    /// @brief A broker answered (a record, an acknowledgement).
    void heard_from_cluster() { last_contact_ = clock::now(); }

    /// @brief Throws once no broker answered for `broker_timeout`: no record
    /// came in, nothing published was acknowledged, and a metadata request,
    /// sent when things went quiet, found no broker. A part of the cluster
    /// that is away (the coordination partition's leader, say) does not
    /// stop the instance: what it owns goes on.
    void check_reachable() {
        const auto now = clock::now();
        if (now - last_contact_ < c_->broker_timeout / 4) return;
        if (now >= next_probe_) {
            next_probe_ = now + c_->broker_timeout / 8;
            const rd_kafka_metadata_t* md = nullptr;
            if (rd_kafka_metadata(consumer_.get(), 0, nullptr, &md, 500) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_metadata_destroy(md);
                heard_from_cluster();
                return;
            }
        }
        if (now - last_contact_ > c_->broker_timeout) throw unreachable(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "");
    }

    /// @brief Leaves the group at once. The inputs, assigned by hand rather than by
    /// the group, are given back first: the close then waits only for the
    /// group's own partition.
    ///
    /// librdkafka 2.0.2 never ends a close that finds an empty assignment
    /// handed to the application and not taken yet (a member given nothing
    /// in a rebalance, while the processing thread was stopping): it waits
    /// for an assign call, and turns the one the close makes into an
    /// unassign that does not count. Three instances of the campaign hung
    /// so on SIGTERM (test/runtime/group_consumer_test.cpp). A rebalance
    /// handed over already is taken here first; one handed over during the
    /// close leaves the handle behind after a session timeout (its threads
    /// stay until the process ends; the group expels the member).
    void close() {
        joined_ = joined_ || !member_id().empty();  // the close forgets it
        const std::vector<std::int32_t> inputs(assigned_.begin(), assigned_.end());
        for (const std::int32_t p : inputs) {
            try {
                unassign_inputs(p);
            } catch (const kafka::error&) {
                // Leaving goes on: the group forgets this member's partitions anyway.
            }
        }
        (void)rd_kafka_consumer_close(inputs_.get());  // it joined no group: nothing to wait for
        // Serves the rebalance callback for what is handed over already;
        // records polled now are dropped (nothing processes or commits them).
        for (int n = 0; n < 100'000; ++n) {
            const kafka::unique_message m(rd_kafka_consumer_poll(consumer_.get(), 0));
            if (!m) break;
        }
        const kafka::unique_queue q(rd_kafka_queue_new(consumer_.get()));
        if (rd_kafka_error_t* e = rd_kafka_consumer_close_queue(consumer_.get(), q.get()); e != nullptr) {
            rd_kafka_error_destroy(e);
            (void)rd_kafka_consumer_close(consumer_.get());
            return;
        }
        const auto deadline = clock::now() + c_->session_timeout;
        while (rd_kafka_consumer_closed(consumer_.get()) == 0) {
            if (clock::now() >= deadline) {
                consumer_.abandon();
                c_->warn("instance " + c_->instance_id + ": its group consumer did not close within the session "
                         "timeout (librdkafka 2.0.2 waits for good when a rebalance hands it an empty assignment "
                         "during the close); it is left behind, and the group expels it");
                return;
            }
            (void)rd_kafka_queue_poll_callback(q.get(), 100);
        }
    }

private:
    /// Serves the group's callbacks, waiting up to `wait_ms` for one. Its
    /// only partition (the coordination topic's) is paused: what comes is
    /// an error, or nothing.
    void serve_group(int wait_ms) {
        const kafka::unique_message m(rd_kafka_consumer_poll(consumer_.get(), wait_ms));
        if (m && m->err != RD_KAFKA_RESP_ERR_NO_ERROR) error(*m);
    }

    /// The inputs' consumer: it reads what the instance assigns it and
    /// joins no group (its group.id, which librdkafka's consumer calls
    /// need, is one nobody joins), commits nothing (offsets go through the
    /// group's handle or the transaction).
    static kafka::conf inputs_conf(const application_options& c) {
        kafka::conf k;
        k.set("bootstrap.servers", c.bootstrap_servers);
        k.set("group.id", c.group_name() + "-inputs-of-" + c.instance_id);
        k.set("client.id", c.instance_id + "-inputs");
        k.set("auto.offset.reset", "earliest");
        // A fetch the broker holds for lack of data delays a partition that
        // was just resumed by as long: a task's first records came 500 ms
        // after its restore with librdkafka's default.
        k.set("fetch.wait.max.ms", "10");
        k.set("fetch.error.backoff.ms", "10");
        k.set(c.consumer_settings);
        k.set("enable.auto.commit", "false");
        k.set("enable.auto.offset.store", "false");
        k.set("isolation.level", "read_committed");
        return k;
    }

    static kafka::conf conf(const application_options& c, group_consumer* self) {
        kafka::conf k;
        k.set("bootstrap.servers", c.bootstrap_servers);
        k.set("group.id", c.group_name());
        k.set("client.id", c.instance_id);
        k.set("auto.offset.reset", "earliest");
        k.set("session.timeout.ms", std::to_string(c.session_timeout.count()));
        k.set("heartbeat.interval.ms", std::to_string(std::max<std::int64_t>(c.session_timeout.count() / 5, 100)));
        // A processing thread that hangs (a leader stuck in a call) leaves
        // the group after this, so that another member leads: librdkafka's
        // default is 5 minutes. Its longest legitimate wait is a delivery
        // or a commit, bounded by broker_timeout.
        k.set("max.poll.interval.ms", std::to_string((c.broker_timeout + c.session_timeout).count()));
        // The join state, for the committer (group_stats.hpp, committer.hpp).
        k.set("statistics.interval.ms", "100");
        k.set(c.consumer_settings);
        // Not overridable: the runtime commits itself, reads only committed
        // data, and relies on cooperative rebalancing.
        k.set("enable.auto.commit", "false");
        k.set("enable.auto.offset.store", "false");
        k.set("isolation.level", "read_committed");
        k.set("partition.assignment.strategy", "cooperative-sticky");
        rd_kafka_conf_set_rebalance_cb(k.get(), &group_consumer::on_rebalance);
        rd_kafka_conf_set_stats_cb(k.get(), &group_consumer::on_stats);
        rd_kafka_conf_set_opaque(k.get(), self);
        return k;
    }

    static int on_stats(rd_kafka_t*, char* json, std::size_t size, void* opaque) {
        const std::string_view state = join_state_in_stats(std::string_view(json, size));
        if (!state.empty()) static_cast<group_consumer*>(opaque)->steady_ = state == "steady";
        return 0;  // librdkafka frees the JSON
    }

    static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                             void* opaque) {
        auto* self = static_cast<group_consumer*>(opaque);
        try {
            self->rebalance(rk, err, parts);
        } catch (...) {
            if (!self->failure_) self->failure_ = std::current_exception();
        }
    }

    /// The group assigns and revokes only the coordination topic's partition:
    /// whoever holds it leads. A lost assignment means this member was
    /// dropped from the group: the instance lets go of its tasks before
    /// anything more is processed.
    void rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
        // librdkafka answers null once the group handle is terminating (a
        // close after the broker went away: the process read through the null
        // pointer before), and this consumer is configured cooperative.
        const char* protocol = rd_kafka_rebalance_protocol(rk);
        const bool cooperative = protocol == nullptr || std::string_view(protocol) == "COOPERATIVE";
        changed_ = true;
        const auto coordination = [&] {
            for (int i = 0; i < parts->cnt; ++i)
                if (!input_index(*c_, parts->elems[i].topic)) return true;
            return false;
        };
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
            synced_ = true;  // after a SyncGroup, even an empty assignment
            if (cooperative) kafka::check(rd_kafka_incremental_assign(rk, parts), "take the assigned partitions");
            else kafka::check(rd_kafka_assign(rk, parts), "take the assigned partitions");
            // The coordination topic is read by its own consumer.
            kafka::check(rd_kafka_pause_partitions(rk, parts), "pause the coordination partition");
            if (coordination()) leader_->elected(member_id(), clock::now());
        } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            if (coordination()) leader_->deposed();
            if (rd_kafka_assignment_lost(rk) != 0) lost_ = true;
            if (cooperative) kafka::check(rd_kafka_incremental_unassign(rk, parts), "give back the revoked partitions");
            else kafka::check(rd_kafka_assign(rk, nullptr), "give back the revoked partitions");
        } else {
            (void)rd_kafka_assign(rk, nullptr);
            throw kafka::error("rebalance", err);
        }
    }

    void error(const rd_kafka_message_t& m) {
        if (m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
        const char* what = rd_kafka_message_errstr(&m);
        std::array<char, 512> fatal{};
        if (m.err == RD_KAFKA_RESP_ERR__FATAL || rd_kafka_fatal_error(consumer_.get(), fatal.data(), fatal.size()))
            throw kafka::error("consume", m.err, fatal[0] ? fatal.data() : what);
        const bool away = m.err == RD_KAFKA_RESP_ERR__TRANSPORT || m.err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
                          m.err == RD_KAFKA_RESP_ERR__RESOLVE;
        if (!away) {
            if (m.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || m.err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                throw kafka::error("consume the input", m.err, what);
            if (m.err == RD_KAFKA_RESP_ERR_INCONSISTENT_GROUP_PROTOCOL)
                throw kafka::error("join the group " + c_->group_name() +
                                       ": it is held by members of another protocol (another application, "
                                       "e.g. Kafka Streams, with the same application id?); strata runs "
                                       "nothing until it is a member",
                                   m.err, what);
            if (m.err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
                throw kafka::error("join the group " + c_->group_name() + " (not authorized)", m.err, what);
            return;  // librdkafka retries the rest itself
        }
        const auto now = clock::now();
        if (!unreachable_since_) unreachable_since_ = now;
        else if (now - *unreachable_since_ > c_->broker_timeout) throw unreachable(m.err, what);
    }

    kafka::error unreachable(rd_kafka_resp_err_t err, const char* what) const {
        return kafka::error("no broker reachable for " + std::to_string(c_->broker_timeout.count()) + " ms", err, what);
    }

    const application_options* c_;
    leader* leader_;
    kafka::client consumer_;  // the group's member
    kafka::client inputs_;    // reads the inputs (see the file comment)
    std::exception_ptr failure_;
    bool lost_ = false;
    bool changed_ = true;
    bool joined_ = false;  // had a member id when it was closed
    bool synced_ = false;  // had an assignment from the group: see ~group_consumer
    bool steady_ = true;   // the join state in the last statistics (none: commits go out)
    bool held_ = false;                // the inputs are paused while the lease is out
    std::set<std::int32_t> assigned_;  // tasks whose inputs are assigned
    std::set<std::int32_t> paused_;    // tasks whose inputs librdkafka holds paused, assigned or not
    std::optional<clock::time_point> unreachable_since_;
    clock::time_point last_contact_ = clock::now();
    clock::time_point next_probe_{};
};

}  // namespace strata::runtime::detail
