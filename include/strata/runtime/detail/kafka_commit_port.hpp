#pragma once
/// @file
/// @brief The committer's Kafka calls (see committer.hpp): offsets to the
/// group through the group consumer, or into the transaction of the
/// instance's producer, with the consumer's group metadata (its generation
/// and member id, so the group fences a commit of an expelled member).

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/runtime/detail/committer.hpp>
#include <strata/runtime/detail/instance_producer.hpp>
#include <strata/runtime/output.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

class kafka_commit_port final : public commit_port {
public:
    /// The producer is the instance's: it changes after it was fenced.
    kafka_commit_port(rd_kafka_t* consumer, output& out, instance_producer& producer)
        : consumer_(consumer), out_(&out), producer_(&producer) {}

    void flush_output() override { out_->flush(); }

    group_answer commit_to_group(const std::vector<offset_to_commit>& offsets) override {
        const kafka::unique_partition_list l = to_list(offsets);
        const rd_kafka_resp_err_t err = rd_kafka_commit(consumer_, l.get(), 0);
        if (err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
            err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
            return group_answer::rebalancing;
        kafka::check(err, "commit the input offsets");
        return group_answer::accepted;
    }

    transaction_end commit_transaction(const std::vector<offset_to_commit>& offsets) override {
        const kafka::unique_partition_list l = to_list(offsets);
        const kafka::unique_group_metadata group(rd_kafka_consumer_group_metadata(consumer_));
        try {
            producer_->transaction().commit(l.get(), group.get());
        } catch (const kafka::kafka_error& e) {
            if (producer_->get()->fatal_error() || e.code() == RD_KAFKA_RESP_ERR__FENCED ||
                e.code() == RD_KAFKA_RESP_ERR_PRODUCER_FENCED || e.code() == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
                throw;  // a newer instance owns the work
            return transaction_end::aborted;
        }
        return transaction_end::committed;
    }

    void begin_transaction() override { producer_->transaction().begin(); }

    bool abort_transaction() override {
        if (producer_->get()->fatal_error()) return false;
        try {
            producer_->transaction().abort();
        } catch (const kafka::kafka_error&) {
            return false;  // fenced, or the producer failed: the caller's error stands
        }
        return true;
    }

private:
    static kafka::unique_partition_list to_list(const std::vector<offset_to_commit>& offsets) {
        kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
        for (const offset_to_commit& o : offsets) {
            rd_kafka_topic_partition_t* e = rd_kafka_topic_partition_list_add(l.get(), o.topic.c_str(), o.partition);
            e->offset = o.offset;
            if (o.metadata.empty()) continue;
            e->metadata = std::malloc(o.metadata.size());  // the list frees it
            if (e->metadata == nullptr) continue;
            std::memcpy(e->metadata, o.metadata.data(), o.metadata.size());
            e->metadata_size = o.metadata.size();
        }
        return l;
    }

    rd_kafka_t* consumer_;
    output* out_;
    instance_producer* producer_;
};

}  // namespace strata::runtime::detail
