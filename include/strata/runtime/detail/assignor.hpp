#pragma once
/// @file
/// @brief The leader's rule for placing tasks and standbys (a pure
/// function, so that it can be tested alone and so that any leader, given
/// the same membership and statuses, decides the same).
///
/// 1. A task stays with its active instance while that instance lives.
/// 2. A task whose instance died goes to the live instance with the most
///    caught-up standby of it (least lag), else to the instance running the
///    fewest tasks: a standby turns a full restore into a tail.
/// 3. Balance: while one instance runs two or more tasks more than another,
///    a task moves from the busiest to the idlest, but only to a warm copy:
///    when the idlest has a standby of one of the busiest's tasks that is
///    within `acceptable_lag`, that task moves (its old instance releases it
///    first); otherwise the idlest gets a warm-up standby of one of them, and
///    the task moves on the first decision after that copy has caught up.
/// 4. Standbys: each task keeps `standby_replicas` standbys on instances
///    other than its active one, the ones it had first, then the instances
///    keeping the fewest standbys.
///
/// The processing threads of one instance (application_options::
/// processing_threads) are members of their own, and tasks are placed and
/// balanced over threads; but a standby on another thread of the active
/// task's process dies with it, so a standby counts only on a process that
/// holds no other copy of its task. (A warm-up copy for a move between two
/// threads of one process is the exception: it is made, and kept while the
/// move waits for it, beside the standbys that count.)

#include <strata/runtime/detail/coordination.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace strata::runtime::detail {

/// @brief What the leader decides from.
struct assignor_input {
    std::int32_t tasks = 0;                ///< one per input partition
    std::vector<std::string> members;      ///< live instance ids
    const assignment* current = nullptr;   ///< the last decision, if any
    const std::map<std::string, instance_status, std::less<>>* statuses = nullptr;
    int standby_replicas = 0;
    std::int64_t acceptable_lag = 10'000;  ///< a standby this close to its changelog's end counts as warm
};

/// The lag of `instance`'s standby of task p, if it reported one.
inline std::optional<std::int64_t> standby_lag_of(const assignor_input& in, const std::string& instance,
                                                  std::int32_t p) {
    if (in.statuses == nullptr) return std::nullopt;
    const auto it = in.statuses->find(instance);
    if (it == in.statuses->end()) return std::nullopt;
    for (const standby_lag& s : it->second.standbys)
        if (s.task == p) return s.lag;
    return std::nullopt;
}

/// Whether `instance`'s status lists task p as running there.
inline bool still_listed(const assignor_input& in, const std::string& instance, std::int32_t p) {
    if (in.statuses == nullptr) return false;
    const auto it = in.statuses->find(instance);
    return it != in.statuses->end() &&
           std::find(it->second.active.begin(), it->second.active.end(), p) != it->second.active.end();
}

/// The process `instance` runs in: the instance whose processing thread it
/// is, as its status says; itself when it says none.
inline const std::string& process_of(const assignor_input& in, const std::string& instance) {
    if (in.statuses != nullptr)
        if (const auto it = in.statuses->find(instance); it != in.statuses->end() && !it->second.process.empty())
            return it->second.process;
    return instance;
}

/// @brief The placement of every task (version, leader and times are left
/// for the caller to fill in).
[[nodiscard]] inline std::vector<task_placement> assign_tasks(const assignor_input& in) {
    std::vector<std::string> members = in.members;
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    // Whether `m` would add a copy of task t on a process that has none yet.
    const auto adds_a_process = [&](const task_placement& t, const std::string& m) {
        const std::string& p = process_of(in, m);
        if (p == process_of(in, t.active)) return false;
        return std::none_of(t.standbys.begin(), t.standbys.end(),
                            [&](const std::string& s) { return s != m && process_of(in, s) == p; });
    };
    // The standbys of t that count: one per process other than its active one.
    const auto counted_standbys = [&](const task_placement& t) {
        std::set<std::string> processes;
        for (const std::string& s : t.standbys)
            if (process_of(in, s) != process_of(in, t.active)) processes.insert(process_of(in, s));
        return processes.size();
    };
    std::vector<task_placement> out(static_cast<std::size_t>(std::max(in.tasks, 0)));
    for (std::int32_t p = 0; p < in.tasks; ++p) out[static_cast<std::size_t>(p)].task = p;
    if (members.empty()) return out;
    const auto live = [&](const std::string& m) { return std::binary_search(members.begin(), members.end(), m); };

    std::map<std::string, int> load;  // active tasks per instance
    for (const auto& m : members) load[m] = 0;

    // 1. Tasks stay where they run. Without a decision to go by (a new
    //    leader that never saw one), an instance's status says what it runs.
    for (task_placement& t : out) {
        std::string owner;
        if (in.current != nullptr) {
            if (const task_placement* c = in.current->find(t.task)) owner = c->active;
        } else if (in.statuses != nullptr) {
            for (const auto& [name, s] : *in.statuses)
                if (live(name) && s.lists(t.task) && owner.empty()) owner = name;
        }
        if (!owner.empty() && live(owner)) {
            t.active = owner;
            ++load[owner];
            // A move still under way: its old instance has yet to let go.
            if (in.current != nullptr)
                if (const task_placement* c = in.current->find(t.task);
                    c != nullptr && !c->release_from.empty() && live(c->release_from) &&
                    still_listed(in, c->release_from, t.task))
                    t.release_from = c->release_from;
        }
    }

    // 2. Orphans go to the warmest standby, else the idlest instance.
    const auto idlest = [&] {
        return std::min_element(load.begin(), load.end(), [](const auto& a, const auto& b) {
                   return a.second < b.second || (a.second == b.second && a.first < b.first);
               })->first;
    };
    for (task_placement& t : out) {
        if (!t.active.empty()) continue;
        std::string best;
        std::int64_t best_lag = 0;
        for (const auto& m : members) {
            const auto lag = standby_lag_of(in, m, t.task);
            if (!lag) continue;
            if (best.empty() || *lag < best_lag || (*lag == best_lag && load[m] < load[best])) {
                best = m;
                best_lag = *lag;
            }
        }
        t.active = best.empty() ? idlest() : best;
        ++load[t.active];
    }

    // 4 (first half). The standbys each task had, where still useful.
    std::map<std::string, int> standby_load;
    for (const auto& m : members) standby_load[m] = 0;
    std::set<std::string> processes;
    for (const auto& m : members) processes.insert(process_of(in, m));
    const auto replicas = static_cast<std::size_t>(
        std::clamp<int>(in.standby_replicas, 0, static_cast<int>(processes.size()) - 1));
    for (task_placement& t : out) {
        if (in.current == nullptr) continue;
        const task_placement* c = in.current->find(t.task);
        if (c == nullptr) continue;
        for (const auto& s : c->standbys) {
            if (counted_standbys(t) >= replicas || !live(s) || !adds_a_process(t, s)) continue;
            t.standbys.push_back(s);
            ++standby_load[s];
        }
    }

    // 3. Balance, one move (or one warm-up) per idle instance and decision.
    std::set<std::string> warming;
    for (;;) {
        const auto busiest = std::max_element(load.begin(), load.end(), [](const auto& a, const auto& b) {
            return a.second < b.second || (a.second == b.second && a.first > b.first);
        });
        const std::string idle = idlest();
        if (busiest->second - load[idle] < 2 || warming.contains(idle)) break;
        const std::string busy = busiest->first;
        task_placement* move = nullptr;
        std::int64_t move_lag = 0;
        task_placement* warm = nullptr;
        for (task_placement& t : out) {
            // A task still on its way here from elsewhere does not move again
            // before it arrived: its old instance would be forgotten.
            if (t.active != busy || !t.release_from.empty()) continue;
            const auto lag = standby_lag_of(in, idle, t.task);
            if (lag && *lag <= in.acceptable_lag && (move == nullptr || *lag < move_lag)) {
                move = &t;
                move_lag = *lag;
            }
            if (warm == nullptr) warm = &t;
        }
        if (move == nullptr && warm == nullptr) break;  // every task of the busiest is on its way
        if (move != nullptr) {
            move->release_from = move->active;
            move->active = idle;
            std::erase(move->standbys, idle);
            --load[busy];
            ++load[idle];
            continue;
        }
        // No warm copy yet: start one. The task moves once it has caught up.
        if (std::find(warm->standbys.begin(), warm->standbys.end(), idle) == warm->standbys.end()) {
            warm->standbys.push_back(idle);
            ++standby_load[idle];
        }
        warming.insert(idle);
    }

    // 4 (second half). Fill up to the wanted number of standbys.
    for (task_placement& t : out) {
        while (counted_standbys(t) < replicas) {
            std::string pick;
            for (const auto& m : members) {
                if (!adds_a_process(t, m) || std::find(t.standbys.begin(), t.standbys.end(), m) != t.standbys.end())
                    continue;
                if (pick.empty() || standby_load[m] < standby_load[pick]) pick = m;
            }
            if (pick.empty()) break;
            t.standbys.push_back(pick);
            ++standby_load[pick];
        }
        std::sort(t.standbys.begin(), t.standbys.end());
    }
    return out;
}

}  // namespace strata::runtime::detail
