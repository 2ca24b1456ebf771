// The group consumer's join state, read from librdkafka's statistics JSON
// (detail/group_stats.hpp): the at-least-once committer sends nothing while
// it is not "steady".

#include <strata/runtime/detail/group_stats.hpp>

#include <catch2/catch.hpp>

#include <string>

using strata::runtime::detail::join_state_in_stats;

namespace {

// The shape librdkafka 2.0.2 writes (rd_kafka_stats_emit_all): the topics'
// object, then the group's.
std::string stats(const std::string& topic, const std::string& join_state) {
    return R"({ "name": "a#consumer-8", "type": "consumer", "ts": 1, "brokers": { }, "topics": { ")" + topic +
           R"(": { "topic": ")" + topic + R"(", "partitions": { } } } , "cgrp": { "state": "up", "stateage": 12, )" +
           R"("join_state": ")" + join_state +
           R"(", "rebalance_age": 3, "rebalance_cnt": 7, "rebalance_reason": "group is rebalancing", )" +
           R"("assignment_size": 1 }})";
}

}  // namespace

TEST_CASE("group stats: the join state is read from the group's object", "[runtime][group-stats]") {
    CHECK(join_state_in_stats(stats("orders", "steady")) == "steady");
    CHECK(join_state_in_stats(stats("orders", "wait-join")) == "wait-join");
    CHECK(join_state_in_stats(stats("orders", "wait-incr-unassign-to-complete")) == "wait-incr-unassign-to-complete");
}

TEST_CASE("group stats: a topic named cgrp is not taken for the group", "[runtime][group-stats]") {
    CHECK(join_state_in_stats(stats("cgrp", "wait-sync")) == "wait-sync");
}

TEST_CASE("group stats: statistics without a group, or cut short, name no state", "[runtime][group-stats]") {
    CHECK(join_state_in_stats(R"({ "name": "p#producer-1", "type": "producer", "topics": { } })").empty());
    CHECK(join_state_in_stats("").empty());
    CHECK(join_state_in_stats(R"({ "cgrp": { "state": "up", "join_state": "stea)").empty());
}
