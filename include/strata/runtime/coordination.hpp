#pragma once
/// @file
/// @brief How the instances of an application agree on who runs which task:
/// a compacted topic `<application id>-coordination` with one partition that
/// every instance reads. Each instance publishes its status there (the tasks
/// it runs, the standbys it keeps and how far behind they are, its
/// endpoint); the leader (the member the consumer group gives that topic's
/// partition to) publishes the assignment it computes from the group's
/// membership and those statuses.
///
/// Why not the group's own assignment: the partition assignors librdkafka
/// ships cannot be told about standbys or about a copy still warming up, and
/// librdkafka 2.0 offers no way to plug in another. The group still does what
/// it does well: it detects a dead instance (session timeout), elects the
/// leader, and its generation fences the commits of an instance it expelled.

#include <strata/core/bytes.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/serde/all.hpp>
#include <strata/serde/encode.hpp>

#include <boost/hana/define_struct.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime {

/// @brief A standby task an instance keeps, and how many changelog records
/// it is behind (the largest lag over the task's stores).
struct standby_lag {
    BOOST_HANA_DEFINE_STRUCT(standby_lag, (std::int32_t, task), (std::int64_t, lag));
    friend bool operator==(const standby_lag&, const standby_lag&) = default;
};

/// @brief What an instance tells the others about itself.
struct instance_status {
    BOOST_HANA_DEFINE_STRUCT(instance_status,
                             (std::string, instance),                 // its instance id
                             (std::string, endpoint),                 // host:port of its queries, if any
                             (std::int64_t, published_ms),            // wall clock when published
                             (std::int64_t, assignment_version),      // the last assignment it acted on
                             (std::vector<std::int32_t>, active),     // tasks restoring or running here
                             (std::vector<standby_lag>, standbys));   // standby tasks kept here
    friend bool operator==(const instance_status&, const instance_status&) = default;
};

/// @brief Where one task runs, and where its standbys are.
struct task_placement {
    BOOST_HANA_DEFINE_STRUCT(task_placement,
                             (std::int32_t, task),
                             (std::string, active),                   // the instance that runs it
                             (std::vector<std::string>, standbys),    // instances that keep a copy
                             (std::string, release_from));            // a live instance that must let go of it first
    friend bool operator==(const task_placement&, const task_placement&) = default;
};

/// @brief The leader's decision: every task's placement.
struct assignment {
    BOOST_HANA_DEFINE_STRUCT(assignment,
                             (std::int64_t, version),                 // grows with every decision
                             (std::string, leader),                   // who decided
                             (std::int64_t, decided_ms),              // when
                             (std::int64_t, noticed_ms),              // when the leader saw the membership change behind it (0: none)
                             (std::vector<std::string>, members),     // the live instances it was made for
                             (std::vector<task_placement>, tasks));   // ascending by task
    friend bool operator==(const assignment&, const assignment&) = default;

    /// The placement of task p, if the assignment has it.
    [[nodiscard]] const task_placement* find(std::int32_t p) const {
        for (const auto& t : tasks)
            if (t.task == p) return &t;
        return nullptr;
    }
};

/// @brief The name of an application's coordination topic.
[[nodiscard]] inline std::string coordination_topic_name(std::string_view application) {
    return std::string(application) + "-coordination";
}

namespace detail {
inline constexpr std::string_view assignment_key = "assignment";
inline constexpr std::string_view status_prefix = "status/";
}  // namespace detail

/// @brief Tails the coordination topic and keeps the newest assignment and
/// every instance's newest status. Used on one thread; never blocks.
class coordination_reader {
public:
    coordination_reader(const std::string& bootstrap, std::string topic, const kafka::settings& extra)
        : topic_(std::move(topic)), consumer_(make(bootstrap, topic_, extra)) {
        // Known before it is assigned: a partition whose leader librdkafka
        // does not know yet starts fetching only 500 ms later.
        (void)kafka::probe_topic(consumer_.get(), bootstrap, topic_, std::chrono::seconds(30));
        const kafka::unique_partition_list l = kafka::one_partition(topic_, 0, RD_KAFKA_OFFSET_BEGINNING);
        kafka::check(rd_kafka_assign(consumer_.get(), l.get()), "read " + topic_);
    }

    /// @brief Takes in what arrived since the last call.
    /// @returns whether anything changed
    bool poll() {
        bool changed = false;
        for (int n = 0; n < 10'000; ++n) {
            const kafka::unique_message m(rd_kafka_consumer_poll(consumer_.get(), 0));
            if (!m) break;
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                caught_up_ = true;
                continue;
            }
            if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                if (m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                    throw kafka::kafka_error("read " + topic_, m->err, rd_kafka_message_errstr(m.get()));
                continue;  // transient: librdkafka retries
            }
            changed = take(*m) || changed;
        }
        return changed;
    }

    /// @brief Whether the reader has reached the end of the topic once.
    [[nodiscard]] bool caught_up() const noexcept { return caught_up_; }
    [[nodiscard]] const std::optional<assignment>& latest() const noexcept { return assignment_; }
    [[nodiscard]] const std::map<std::string, instance_status, std::less<>>& statuses() const noexcept {
        return statuses_;
    }
    /// @brief Instances whose last word was a withdrawal: they committed,
    /// closed their tasks and are leaving the group (until they publish a
    /// status again).
    [[nodiscard]] const std::set<std::string, std::less<>>& withdrawn() const noexcept { return withdrawn_; }

private:
    static kafka::client make(const std::string& bootstrap, const std::string& topic, const kafka::settings& extra) {
        kafka::conf c;
        c.set("bootstrap.servers", bootstrap);
        c.set(extra);
        // rd_kafka_consumer_poll wants a group id; the reader never joins
        // the group (it assigns its partition itself) and never commits.
        c.set("group.id", topic + "-reader");
        c.set("enable.partition.eof", "true");
        c.set("enable.auto.commit", "false");
        c.set("fetch.wait.max.ms", "10");
        c.set("fetch.error.backoff.ms", "10");
        c.set("fetch.error.backoff.ms", "10");
        return kafka::client(RD_KAFKA_CONSUMER, std::move(c));
    }

    bool take(const rd_kafka_message_t& m) {
        const std::string_view key(static_cast<const char*>(m.key), m.key_len);
        const bytes_view value(static_cast<const std::byte*>(m.payload), m.len);
        try {
            if (key == detail::assignment_key) {
                if (m.payload == nullptr) return false;
                assignment a = decode<assignment>(value);
                if (assignment_ && a.version <= assignment_->version) return false;
                assignment_ = std::move(a);
                return true;
            }
            if (key.substr(0, detail::status_prefix.size()) == detail::status_prefix) {
                std::string instance(key.substr(detail::status_prefix.size()));
                if (m.payload == nullptr) {  // the instance left, after closing its tasks
                    statuses_.erase(instance);
                    return withdrawn_.insert(std::move(instance)).second;
                }
                statuses_[instance] = decode<instance_status>(value);
                withdrawn_.erase(instance);
                return true;
            }
        } catch (const serde_error&) {
            // Written by another version, or damaged: not ours to act on.
        }
        return false;
    }

    std::string topic_;
    kafka::client consumer_;
    std::optional<assignment> assignment_;
    std::map<std::string, instance_status, std::less<>> statuses_;
    std::set<std::string, std::less<>> withdrawn_;
    bool caught_up_ = false;
};

/// @brief Publishes to the coordination topic (an idempotent producer of
/// its own, outside any transaction: a status must be seen at once).
class coordination_writer {
public:
    coordination_writer(const std::string& bootstrap, std::string topic, const kafka::settings& extra)
        : topic_(std::move(topic)), producer_(kafka::producer_options{bootstrap, std::nullopt, with_linger(extra)}),
          tracker_(&producer_.new_tracker()), rkt_(rd_kafka_topic_new(producer_.get(), topic_.c_str(), nullptr)) {}

    void publish(const instance_status& s) {
        send(std::string(detail::status_prefix) + s.instance, encode(s));
    }
    void publish(const assignment& a) { send(std::string(detail::assignment_key), encode(a)); }
    /// @brief Says that an instance left for good (its status goes away).
    void withdraw(const std::string& instance) {
        const std::string key = std::string(detail::status_prefix) + instance;
        producer_.produce(rkt_.get(), 0, as_bytes(key), std::nullopt, *tracker_);
    }

    /// @brief Serves delivery reports; throws when a publication failed.
    void poll() {
        producer_.poll();
        if (tracker_->has_failed())
            throw kafka::kafka_error("publish to " + topic_, tracker_->first_error, tracker_->first_error_text);
    }
    /// @brief Waits until everything published is acknowledged.
    void flush() {
        producer_.wait(*tracker_);
        poll();
    }

private:
    static kafka::settings with_linger(kafka::settings s) {
        s.try_emplace("linger.ms", "0");  // statuses are few and their latency is a handoff's
        return s;
    }
    void send(const std::string& key, const byte_buffer& value) {
        producer_.produce(rkt_.get(), 0, as_bytes(key), bytes_view(value), *tracker_);
        producer_.poll();
    }

    std::string topic_;
    kafka::producer producer_;
    kafka::delivery_tracker* tracker_;
    kafka::unique_topic rkt_;
};

}  // namespace strata::runtime
