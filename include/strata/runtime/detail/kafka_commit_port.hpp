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
#include <strata/runtime/detail/group_consumer.hpp>
#include <strata/runtime/detail/instance_producer.hpp>
#include <strata/runtime/detail/output.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

class kafka_commit_port final : public commit_port {
public:
    /// The producer is the instance's: it changes after it was fenced. An
    /// offset commit waits `answer_within` for the group's answer; one still
    /// pending after `give_up_after` is taken for lost.
    kafka_commit_port(group_consumer& consumer, output& out, instance_producer& producer,
                      std::chrono::milliseconds answer_within, std::chrono::milliseconds give_up_after)
        : group_(&consumer), consumer_(consumer.get()), out_(&out), producer_(&producer),
          answer_within_(answer_within), give_up_after_(give_up_after) {}

    /// @brief The membership (member id) the instance acts for now; commits
    /// to the group go out only under it.
    void act_for(std::string member_id) { membership_ = std::move(member_id); }

    output_failures flush_output() override { return out_->flush(); }

    group_answer commit_to_group(const std::vector<offset_to_commit>& offsets) override {
        // Not rd_kafka_commit(): librdkafka (2.0.2) waits for its answer
        // for ever while the coordinator's connection is down or too slow
        // to finish a request, and the instance would neither process nor
        // see that its lease ran out. A commit not answered in time stays
        // pending, and no other is sent until it is answered: the
        // coordinator serves a connection's requests one after another, and
        // a pile of commits (one more each time the wait ran out) held back
        // the member's heartbeats until the group dropped it. The reply
        // queue keeps itself alive for an answer that comes late.
        // Only under the membership the instance runs its tasks for: a member
        // id librdkafka changed since (a rejoin behind the instance's back)
        // would earn a lease for tasks another member may run by now.
        const std::string member = group_->member_id();
        if (group_->rejoining() || member.empty() || member != membership_) return group_answer::deferred;
        if (pending_) {
            const kafka::unique_event late(rd_kafka_queue_poll(pending_.get(), 0));
            if (!late && std::chrono::steady_clock::now() - pending_since_ < give_up_after_)
                return group_answer::unanswered;
            pending_.reset();  // answered late: what it said is out of date
        }
        const kafka::unique_partition_list l = to_list(offsets);
        kafka::unique_queue replies(rd_kafka_queue_new(consumer_));
        kafka::check(rd_kafka_commit_queue(consumer_, l.get(), replies.get(), nullptr, nullptr),
                     "commit the input offsets");
        const kafka::unique_event answer(
            rd_kafka_queue_poll(replies.get(), static_cast<int>(answer_within_.count())));
        if (!answer) {
            pending_ = std::move(replies);
            pending_since_ = std::chrono::steady_clock::now();
            return group_answer::unanswered;
        }
        const rd_kafka_resp_err_t err = rd_kafka_event_error(answer.get());
        if (err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
            err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
            return group_answer::rebalancing;
        // No coordinator, or none that answered: librdkafka gives up after
        // holding the commit for a session. Nothing is wrong with the work.
        if (kafka::group_coordinator_unavailable(err)) return group_answer::unanswered;
        kafka::check(err, "commit the input offsets");
        if (group_->member_id() != member) return group_answer::rebalancing;  // it may have gone out as the new one
        return group_answer::accepted;
    }

    transaction_end commit_transaction(const std::vector<offset_to_commit>& offsets) override {
        const kafka::unique_partition_list l = to_list(offsets);
        const kafka::unique_group_metadata group(rd_kafka_consumer_group_metadata(consumer_));
        try {
            producer_->transaction().commit(l.get(), group.get());
        } catch (const kafka::error& e) {
            if (producer_->get()->fatal_error() || e.code() == RD_KAFKA_RESP_ERR__FENCED ||
                e.code() == RD_KAFKA_RESP_ERR_PRODUCER_FENCED || e.code() == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH ||
                producer_->needs_renewal())
                throw;  // a newer instance owns the work, or the producer is to be made anew
            return transaction_end::aborted;
        }
        return transaction_end::committed;
    }

    void begin_transaction() override { producer_->transaction().begin(); }

    [[nodiscard]] bool group_rejoining() const override { return group_->rejoining(); }

    bool discard_failed_writes() override {
        if (!producer_->exactly_once()) {
            producer_->settle();
            out_->forget_failures();  // else every later flush throws again
            return true;
        }
        if (producer_->get()->fatal_error()) return false;
        try {
            producer_->transaction().abort();
        } catch (const kafka::error&) {
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

    group_consumer* group_;
    std::string membership_;
    rd_kafka_t* consumer_;
    output* out_;
    instance_producer* producer_;
    std::chrono::milliseconds answer_within_;
    /// librdkafka answers every commit in the end (an error after its
    /// socket timeout at the latest); one that seems lost is let go of.
    std::chrono::milliseconds give_up_after_;
    kafka::unique_queue pending_;  // the replies to a commit not answered in time
    std::chrono::steady_clock::time_point pending_since_{};
};

}  // namespace strata::runtime::detail
