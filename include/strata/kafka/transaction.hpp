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
///     kafka::changelog log(log_options, eos.shared_producer());
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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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
        initialize(clock::now() + timeout_);
    }

    /// @brief The producer to give every `kafka::changelog` of the task.
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
    /// A call that fails with an error librdkafka calls retriable (a
    /// timeout, the transaction coordinator moving) is made again until
    /// `timeout` has passed; then, or at once when librdkafka says the
    /// transaction must be aborted, it is aborted. Either way the producer
    /// can begin the next transaction, unless it failed for good.
    /// @throws kafka::error the transaction was aborted, or could not be
    ///         (fatal, fenced, or the abort itself did not end in time:
    ///         the producer must be rebuilt)
    void commit(const rd_kafka_topic_partition_list_t* offsets, const rd_kafka_consumer_group_metadata_t* group) {
        if (!open_) throw usage_error("strata::kafka::exactly_once::commit: no open transaction");
        const auto deadline = clock::now() + timeout_;
        if (offsets->cnt > 0)
            finish_or_abort(
                [&](int ms) { return rd_kafka_send_offsets_to_transaction(producer_->get(), offsets, group, ms); },
                deadline, "send the input offsets to the transaction");
        finish_or_abort([&](int ms) { return rd_kafka_commit_transaction(producer_->get(), ms); }, deadline,
                        "commit the transaction");
        open_ = false;
        ++commits_;
    }

    /// @brief Aborts the open transaction: nothing written in it becomes
    /// visible. Asked again while librdkafka says it may be, for up to the timeout.
    /// @throws kafka::error the abort failed: the producer must be rebuilt
    void abort() {
        if (!open_) return;
        abort_within(clock::now() + timeout_);
    }

    /// @brief Whether the producer cannot go on: it failed for good, was
    /// fenced, or a transaction could be neither completed nor aborted
    /// within the timeout (librdkafka may still be completing it). A new
    /// producer with the same transactional id ends that transaction (its
    /// initialization waits for it, or aborts it).
    [[nodiscard]] bool needs_new_producer() const noexcept { return broken_; }

    /// @brief Transactions committed by this object.
    [[nodiscard]] std::uint64_t commits() const noexcept { return commits_; }
    /// @brief Output records sent and acknowledged so far.
    [[nodiscard]] const delivery_tracker& outputs() const noexcept { return *output_tracker_; }

private:
    using clock = std::chrono::steady_clock;

    /// Each call gets a quarter of the timeout at most (and what is left):
    /// one that times out is made again, and librdkafka resumes it.
    int ms_left(clock::time_point deadline) const {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        return static_cast<int>(std::clamp<std::int64_t>(left.count(), 1, std::max<std::int64_t>(timeout_.count() / 4, 1)));
    }

    /// Makes `call` (given the milliseconds left) until it succeeds, or
    /// fails with an error that librdkafka does not call retriable, that
    /// requires an abort, or after `deadline`.
    /// @returns that error, or null on success
    template <class Call>
    unique_error retried(Call call, clock::time_point deadline) const {
        for (;;) {
            unique_error err(call(ms_left(deadline)));
            if (!err || rd_kafka_error_is_retriable(err.get()) == 0 || rd_kafka_error_is_fatal(err.get()) != 0 ||
                rd_kafka_error_txn_requires_abort(err.get()) != 0 || clock::now() >= deadline)
                return err;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    /// Initializes transactions, asking again while the transaction
    /// coordinator is not there yet (NOT_COORDINATOR, loading, not
    /// available: a broker just started or under load) or librdkafka calls
    /// the error retriable, until `deadline`. Before, one NOT_COORDINATOR
    /// at an exactly-once instance's start stopped it.
    void initialize(clock::time_point deadline) {
        for (;;) {
            unique_error err(rd_kafka_init_transactions(producer_->get(), ms_left(deadline)));
            if (!err) return;
            const rd_kafka_resp_err_t code = rd_kafka_error_code(err.get());
            const bool again = rd_kafka_error_is_retriable(err.get()) != 0 || group_coordinator_unavailable(code);
            if (!again || rd_kafka_error_is_fatal(err.get()) != 0 || clock::now() >= deadline)
                throw error("initialize transactions", code, rd_kafka_error_string(err.get()));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    /// Makes `call` until it succeeds (see retried()), or aborts the
    /// transaction and throws (see commit()). Before, a timed out commit
    /// left librdkafka's transaction open while this object took it for
    /// ended, and the next begin failed (_STATE: "Operation not valid in
    /// state InTransaction"): an instance stopped so in the campaign after
    /// the transaction coordinator's broker died.
    template <class Call>
    void finish_or_abort(Call call, clock::time_point deadline, const std::string& what) {
        const unique_error err = retried(call, deadline);
        if (!err) return;
        const rd_kafka_resp_err_t code = rd_kafka_error_code(err.get());
        const std::string message = rd_kafka_error_string(err.get());
        if (rd_kafka_error_is_fatal(err.get()) != 0) {
            open_ = false;
            broken_ = true;  // fatal or fenced
            throw error(what, code, message);
        }
        try {
            abort_within(clock::now() + timeout_);
        } catch (const error& a) {
            throw error(what, code, message + "; then " + a.what());
        }
        throw error(what, code, message + " (transaction aborted)");
    }

    void abort_within(clock::time_point deadline) {
        const unique_error err =
            retried([&](int ms) { return rd_kafka_abort_transaction(producer_->get(), ms); }, deadline);
        open_ = false;
        if (!err) return;
        broken_ = true;  // a commit may still be under way (_STATE), or the producer failed
        throw error("abort the transaction", rd_kafka_error_code(err.get()), rd_kafka_error_string(err.get()));
    }

    std::chrono::milliseconds timeout_;
    std::shared_ptr<producer> producer_;
    delivery_tracker* output_tracker_ = nullptr;
    std::map<std::string, unique_topic, std::less<>> topics_;
    bool open_ = false;
    bool broken_ = false;
    std::uint64_t commits_ = 0;
};

}  // namespace strata::kafka
