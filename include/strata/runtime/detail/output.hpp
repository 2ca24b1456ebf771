#pragma once
/// @file
/// @brief `output`: the records an instance's processors emit, sent through
/// the instance's producer (so under exactly-once they belong to the open
/// transaction), partitioned by key exactly as Kafka's Java producer does.
/// A processor reaches it through `processor_context::emit`.

#include <strata/core/bytes.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Sends output records and dead letters for one instance. Used on
/// the processing thread only.
class output {
public:
    explicit output(std::shared_ptr<kafka::producer> p) : producer_(std::move(p)), tracker_(&producer_->new_tracker()) {}

    /// @brief Queues one record; `value` nullopt is a tombstone. With
    /// RD_KAFKA_PARTITION_UA (`partition_by_key`, processor_context.hpp),
    /// the partition is murmur2 of the key, as Kafka's Java producer (and so
    /// Kafka Streams) computes it.
    void send(std::string_view topic, bytes_view key, std::optional<bytes_view> value,
              std::int32_t partition = RD_KAFKA_PARTITION_UA) {
        producer_->produce(handle(topic), partition, key, value, *tracker_);
        ++sent_;
    }

    /// @brief Queues a record with headers.
    void send(std::string_view topic, bytes_view key, std::optional<bytes_view> value, std::int32_t partition,
              const std::vector<std::pair<std::string, std::string>>& headers) {
        producer_->produce(handle(topic), partition, key, value, *tracker_, headers);
        ++sent_;
    }

    /// @brief Waits until the broker acknowledged every record sent.
    /// @throws kafka::error a record was not acknowledged (after librdkafka's
    ///         retries, within `message.timeout.ms`)
    void flush() {
        producer_->wait(*tracker_);
        if (tracker_->has_failed())
            throw kafka::error(std::to_string(tracker_->failed) + " output record(s) were not acknowledged",
                               tracker_->first_error, tracker_->first_error_text);
    }

    /// @brief Counts from here, forgetting records that failed: their work
    /// was given up (its tasks were rebuilt, to process it again). Call it
    /// only once nothing sent before is still on its way.
    void forget_failures() { tracker_ = &producer_->new_tracker(); }

    /// @brief Sends through another producer from now on (the instance's
    /// was fenced and made anew). What the old one had queued is its own.
    void rebind(std::shared_ptr<kafka::producer> p) {
        topics_.clear();  // handles of the old producer, destroyed while it lives
        producer_ = std::move(p);
        tracker_ = &producer_->new_tracker();
    }

    [[nodiscard]] std::uint64_t sent() const noexcept { return sent_; }
    [[nodiscard]] const kafka::delivery_tracker& delivered() const noexcept { return *tracker_; }

private:
    rd_kafka_topic_t* handle(std::string_view topic) {
        auto it = topics_.find(topic);
        if (it != topics_.end()) return it->second.get();
        // A copy of the producer's topic defaults, not a fresh one: a fresh
        // one drops message.timeout.ms, which the runtime bounds (under
        // at-least-once, below the lease's margin; see detail/lease.hpp).
        kafka::unique_topic_conf tc(rd_kafka_default_topic_conf_dup(producer_->get()));
        std::array<char, 256> err{};
        // Java's partitioner for keyed records; a null key cannot occur here.
        if (rd_kafka_topic_conf_set(tc.get(), "partitioner", "murmur2_random", err.data(), err.size()) !=
            RD_KAFKA_CONF_OK)
            throw kafka::error("configure the partitioner of " + std::string(topic), RD_KAFKA_RESP_ERR__INVALID_ARG,
                               err.data());
        // The topic handle owns the configuration once it exists.
        kafka::unique_topic t(rd_kafka_topic_new(producer_->get(), std::string(topic).c_str(), tc.get()));
        if (!t) throw kafka::error("open output topic " + std::string(topic), rd_kafka_last_error());
        (void)tc.release();
        return topics_.emplace(std::string(topic), std::move(t)).first->second.get();
    }

    std::shared_ptr<kafka::producer> producer_;
    kafka::delivery_tracker* tracker_;
    std::map<std::string, kafka::unique_topic, std::less<>> topics_;
    std::uint64_t sent_ = 0;
};

}  // namespace strata::runtime::detail
