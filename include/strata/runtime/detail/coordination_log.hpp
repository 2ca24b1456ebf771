#pragma once
/// @file
/// @brief The coordination topic through librdkafka: a reader that feeds
/// every record to a coordination_state, and a writer of statuses, claims,
/// decisions and tombstones.

#include <strata/core/bytes.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_state.hpp>
#include <strata/serde/all.hpp>
#include <strata/serde/encode.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Tails the coordination topic. Used on one thread; never blocks.
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
                state_.reached_end();
                continue;
            }
            if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                if (m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                    throw kafka::error("read " + topic_, m->err, rd_kafka_message_errstr(m.get()));
                continue;  // transient: librdkafka retries
            }
            const std::string_view key(static_cast<const char*>(m->key), m->key_len);
            std::optional<bytes_view> value;
            if (m->payload != nullptr) value = bytes_view(static_cast<const std::byte*>(m->payload), m->len);
            changed = state_.take(key, value, m->offset, time_of(*m)) || changed;
        }
        return changed;
    }

    /// @brief Whether the reader has reached the end of the topic once.
    [[nodiscard]] bool caught_up() const noexcept { return caught_up_; }
    [[nodiscard]] const coordination_state& state() const noexcept { return state_; }
    void watch_for_duplicates(duplicate_watch w) { state_.watch_for_duplicates(std::move(w)); }
    void watch_own_heartbeats(std::string instance) { state_.watch_own_heartbeats(std::move(instance)); }

private:
    /// The broker's append time, when the topic keeps it (topics.hpp creates
    /// it so); a topic made otherwise keeps the producers' times, which say
    /// nothing the readers can trust, and liveness goes by their clocks alone.
    static record_time time_of(const rd_kafka_message_t& m) {
        rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        const std::int64_t ts = rd_kafka_message_timestamp(&m, &type);
        return {type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME ? ts : -1, std::chrono::steady_clock::now()};
    }

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
        return kafka::client(RD_KAFKA_CONSUMER, std::move(c));
    }

    std::string topic_;
    kafka::client consumer_;
    coordination_state state_;
    bool caught_up_ = false;
};

/// @brief Publishes to the coordination topic (an idempotent producer of
/// its own, outside any transaction: a status must be seen at once).
class coordination_writer {
public:
    coordination_writer(const std::string& bootstrap, std::string topic, const kafka::settings& extra)
        : topic_(std::move(topic)), producer_(kafka::producer_options{bootstrap, std::nullopt, with_linger(extra)}),
          tracker_(&producer_.new_tracker()), heartbeats_(&producer_.new_tracker()),
          rkt_(rd_kafka_topic_new(producer_.get(), topic_.c_str(), nullptr)) {}

    void publish(const instance_status& s) { send(status_key(s.instance), encode(s)); }
    void publish(const assignment& a) { send(std::string(assignment_key), encode(a)); }
    void publish(const leader_claim& c) { send(std::string(leader_key), encode(c)); }
    /// @brief A heartbeat. Its delivery reports are counted apart: one that
    /// fails needs nothing published again (the next one is due soon).
    void publish(const heartbeat& h) {
        const std::string key = heartbeat_key(h.instance);
        const byte_buffer value = encode(h);
        producer_.produce(rkt_.get(), 0, as_bytes(key), bytes_view(value), *heartbeats_);
        producer_.poll();
    }
    /// @brief Removes what an instance long gone left, its status and its
    /// heartbeat (the leader does, long after it left).
    void remove_instance(const std::string& instance) {
        for (const std::string& key : {status_key(instance), heartbeat_key(instance)})
            producer_.produce(rkt_.get(), 0, as_bytes(key), std::nullopt, *tracker_);
    }

    /// @brief Serves delivery reports.
    /// @returns how many publications failed since the last call (after
    ///          librdkafka's retries, within `message.timeout.ms`). Nothing
    ///          published here needs to land in particular: the caller
    ///          publishes its status, claim or decision again, so an outage of
    ///          the coordination partition delays decisions and nothing else.
    std::uint64_t poll() {
        producer_.poll();
        const std::uint64_t failed = tracker_->failed - reported_;
        reported_ = tracker_->failed;
        return failed;
    }
    /// @brief Publications the broker acknowledged so far.
    [[nodiscard]] std::uint64_t acknowledged() const noexcept { return tracker_->acked; }
    /// @brief Waits until everything published is acknowledged.
    /// @throws kafka::error something published did not land
    void flush() {
        producer_.wait(*tracker_);
        if (poll() > 0)
            throw kafka::error("publish to " + topic_, tracker_->first_error, tracker_->first_error_text);
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
    kafka::delivery_tracker* heartbeats_;
    kafka::unique_topic rkt_;
    std::uint64_t reported_ = 0;  // failures poll() reported already
};

}  // namespace strata::runtime::detail
