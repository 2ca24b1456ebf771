#pragma once
/// @file
/// @brief Exactly-once processing with Kafka transactions: one transactional
/// producer writes a task's changelog records and its output records, and a
/// commit puts those together with the input consumer's offsets into one
/// Kafka transaction. After a crash, read_committed readers (restore
/// included) see either all of a commit or none of it.
///
/// The loop of a task:
///
///     exactly_once eos({bootstrap, "app-task-0"});   // fences a predecessor
///     kafka_changelog log(log_options, eos.shared_producer());
///     auto store = my_store | logged(log) | cached();
///     store.restore();                                 // committed state only
///     eos.begin();
///     for each input record: store.apply(...); eos.send(output...);
///         every N inputs: store.flush(); eos.commit(consumer); eos.begin();
///
/// If commit() throws, the transaction was aborted: the store holds updates
/// that are not in the log. Rebuild the task (new objects, restore, resume
/// from the committed input offsets); never continue with that store.

#include <strata/core/bytes.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief A transactional producer and the commits that make a task's
/// processing exactly-once.
class exactly_once {
public:
    /// @brief Creates the producer and initializes transactions: the broker
    /// fences every older producer with the same transactional id and aborts
    /// the transaction it left open, so its records never become visible.
    /// Do this before restoring: until then a read_committed restore would
    /// wait for that open transaction.
    /// @param o must have a transactional_id, stable for the task
    /// @param timeout bound on each transactional request
    /// @throws changelog_error the cluster cannot be reached, or fencing failed
    explicit exactly_once(producer_options o, std::chrono::milliseconds timeout = std::chrono::seconds(60))
        : timeout_(timeout) {
        if (!o.transactional_id || o.transactional_id->empty())
            throw usage_error("strata::kafka::exactly_once: a transactional_id is required");
        producer_ = std::make_shared<producer>(std::move(o));
        output_tracker_ = &producer_->new_tracker();
        check(rd_kafka_init_transactions(producer_->get(), timeout_ms(timeout_)), "initialize transactions");
    }

    /// @brief The producer to give every `kafka_changelog` of the task.
    [[nodiscard]] std::shared_ptr<producer> shared_producer() const noexcept { return producer_; }

    /// @brief Opens a transaction unless one is open. Changelog appends and
    /// sends belong to it until commit() or abort().
    void begin() {
        if (open_) return;
        check(rd_kafka_begin_transaction(producer_->get()), "begin a transaction");
        open_ = true;
    }

    [[nodiscard]] bool in_transaction() const noexcept { return open_; }

    /// @brief Writes an output record in the open transaction; an empty
    /// `value` is a tombstone.
    void send(const std::string& topic, std::int32_t partition, bytes_view key, std::optional<bytes_view> value) {
        if (!open_) throw usage_error("strata::kafka::exactly_once::send: no open transaction; call begin()");
        auto it = topics_.find(topic);
        if (it == topics_.end())
            it = topics_.emplace(topic, unique_topic(rd_kafka_topic_new(producer_->get(), topic.c_str(), nullptr)))
                     .first;
        producer_->produce(it->second.get(), partition, key, value, *output_tracker_);
    }

    /// @brief Commits the open transaction together with the consumer's
    /// positions (the next input offset of every assigned partition) for its
    /// group: inputs, changelog records and outputs become visible together.
    /// Flush the stores first, so that their cached records are in it.
    /// @param consumer a consumer with a group.id whose assignment is the task's input
    /// @throws changelog_error the commit failed; the transaction was aborted
    ///         (or the producer is fenced or failed fatally, and must be rebuilt)
    void commit(rd_kafka_t* consumer) {
        rd_kafka_topic_partition_list_t* assigned = nullptr;
        check(rd_kafka_assignment(consumer, &assigned), "read the consumer's assignment");
        const unique_partition_list offsets(assigned);
        check(rd_kafka_position(consumer, offsets.get()), "read the consumer's positions");
        // A partition not consumed yet has no position: commit nothing for it.
        unique_partition_list positioned(rd_kafka_topic_partition_list_new(offsets->cnt));
        for (int i = 0; i < offsets->cnt; ++i) {
            const auto& p = offsets->elems[i];
            if (p.offset >= 0) rd_kafka_topic_partition_list_add(positioned.get(), p.topic, p.partition)->offset = p.offset;
        }
        const unique_group_metadata group(rd_kafka_consumer_group_metadata(consumer));
        if (!group) throw usage_error("strata::kafka::exactly_once::commit: the consumer has no group.id");
        commit(positioned.get(), group.get());
    }

    /// @brief Commits with explicit input offsets (the next offset to read,
    /// per partition) for a group.
    void commit(const rd_kafka_topic_partition_list_t* offsets, const rd_kafka_consumer_group_metadata_t* group) {
        if (!open_) throw usage_error("strata::kafka::exactly_once::commit: no open transaction");
        if (offsets->cnt > 0)
            run_or_abort(rd_kafka_send_offsets_to_transaction(producer_->get(), offsets, group, timeout_ms(timeout_)),
                         "send the input offsets to the transaction");
        run_or_abort(rd_kafka_commit_transaction(producer_->get(), timeout_ms(timeout_)), "commit the transaction");
        open_ = false;
        ++commits_;
    }

    /// @brief Aborts the open transaction: nothing written in it becomes visible.
    void abort() {
        if (!open_) return;
        open_ = false;
        check(rd_kafka_abort_transaction(producer_->get(), timeout_ms(timeout_)), "abort the transaction");
    }

    /// @brief Transactions committed by this object.
    [[nodiscard]] std::uint64_t commits() const noexcept { return commits_; }
    /// @brief Output records sent and acknowledged so far.
    [[nodiscard]] const delivery_tracker& outputs() const noexcept { return *output_tracker_; }

private:
    void run_or_abort(rd_kafka_error_t* err, const std::string& what) {
        if (err == nullptr) return;
        const unique_error owned(err);
        const kafka_error e(what, rd_kafka_error_code(err),
                            std::string(rd_kafka_error_string(err)) +
                                (rd_kafka_error_txn_requires_abort(err) ? " (transaction aborted)" : ""));
        if (rd_kafka_error_txn_requires_abort(err)) {
            open_ = false;
            const unique_error ignored(rd_kafka_abort_transaction(producer_->get(), timeout_ms(timeout_)));
        } else {
            open_ = false;  // fatal, fenced or timed out: the producer must be rebuilt
        }
        throw e;
    }

    std::chrono::milliseconds timeout_;
    std::shared_ptr<producer> producer_;
    delivery_tracker* output_tracker_ = nullptr;
    std::map<std::string, unique_topic, std::less<>> topics_;
    bool open_ = false;
    std::uint64_t commits_ = 0;
};

}  // namespace strata::kafka
