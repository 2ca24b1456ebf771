#pragma once
/// @file
/// @brief What an instance does with a decision, with no Kafka in it: which
/// tasks it lets go of, which it starts, which wait, which standbys it keeps.
///
/// The rules that keep a task off two instances (runtime-design I1, I4):
/// - An instance runs tasks only under a decision made for it as it is now:
///   one that lists its instance id with its current member id. A decision
///   that does not (made before it joined, or after the group dropped it)
///   gives it nothing, and it lets go of every task it runs.
/// - It starts task p only when every other member of the decision has
///   said, in a status published by that membership, that it acted on a
///   decision at least as new as the one that gave p here, and does not list
///   p (and at least as new as the first decision of the decision's epoch). A
///   member that acted on such a decision has let go of p; one that has
///   not said so yet may still run it, whatever the leader believes. A
///   member gone from the group is not waited for: the group has expelled
///   it, and its writes are fenced (see the committer).
/// - With a liveness timeout (liveness.hpp), the leader also leaves out
///   members silent on the coordination topic, and does so from what it had
///   read: a heartbeat on its way then may land before the decision and
///   renew the member's lease, and the member may still act, within it, on
///   an older decision it has read (even one that gave it nothing so far).
///   So a task starts only once every member the decision leaves out, but
///   one that withdrew, is silent in this instance's own reading, which
///   holds every record written before the decision: its lease has run out
///   by then.

#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_state.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace strata::runtime::detail {

/// @brief An instance as it sees itself.
struct local_tasks {
    std::string instance;
    std::string member_id;            ///< empty while it is not a member
    std::set<std::int32_t> active;    ///< restoring or running
    std::set<std::int32_t> standbys;
};

/// @brief When the plan is made, and the liveness timeout (0: off).
struct liveness_view {
    std::chrono::steady_clock::time_point now{};
    std::chrono::milliseconds timeout{0};
};

struct handoff_plan {
    bool member = false;                     ///< the decision was made for this membership
    std::vector<std::int32_t> release;       ///< active here, placed elsewhere (or not a member)
    std::vector<std::int32_t> start;         ///< placed here, safe to start
    std::vector<std::int32_t> wait;          ///< placed here, another member may still run it
    std::vector<std::int32_t> add_standby;
    std::vector<std::int32_t> drop_standby;
};

/// @brief Whether another member of `d` may still run task p, as far as
/// the statuses say.
[[nodiscard]] inline bool held_elsewhere(const assignment& d, const task_placement& p, const coordination_state& s,
                                         const std::string& me) {
    for (std::size_t i = 0; i < d.members.size() && i < d.member_ids.size(); ++i) {
        if (d.members[i] == me) continue;
        const instance_status* st = s.status_of(d.members[i]);
        if (st == nullptr || st->member_id != d.member_ids[i]) return true;  // has not spoken since it joined
        // At least the first decision of d's epoch too: a new leader's first
        // decision carries the placements of the last one it read, and a
        // decision of the epoch before may have moved p without its reading
        // it (compaction removed that epoch's claim before it got there).
        if (st->acted() < std::max(p.since(), decision_id{d.epoch, 1}) || st->lists(p.task)) return true;
    }
    return false;
}

/// @brief Whether a member that `d` leaves out may still hold or start a
/// task, as far as the heartbeats say: one heard of lately that did not
/// withdraw.
[[nodiscard]] inline bool left_out_but_audible(const assignment& d, const coordination_state& s, const std::string& me,
                                               liveness_view l) {
    if (l.timeout.count() <= 0) return false;
    for (const auto& [name, member] : s.heard_lately(l.now, l.timeout)) {
        if (name == me) continue;
        if (const std::string* m = d.member_id_of(name); m != nullptr && *m == member) continue;
        const instance_status* st = s.status_of(name);
        if (st != nullptr && st->member_id == member && st->withdrawn) continue;
        return true;
    }
    return false;
}

/// @brief A producer that may hold an open transaction with writes of a
/// task that comes here (exactly-once): its transactional id, the
/// incarnation that used it, and the decision that left it out. One fence
/// per incarnation and decision is enough (the instance's tasks all move
/// in it), not one per incarnation: an instance cut off by a network
/// partition lives on, renews its producer once it finds it fenced (a new
/// epoch, that no earlier fence touched) and comes back; cut off again, it
/// is fenced again.
struct fence_target {
    std::string transactional_id;
    std::string incarnation;
    decision_id decision{};
    friend bool operator==(const fence_target&, const fence_target&) = default;
};

/// @brief The producers to fence before a task restores here: those of every
/// instance the statuses know, but `me`, that is not the member `d` was made
/// for (it left, died or was expelled, perhaps without letting go) and did
/// not withdraw. Members of `d` have let go (see above). Fencing one that is
/// merely starting costs it a new producer; it holds no task yet.
[[nodiscard]] inline std::vector<fence_target> fence_targets(const assignment& d, const coordination_state& s,
                                                            const std::string& me) {
    std::vector<fence_target> out;
    for (const auto& [name, st] : s.statuses()) {
        if (name == me || st.transactional_id.empty() || st.withdrawn) continue;
        if (const std::string* m = d.member_id_of(name); m != nullptr && *m == st.member_id) continue;
        out.push_back({st.transactional_id, st.incarnation, d.id()});
    }
    return out;
}

[[nodiscard]] inline handoff_plan plan_handoff(const assignment& d, const coordination_state& s, const local_tasks& me,
                                               liveness_view l = {}) {
    handoff_plan plan;
    const std::string* my_id = d.member_id_of(me.instance);
    plan.member = !me.member_id.empty() && my_id != nullptr && *my_id == me.member_id;
    for (std::int32_t p : me.active) {
        const task_placement* placed = d.find(p);
        if (!plan.member || placed == nullptr || placed->active != me.instance) plan.release.push_back(p);
    }
    if (!plan.member) return plan;
    const bool left_out_audible = left_out_but_audible(d, s, me.instance, l);
    for (const task_placement& placed : d.tasks) {
        const std::int32_t p = placed.task;
        if (placed.active == me.instance) {
            if (me.active.contains(p)) continue;
            const bool wait = left_out_audible || held_elsewhere(d, placed, s, me.instance);
            (wait ? plan.wait : plan.start).push_back(p);
            continue;
        }
        const bool standby_here =
            std::find(placed.standbys.begin(), placed.standbys.end(), me.instance) != placed.standbys.end();
        if (standby_here && !me.standbys.contains(p)) plan.add_standby.push_back(p);
        if (!standby_here && me.standbys.contains(p)) plan.drop_standby.push_back(p);
    }
    // A standby of a task that starts here is promoted by the caller.
    return plan;
}

}  // namespace strata::runtime::detail
