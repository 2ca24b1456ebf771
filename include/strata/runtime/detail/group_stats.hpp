#pragma once
/// @file
/// @brief What the group consumer's statistics say of its membership, with
/// no Kafka in it.
///
/// librdkafka 2.0.2 takes an offset commit refused with ILLEGAL_GENERATION
/// for a lost membership: it revokes everything and rejoins, and the group
/// rebalances again (fixed in librdkafka 2.10, issue 4059). A commit sent
/// while the member waits in a JoinGroup goes out with the old generation
/// and, queued behind the JoinGroup on the coordinator's connection, reaches
/// the group once the new generation is in place: refused. With three
/// members committing every 200 ms, each such refusal started a rebalance
/// that caught the next commit: the campaign saw generation 35 after two
/// minutes of it, and nothing committed. So the at-least-once committer
/// sends nothing while the member is not steady in the group, as its
/// statistics (`statistics.interval.ms`) last said.

#include <string_view>

namespace strata::runtime::detail {

/// @brief The group's join state in librdkafka statistics JSON ("steady",
/// "wait-join", "wait-sync", ...), or "" when they name none.
[[nodiscard]] inline std::string_view join_state_in_stats(std::string_view json) {
    // The group's object comes after the topics' (whose names could be "cgrp").
    const std::size_t group = json.rfind("\"cgrp\": {");
    if (group == std::string_view::npos) return {};
    constexpr std::string_view key = "\"join_state\"";
    const std::size_t at = json.find(key, group);
    if (at == std::string_view::npos) return {};
    const std::size_t open = json.find('"', json.find(':', at + key.size()));
    if (open == std::string_view::npos) return {};
    const std::size_t close = json.find('"', open + 1);
    if (close == std::string_view::npos) return {};
    return json.substr(open + 1, close - open - 1);
}

}  // namespace strata::runtime::detail
