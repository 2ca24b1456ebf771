#pragma once
/// @file
/// @brief How the instances of an application agree on who runs which task:
/// a compacted topic `<application id>-coordination` with one partition that
/// every instance reads. Each instance publishes its status there (the tasks
/// it runs, the standbys it keeps and how far behind they are, its
/// endpoint); the leader (the member the consumer group gives that topic's
/// partition to) claims an epoch and publishes, in it, the assignment it
/// computes from the group's membership and those statuses. How the records
/// are read is in coordination_state.hpp, what the leader writes in
/// leader.hpp, and what an instance does with a decision in handoff.hpp.
///
/// The records are the runtime's, in strata::runtime::detail; the one a
/// user meets, `standby_lag` (in `instance_metadata::standby_lags`), is in
/// runtime/standby_lag.hpp.
///
/// Why not the group's own assignment: the partition assignors librdkafka
/// ships cannot be told about standbys or about a copy still warming up, and
/// librdkafka 2.0 offers no way to plug in another. The group still elects
/// the first leader, and its generation fences the commits of an instance it
/// expelled. It detects a dead instance only after its session timeout (6 s
/// at the least on a broker with default settings), so every instance also
/// writes a heartbeat to the coordination topic: an instance silent there
/// for `liveness_timeout`, by the broker's append time and by the reader's
/// own clock, is left out of decisions, and a silent leader is succeeded
/// (liveness.hpp says why that is safe).

#include <strata/core/bytes.hpp>
#include <strata/runtime/standby_lag.hpp>
#include <strata/serde/all.hpp>
#include <strata/serde/encode.hpp>

#include <boost/hana/define_struct.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime::detail {

/// @brief Which decision: the leader epoch it was made in (the offset of
/// the leader's claim on the coordination topic, so it grows across
/// restarts and survives compaction) and its number within that epoch.
struct decision_id {
    std::int64_t epoch = 0;
    std::int64_t version = 0;
    friend auto operator<=>(const decision_id&, const decision_id&) = default;
};

/// @brief What an instance tells the others about itself.
struct instance_status {
    BOOST_HANA_DEFINE_STRUCT(instance_status,
                             (std::string, instance),                 // its instance id
                             (std::string, member_id),                // its member id in the group ("" before it joined)
                             (std::string, incarnation),              // unique to this run of the process
                             (std::int64_t, started_ms),              // wall clock when this run started
                             (std::string, transactional_id),         // its producer's, under exactly-once
                             (std::string, endpoint),                 // host:port of its queries, if any
                             (std::int64_t, published_ms),            // wall clock when published
                             (std::int64_t, acted_epoch),             // the last decision it acted on
                             (std::int64_t, acted_version),
                             (bool, withdrawn),                       // it closed its tasks and is leaving
                             (std::vector<std::int32_t>, active),     // tasks restoring or running here
                             (std::vector<standby_lag>, standbys),    // standby tasks kept here
                             (std::string, process));                 // the instance whose thread it is
                                                                      // (processing_threads; "": its own)
    friend bool operator==(const instance_status&, const instance_status&) = default;

    [[nodiscard]] decision_id acted() const noexcept { return {acted_epoch, acted_version}; }
    [[nodiscard]] bool lists(std::int32_t task) const {
        return std::find(active.begin(), active.end(), task) != active.end();
    }
};

/// @brief Where one task runs, and where its standbys are.
struct task_placement {
    BOOST_HANA_DEFINE_STRUCT(task_placement,
                             (std::int32_t, task),
                             (std::string, active),                   // the instance that runs it
                             (std::vector<std::string>, standbys),    // instances that keep a copy
                             (std::string, release_from),             // a live instance that must let go of it first
                             (std::int64_t, since_epoch),             // the decision that gave it to `active`
                             (std::int64_t, since_version));
    friend bool operator==(const task_placement&, const task_placement&) = default;

    [[nodiscard]] decision_id since() const noexcept { return {since_epoch, since_version}; }
};

/// @brief The leader's decision: every task's placement, for the members
/// of the group as the leader saw them (instance id and member id).
struct assignment {
    BOOST_HANA_DEFINE_STRUCT(assignment,
                             (std::int64_t, epoch),                   // the leader's epoch (see decision_id)
                             (std::int64_t, version),                 // grows with every decision of the epoch
                             (std::string, leader),                   // who decided
                             (std::int64_t, decided_ms),              // when
                             (std::int64_t, noticed_ms),              // when the leader saw the membership change behind it (0: none)
                             (std::vector<std::string>, members),     // the live instances it was made for
                             (std::vector<std::string>, member_ids),  // their member ids, in the same order
                             (std::vector<task_placement>, tasks));   // ascending by task
    friend bool operator==(const assignment&, const assignment&) = default;

    [[nodiscard]] decision_id id() const noexcept { return {epoch, version}; }

    /// The placement of task p, if the assignment has it.
    [[nodiscard]] const task_placement* find(std::int32_t p) const {
        for (const auto& t : tasks)
            if (t.task == p) return &t;
        return nullptr;
    }
    /// The member id the decision was made for the instance with, if it is a member.
    [[nodiscard]] const std::string* member_id_of(std::string_view instance) const {
        for (std::size_t i = 0; i < members.size() && i < member_ids.size(); ++i)
            if (members[i] == instance) return &member_ids[i];
        return nullptr;
    }
};

/// @brief A member's claim to lead, written when the group gives it the
/// coordination partition. The claim's offset is the epoch of every
/// decision it makes; decisions of an older epoch are ignored.
struct leader_claim {
    BOOST_HANA_DEFINE_STRUCT(leader_claim,
                             (std::string, instance),
                             (std::string, member_id),
                             (std::int64_t, election));               // counts this member's elections
    friend bool operator==(const leader_claim&, const leader_claim&) = default;
};

/// @brief An instance's sign of life, written every sixth of
/// `liveness_timeout` by each member (key `alive/<instance>`).
struct heartbeat {
    BOOST_HANA_DEFINE_STRUCT(heartbeat,
                             (std::string, instance),
                             (std::string, member_id),
                             (std::int64_t, sent_ms));               // the sender's steady clock: read back, it renews its lease
    friend bool operator==(const heartbeat&, const heartbeat&) = default;
};

/// @brief The name of an application's coordination topic.
[[nodiscard]] inline std::string coordination_topic_name(std::string_view application) {
    return std::string(application) + "-coordination";
}

}  // namespace strata::runtime::detail
