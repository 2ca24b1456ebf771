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
#include <strata/runtime/detail/committer.hpp>  // output_failures

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Sends output records and dead letters for one instance. Used on
/// the processing thread only. Each task's records are counted apart, so
/// that a record that failed is known to be of its task: under
/// at-least-once only that task processes its inputs again (committer.hpp).
class output {
public:
    /// @brief The task of a record sent on the instance's behalf.
    static constexpr std::int32_t no_task = -1;

    explicit output(std::shared_ptr<kafka::producer> p) : producer_(std::move(p)), tracker_(&producer_->new_tracker()) {}

    /// @brief Queues one record of `task`; `value` nullopt is a tombstone.
    /// With RD_KAFKA_PARTITION_UA (`partition_by_key`,
    /// processor_context.hpp), the partition is murmur2 of the key, as
    /// Kafka's Java producer (and so Kafka Streams) computes it. Without a
    /// `timestamp` (ms) the record gets the time it is produced.
    void send(std::string_view topic, bytes_view key, std::optional<bytes_view> value,
              std::int32_t partition = RD_KAFKA_PARTITION_UA, std::int32_t task = no_task,
              std::int64_t timestamp = no_timestamp) {
        producer_->produce(handle(topic), partition, key, value, tracker_of(task), timestamp);
        ++sent_;
    }

    /// @brief Queues a record of `task` with headers.
    void send(std::string_view topic, bytes_view key, std::optional<bytes_view> value, std::int32_t partition,
              const std::vector<std::pair<std::string, std::string>>& headers, std::int32_t task = no_task) {
        producer_->produce(handle(topic), partition, key, value, tracker_of(task), headers);
        ++sent_;
    }

    /// @brief Waits until the broker acknowledged or failed every record
    /// sent. @returns the tasks some of whose records failed
    /// @throws kafka::error a record sent for no task failed
    output_failures flush() {
        producer_->wait(*tracker_);
        output_failures out;
        for (auto& [task, t] : tasks_) {
            producer_->wait(*t);
            if (!t->has_failed()) continue;
            if (out.tasks.empty())
                out.message = kafka::error(std::to_string(t->failed) + " output record(s) of task " +
                                               std::to_string(task) + " were not acknowledged",
                                           t->first_error, t->first_error_text)
                                  .what();
            out.tasks.push_back(task);
        }
        if (tracker_->has_failed())
            throw kafka::error(std::to_string(tracker_->failed) + " output record(s) were not acknowledged",
                               tracker_->first_error, tracker_->first_error_text);
        return out;
    }

    /// @brief Counts from here, forgetting records that failed: their work
    /// was given up (its tasks were rebuilt, to process it again). Call it
    /// only once nothing sent before is still on its way.
    void forget_failures() {
        // Nothing is on its way: each count starts again in place (a
        // tracker made anew after each failure would pile up, one per task,
        // in the producer that keeps them).
        const auto forget = [](kafka::delivery_tracker& t) {
            t.failed = 0;
            t.first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
            t.first_error_text.clear();
        };
        forget(*tracker_);
        for (auto& [task, t] : tasks_) forget(*t);
    }

    /// @brief Sends through another producer from now on (the instance's
    /// was fenced and made anew). What the old one had queued is its own.
    void rebind(std::shared_ptr<kafka::producer> p) {
        topics_.clear();  // handles of the old producer, destroyed while it lives
        tasks_.clear();
        last_task_ = no_task;
        producer_ = std::move(p);
        tracker_ = &producer_->new_tracker();
    }

    [[nodiscard]] std::uint64_t sent() const noexcept { return sent_; }

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

    kafka::delivery_tracker& tracker_of(std::int32_t task) {
        if (task == no_task) return *tracker_;
        if (task == last_task_) return *last_tracker_;  // a task's records come in runs
        kafka::delivery_tracker*& t = tasks_[task];
        if (t == nullptr) t = &producer_->new_tracker();
        last_task_ = task;
        last_tracker_ = t;
        return *t;
    }

    std::shared_ptr<kafka::producer> producer_;
    kafka::delivery_tracker* tracker_;                            // records of no task
    std::unordered_map<std::int32_t, kafka::delivery_tracker*> tasks_;  // each task's, made on its first record
    std::int32_t last_task_ = no_task;                    // the task tracker_of found last
    kafka::delivery_tracker* last_tracker_ = nullptr;
    std::map<std::string, kafka::unique_topic, std::less<>> topics_;
    std::uint64_t sent_ = 0;
};

}  // namespace strata::runtime::detail
