#pragma once
/// @file
/// @brief `strata::kafka::producer`: one librdkafka producer that several
/// writers share (the changelogs of a task and its output, all in one
/// transaction), each counting its own acknowledgements through a
/// `delivery_tracker`, so that every writer learns exactly which of *its*
/// records the broker acknowledged and which it refused.

#include <strata/core/bytes.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief What the broker said about one writer's records.
struct delivery_tracker {
    std::uint64_t in_flight = 0;  ///< produced, no delivery report yet
    std::uint64_t acked = 0;      ///< acknowledged records
    std::uint64_t failed = 0;     ///< records the producer gave up on
    std::int64_t last_offset = -1;  ///< highest acknowledged offset
    rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::string first_error_text;

    [[nodiscard]] bool has_failed() const noexcept { return failed != 0; }
};

/// @brief Options of a producer.
struct producer_options {
    std::string bootstrap_servers{};
    /// Set for exactly-once: the producer then writes only inside
    /// transactions (see transaction.hpp). Keep it stable across restarts of
    /// the same task, so a restarted task fences its predecessor.
    std::optional<std::string> transactional_id{};
    /// librdkafka settings passed through (`linger.ms`, `batch.size`,
    /// `compression.type`, `message.timeout.ms`, ...). `enable.idempotence`
    /// is always on: a retried batch must never be written twice.
    settings extra{};
    /// Asked before each record is enqueued (on the producing thread): false
    /// refuses the record with a kafka::error (RD_KAFKA_RESP_ERR__STATE) that
    /// says `refusal`. The runtime's at-least-once lease sits here, so that
    /// a process paused in the middle of its work enqueues nothing when it
    /// wakes up after its lease ran out.
    std::function<bool()> may_write{};
    std::string refusal{"the producer's owner may not write now"};
};

/// @brief An idempotent (optionally transactional) librdkafka producer.
/// Not thread-safe: produce, wait and the transaction calls run on one thread,
/// which is also where delivery reports are served.
class producer {
public:
    explicit producer(producer_options o)
        : bootstrap_(o.bootstrap_servers), may_write_(std::move(o.may_write)), refusal_(std::move(o.refusal)),
          client_(make(o)) {
        transactional_ = o.transactional_id.has_value();
    }

    producer(const producer&) = delete;
    producer& operator=(const producer&) = delete;

    ~producer() {
        // Unflushed records are not durable by contract; drop them rather
        // than block the destructor on a broker that may be gone.
        (void)rd_kafka_purge(client_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(client_.get(), 0);
    }

    /// @brief A tracker for one writer. It lives as long as the producer, so
    /// a delivery report that arrives after its writer is gone is harmless.
    /// Safe to call from any thread (tasks build their changelogs off the
    /// thread that produces).
    [[nodiscard]] delivery_tracker& new_tracker() {
        const std::lock_guard lock(trackers_mutex_);
        return trackers_.emplace_back();
    }

    /// @brief Enqueues a copy of one record for `partition` of `topic`;
    /// `value` std::nullopt is a tombstone (a null value), while an empty
    /// value stays an empty, non-null value. A record with a `timestamp`
    /// (ms, >= 0) carries it as its Kafka timestamp; without one
    /// (no_timestamp), librdkafka gives it the time it is produced. Waits
    /// while librdkafka's queue is full.
    /// @throws kafka::error the producer refused the record (fatal error, unknown partition)
    void produce(rd_kafka_topic_t* topic, std::int32_t partition, bytes_view key, std::optional<bytes_view> value,
                 delivery_tracker& tracker, std::int64_t timestamp = no_timestamp) {
        if (timestamp != no_timestamp) {
            produce_with(topic, partition, key, value, tracker, nullptr, timestamp);
            return;
        }
        static constexpr char empty = 0;  // a non-null pointer for an empty key or value
        const void* k = key.empty() ? static_cast<const void*>(&empty) : key.data();
        void* v = nullptr;
        std::size_t v_len = 0;
        if (value) {
            v = const_cast<std::byte*>(value->empty() ? reinterpret_cast<const std::byte*>(&empty) : value->data());
            v_len = value->size();
        }
        for (;;) {
            check_permit(topic, partition);
            if (rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, v, v_len, k, key.size(), &tracker) == 0) {
                ++tracker.in_flight;
                return;
            }
            const rd_kafka_resp_err_t err = rd_kafka_last_error();
            if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                throw error("produce to " + std::string(rd_kafka_topic_name(topic)) + "[" +
                                std::to_string(partition) + "]",
                            err, refusal_text(err, key.size(), v_len));
            rd_kafka_poll(client_.get(), 10);  // serve delivery reports to make room
        }
    }

    /// @brief Like `produce`, with record headers (name, value) attached:
    /// the coordinates and error of a record sent to a dead-letter topic, say.
    void produce(rd_kafka_topic_t* topic, std::int32_t partition, bytes_view key, std::optional<bytes_view> value,
                 delivery_tracker& tracker, const std::vector<std::pair<std::string, std::string>>& headers) {
        produce_with(topic, partition, key, value, tracker, &headers, no_timestamp);
    }

    /// @brief Blocks until every record of `tracker` has its delivery report
    /// (acknowledged or failed). Bounded by `message.timeout.ms`: librdkafka
    /// fails a record it could not deliver in that time.
    void wait(const delivery_tracker& tracker) {
        while (tracker.in_flight != 0) (void)rd_kafka_flush(client_.get(), 100);
    }

    /// @brief Serves pending delivery reports without blocking.
    void poll() { rd_kafka_poll(client_.get(), 0); }

    [[nodiscard]] rd_kafka_t* get() const noexcept { return client_.get(); }
    [[nodiscard]] const std::string& bootstrap_servers() const noexcept { return bootstrap_; }
    [[nodiscard]] bool transactional() const noexcept { return transactional_; }

    /// @brief librdkafka's fatal error, if one was raised (the producer is then unusable).
    [[nodiscard]] std::optional<std::string> fatal_error() const {
        std::array<char, 512> buf{};
        const rd_kafka_resp_err_t err = rd_kafka_fatal_error(client_.get(), buf.data(), buf.size());
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
        return std::string(rd_kafka_err2name(err)) + ": " + buf.data();
    }

private:
    /// One record through rd_kafka_producev: with headers (if any) and a
    /// timestamp (unless no_timestamp).
    void produce_with(rd_kafka_topic_t* topic, std::int32_t partition, bytes_view key,
                      std::optional<bytes_view> value, delivery_tracker& tracker,
                      const std::vector<std::pair<std::string, std::string>>* headers, std::int64_t timestamp) {
        for (;;) {
            check_permit(topic, partition);
            unique_headers owned(headers != nullptr ? rd_kafka_headers_new(headers->size()) : nullptr);
            rd_kafka_headers_t* h = owned.get();  // the macro below wants a plain variable
            if (headers != nullptr)
                for (const auto& [name, hv] : *headers)
                    (void)rd_kafka_header_add(h, name.data(), static_cast<ssize_t>(name.size()), hv.data(),
                                              static_cast<ssize_t>(hv.size()));
            // librdkafka's macros cast their arguments unparenthesized: plain variables only.
            static constexpr char empty = 0;  // an empty value is not a null one
            void* v = nullptr;
            if (value)
                v = value->empty() ? static_cast<void*>(const_cast<char*>(&empty))
                                   : static_cast<void*>(const_cast<std::byte*>(value->data()));
            const std::size_t v_len = value ? value->size() : 0;
            const void* k = key.empty() ? static_cast<const void*>(&empty) : key.data();
            const std::size_t k_len = key.size();
            const std::int64_t ts = timestamp == no_timestamp ? 0 : timestamp;  // 0: librdkafka's "now"
            // librdkafka's type checks are GNU statement expressions, which
            // clang's -Wpedantic reports in every user's build: not here.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wgnu-statement-expression-from-macro-expansion"
#endif
            const rd_kafka_resp_err_t err = rd_kafka_producev(
                client_.get(), RD_KAFKA_V_RKT(topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(k, k_len),
                RD_KAFKA_V_VALUE(v, v_len), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_TIMESTAMP(ts),
                RD_KAFKA_V_OPAQUE(&tracker), RD_KAFKA_V_END);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                (void)owned.release();  // librdkafka owns the headers now
                ++tracker.in_flight;
                return;
            }
            if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                throw error("produce to " + std::string(rd_kafka_topic_name(topic)) + "[" +
                                std::to_string(partition) + "]",
                            err, refusal_text(err, k_len, v_len));
            rd_kafka_poll(client_.get(), 10);
        }
    }

    void check_permit(rd_kafka_topic_t* topic, std::int32_t partition) const {
        if (may_write_ && !may_write_())
            throw error("produce to " + std::string(rd_kafka_topic_name(topic)) + "[" + std::to_string(partition) +
                            "]",
                        RD_KAFKA_RESP_ERR__STATE, refusal_);
    }

    /// Why the producer refused a record: the fatal error behind a fatal
    /// refusal, or the record's size against the limit it broke.
    std::string refusal_text(rd_kafka_resp_err_t err, std::size_t key_bytes, std::size_t value_bytes) const {
        if (err == RD_KAFKA_RESP_ERR__FATAL) return fatal_error().value_or("");
        if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
            std::array<char, 32> limit{};
            std::size_t size = limit.size();
            if (rd_kafka_conf_get(rd_kafka_conf(client_.get()), "message.max.bytes", limit.data(), &size) !=
                RD_KAFKA_CONF_OK)
                limit[0] = '\0';
            return "a record of " + std::to_string(key_bytes + value_bytes) + " bytes (key " +
                   std::to_string(key_bytes) + ", value " + std::to_string(value_bytes) +
                   ") is over this producer's message.max.bytes (" + (limit[0] ? limit.data() : "unknown") +
                   "); the topic's max.message.bytes must allow it too";
        }
        return {};
    }

    static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
        auto* t = static_cast<delivery_tracker*>(m->_private);
        if (t == nullptr) return;
        --t->in_flight;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (t->failed++ == 0) {
                t->first_error = m->err;
                t->first_error_text = rd_kafka_message_errstr(m);
            }
            return;
        }
        ++t->acked;
        t->last_offset = std::max<std::int64_t>(t->last_offset, m->offset);
    }

    static client make(const producer_options& o) {
        conf c;
        // Defaults first; the caller's settings may override any of them.
        c.set("bootstrap.servers", o.bootstrap_servers);
        c.set("allow.auto.create.topics", "false");
        c.set("linger.ms", "5");
        c.set(o.extra);
        // Not overridable: without idempotence a retry after a lost
        // acknowledgement duplicates or reorders records.
        c.set("enable.idempotence", "true");
        c.set("acks", "all");
        if (o.transactional_id) c.set("transactional.id", *o.transactional_id);
        rd_kafka_conf_set_dr_msg_cb(c.get(), &producer::on_delivery);
        return client(RD_KAFKA_PRODUCER, std::move(c));
    }

    std::string bootstrap_;
    std::function<bool()> may_write_;
    std::string refusal_;
    std::mutex trackers_mutex_;
    std::deque<delivery_tracker> trackers_;  // declared before client_: outlives it
    client client_;
    bool transactional_ = false;
};

}  // namespace strata::kafka
