#pragma once
/// @file
/// @brief Who is in an application's group, from the group coordinator
/// (DescribeConsumerGroups): what the leader decides from.

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/runtime/detail/leader.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Asks the group coordinator for the group's members without
/// blocking: `request()` sends, `poll()` answers once the reply is in.
/// Used on one thread.
class group_watch {
public:
    /// @param settings librdkafka settings of its admin client (security)
    group_watch(const std::string& bootstrap, std::string group, const kafka::settings& settings = {})
        : group_(std::move(group)), client_(make(bootstrap, settings)),
          queue_(rd_kafka_queue_new(client_.get())) {}

    /// How long a request may wait for the group's coordinator. Long on
    /// purpose: in librdkafka 2.0.2 an admin request that times out while
    /// waiting for a coordinator that is down, and whose coordinator then
    /// comes back, aborts the process (use after free of its once-only
    /// reply: `rd_kafka_enq_once_del_source_return: Assertion
    /// 'eonce->refcnt > 0' failed`, seen when the broker leading the
    /// group's offsets partition was killed). Without a timeout of its own,
    /// the request waits for the next coordinator, which librdkafka looks
    /// for every second; only a group without a coordinator for this long
    /// could still meet the bug.
    static constexpr std::chrono::minutes patience{10};

    /// How long a request is waited for before another one is sent in its
    /// place. A coordinator that is up answers within milliseconds; a
    /// request that met a dead one waits for librdkafka to find the next,
    /// and the leader decides nothing until it has a member list asked for
    /// after its election: a fresh request costs less than the wait.
    static constexpr std::chrono::seconds retry_after{2};

    using clock = std::chrono::steady_clock;

    /// How long librdkafka keeps a group's coordinator in mind unused
    /// (this client's metadata.max.age.ms; it looks for stale entries every
    /// second). librdkafka 2.0.2 asks the coordinator it remembers as long
    /// as that broker is up, and forgets it only when unused for this long:
    /// not on a refusal. A broker that died and came back no longer
    /// coordinating the group answered every request NOT_COORDINATOR, and
    /// the leader never listed the members again (the campaign's stalls
    /// after a broker death; test/runtime/group_watch_test.cpp shows it). A
    /// client that asks every 250 ms never leaves it unused that long, so
    /// after a refusal the watch is quiet for `forget_after`, and the next
    /// request looks the coordinator up again.
    static constexpr std::chrono::milliseconds coordinator_memory{1000};
    static constexpr std::chrono::milliseconds forget_after = coordinator_memory + std::chrono::milliseconds(1500);

    /// @brief Sends a request unless one sent less than `retry_after` ago
    /// is on its way, or a refusal is being forgotten. An older one is
    /// given up: its answer, if it comes, goes to a queue that nobody
    /// reads any more.
    /// @returns whether it sent one
    bool request(clock::time_point now) {
        if (refused_at_) {
            if (now - *refused_at_ < forget_after) return false;
            refused_at_.reset();
        }
        if (in_flight_) {
            if (now - sent_at_ < retry_after) return false;
            queue_.reset(rd_kafka_queue_new(client_.get()));
            ++abandoned_;
        }
        const kafka::unique_admin_options opts(
            rd_kafka_AdminOptions_new(client_.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS));
        std::array<char, 256> err{};
        (void)rd_kafka_AdminOptions_set_request_timeout(opts.get(), kafka::timeout_ms(patience), err.data(),
                                                        err.size());
        const char* groups[] = {group_.c_str()};
        rd_kafka_DescribeConsumerGroups(client_.get(), groups, 1, opts.get(), queue_.get());
        in_flight_ = true;
        sent_at_ = now;
        return true;
    }

    /// @brief How many requests were given up unanswered.
    [[nodiscard]] std::uint64_t abandoned() const noexcept { return abandoned_; }
    /// @brief How many answers were a refusal (an error, for the request or the group).
    [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }
    /// @brief The last refusal, in words ("" before any).
    [[nodiscard]] const std::string& last_refusal() const noexcept { return last_refusal_; }

    /// @brief The members (instance id from their client.id, and member
    /// id), when a reply to the last request arrived. A group in the middle
    /// of a rebalance lists its members already (a member that left or timed
    /// out is gone from the list when the rebalance starts); waiting for the
    /// rebalance to end would add up to a heartbeat interval to every failover.
    /// @throws kafka::error the coordinator refused the request for good
    ///         (not authorized to describe the group: the leader could never decide)
    [[nodiscard]] std::optional<std::vector<group_member>> poll() {
        if (!in_flight_) return std::nullopt;
        const kafka::unique_event ev(rd_kafka_queue_poll(queue_.get(), 0));
        if (!ev) return std::nullopt;
        in_flight_ = false;
        if (const rd_kafka_resp_err_t err = rd_kafka_event_error(ev.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            note_refusal(err, rd_kafka_event_error_string(ev.get()));
            return std::nullopt;  // asked again later
        }
        const rd_kafka_DescribeConsumerGroups_result_t* result = rd_kafka_event_DescribeConsumerGroups_result(ev.get());
        if (result == nullptr) return std::nullopt;
        std::size_t count = 0;
        const rd_kafka_ConsumerGroupDescription_t** groups = rd_kafka_DescribeConsumerGroups_result_groups(result, &count);
        if (count != 1) return std::nullopt;
        if (const rd_kafka_error_t* e = rd_kafka_ConsumerGroupDescription_error(groups[0]); e != nullptr) {
            note_refusal(rd_kafka_error_code(e), rd_kafka_error_string(e));
            return std::nullopt;
        }
        const rd_kafka_consumer_group_state_t state = rd_kafka_ConsumerGroupDescription_state(groups[0]);
        if (state == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD || state == RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN)
            return std::nullopt;
        std::vector<group_member> members;
        for (std::size_t i = 0; i < rd_kafka_ConsumerGroupDescription_member_count(groups[0]); ++i) {
            const rd_kafka_MemberDescription_t* m = rd_kafka_ConsumerGroupDescription_member(groups[0], i);
            members.push_back({rd_kafka_MemberDescription_client_id(m), rd_kafka_MemberDescription_consumer_id(m)});
        }
        return members;
    }

private:
    /// A refusal: thrown when it is for good, else remembered, and the
    /// watch goes quiet until librdkafka forgot the coordinator.
    void note_refusal(rd_kafka_resp_err_t err, const char* what) {
        ++refused_;
        last_refusal_ = std::string(rd_kafka_err2name(err)) + ": " + (what == nullptr ? "" : what);
        refused_at_ = clock::now();
        if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED || err == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED)
            throw kafka::error("describe the group " + group_ +
                                   " (the leader needs DESCRIBE on it to know the members it decides for)",
                               err, what == nullptr ? "" : what);
    }

    static kafka::client make(const std::string& bootstrap, const kafka::settings& settings) {
        kafka::conf c(settings);
        c.set("bootstrap.servers", bootstrap);
        c.set("metadata.max.age.ms", std::to_string(coordinator_memory.count()));
        return kafka::client(RD_KAFKA_PRODUCER, std::move(c));
    }

    std::string group_;
    kafka::client client_;
    kafka::unique_queue queue_;
    bool in_flight_ = false;
    clock::time_point sent_at_{};
    std::optional<clock::time_point> refused_at_;
    std::uint64_t abandoned_ = 0;
    std::uint64_t refused_ = 0;
    std::string last_refusal_;
};

}  // namespace strata::runtime::detail
