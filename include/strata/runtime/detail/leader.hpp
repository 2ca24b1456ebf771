#pragma once
/// @file
/// @brief The leader's side of coordination, with no Kafka in it: when it
/// may decide, for which members, and what it writes (see
/// coordination_state.hpp for how the others read it).
///
/// - Elected (the group gave this member the coordination partition), it
///   first writes a claim and waits until it reads the claim back: the
///   claim's position is its epoch, and everything decided before is read.
/// - It decides only from a member list it asked for after its election: a
///   list kept from an earlier term is stale.
/// - The members it decides for are the group's, by instance id and member
///   id, less those that withdrew. An instance id the group lists twice (a
///   restart before the old member's session ended, or two instances started
///   with one id) keeps the member the last decision had, if that one is
///   still there; otherwise it gets nothing until only one is left.
/// - It writes a decision when the placement, the members or the epoch
///   differ from the newest decision, and again when a stale decision was
///   written after its own (compaction keeps only the last of a key).
/// - It removes (tombstones) the statuses of instances absent from the group
///   and from the newest decision for longer than `status_retention`.
/// - It leaves out of its decisions the members silent on the coordination
///   topic for `liveness_timeout` (liveness.hpp), and looks again whenever
///   who is silent changes.
/// - A follower that finds the leader of the newest claim silent, and
///   itself first (by instance id, member id) among the members heard of
///   lately, is elected by that (`succeed_if_silent`) and claims like a
///   member the group elected. Two that claim at once are ordered by the
///   topic: the later claim is the newest epoch, and the earlier claimant
///   steps down when it reads it.

#include <strata/runtime/detail/assignor.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_state.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

/// @brief A member as the group coordinator lists it.
struct group_member {
    std::string instance;   ///< its instance id (the consumer's client.id)
    std::string member_id;  ///< the coordinator's id of this membership
    friend auto operator<=>(const group_member&, const group_member&) = default;
};

struct leader_options {
    std::string instance;
    std::int32_t tasks = 0;
    int standby_replicas = 0;
    std::int64_t acceptable_lag = 10'000;
    std::chrono::milliseconds status_retention{60'000};
    /// Silence after which a member is left out (liveness.hpp); 0: never.
    std::chrono::milliseconds liveness_timeout{0};
};

class leader {
public:
    using time_point = std::chrono::steady_clock::time_point;

    explicit leader(leader_options o) : o_(std::move(o)) {}

    /// @brief The group made this member (`member_id`) the leader at `now`.
    void elected(std::string member_id, time_point now) {
        state_ = phase::claiming;
        member_id_ = std::move(member_id);
        ++election_;
        claim_sent_ = false;
        elected_at_ = now;
        epoch_at_election_ = last_epoch_seen_;
        stepped_aside_ = false;
        members_.reset();
        silent_.clear();
        epoch_ = 0;
        sent_.reset();
        highest_version_ = 0;
        due_ = true;
    }
    /// @brief The group took the coordination partition away.
    void deposed() {
        state_ = phase::follower;
        stepped_aside_ = false;
    }

    /// @brief A follower (member `member_id`) takes over from a leader
    /// silent at `now` when it comes first among the members heard of
    /// lately (see the file comment), and claims again when the newest
    /// claim is its own.
    /// @returns whether it was elected so
    bool succeed_if_silent(const coordination_state& s, time_point now, const std::string& member_id) {
        if (state_ != phase::follower || o_.liveness_timeout.count() <= 0 || member_id.empty() || !s.claim())
            return false;
        if (s.claim()->instance == o_.instance && s.claim()->member_id == member_id) {
            // The newest claim is this member's own, yet it does not lead
            // (the group took the partition away, and no one claimed
            // since): no one else would, as its heartbeats go on.
            elected(member_id, now);
            return true;
        }
        if (!s.leader_silent(now, o_.liveness_timeout)) return false;
        const auto live = s.heard_lately(now, o_.liveness_timeout);
        if (live.empty() || live.front() != std::pair(o_.instance, member_id)) return false;
        elected(member_id, now);
        return true;
    }

    /// @brief Looks at who is silent now among the members listed: when that
    /// changed, a decision is due.
    void watch_liveness(const coordination_state& s, time_point now) {
        if (state_ != phase::leading || !members_ || o_.liveness_timeout.count() <= 0) return;
        std::vector<group_member> silent;
        for (const group_member& m : *members_)
            if (s.silent(m.instance, m.member_id, now, o_.liveness_timeout)) silent.push_back(m);
        if (silent == silent_) return;
        silent_ = std::move(silent);
        due_ = true;
    }
    /// @brief The members as last listed in this term (none yet: nullopt).
    [[nodiscard]] const std::optional<std::vector<group_member>>& members() const noexcept { return members_; }
    /// @brief The listed members left out as silent, as of the last watch_liveness().
    [[nodiscard]] const std::vector<group_member>& silent() const noexcept { return silent_; }

    [[nodiscard]] bool leading() const noexcept { return state_ == phase::leading; }
    [[nodiscard]] bool elected() const noexcept { return state_ != phase::follower; }
    [[nodiscard]] std::int64_t epoch() const noexcept { return epoch_; }

    /// @brief The claim to write, once per election.
    [[nodiscard]] std::optional<leader_claim> claim_to_write() {
        if (state_ != phase::claiming || claim_sent_) return std::nullopt;
        claim_sent_ = true;
        return leader_claim{o_.instance, member_id_, election_};
    }
    /// @brief Something it wrote did not land: the claim (while it has not
    /// read it back) and the decision are written again.
    void writes_lost() {
        if (state_ == phase::claiming) claim_sent_ = false;
        sent_.reset();
        last_republished_.reset();
        due_ = true;
    }

    /// @brief Looks at what the coordination topic says now: its own claim
    /// read back starts its epoch; a newer claim of another ends it.
    ///
    /// A claimant that reads another's claim newer than any it knew when
    /// elected steps aside: its own claim came before it (read in the same
    /// batch, or removed by compaction since) or is still on its way. In
    /// the second case, once it is read as the newest, the claimant leads
    /// after all: no one else would, as its heartbeats say it is alive.
    void observe(const coordination_state& s) {
        if (!s.claim()) return;
        last_epoch_seen_ = s.epoch();
        const bool mine = *s.claim() == leader_claim{o_.instance, member_id_, election_};
        if ((state_ == phase::claiming || stepped_aside_) && mine) {
            state_ = phase::leading;
            stepped_aside_ = false;
            epoch_ = s.epoch();
        } else if (state_ == phase::claiming && s.epoch() > epoch_at_election_) {
            state_ = phase::follower;
            stepped_aside_ = true;
        } else if (state_ == phase::leading && !mine && s.epoch() > epoch_) {
            state_ = phase::follower;  // someone claimed after us: we were deposed and did not hear of it
        }
    }

    /// @brief The group's members, from a request sent at `requested_at`.
    void members_listed(std::vector<group_member> m, time_point requested_at) {
        if (state_ == phase::follower || requested_at < elected_at_) return;  // from before this term
        std::sort(m.begin(), m.end());
        if (members_ && *members_ == m) return;
        members_ = std::move(m);
        due_ = true;
    }

    /// @brief The decision to write now, if one is due.
    /// @param wall_ms the wall clock, for the decision's times
    [[nodiscard]] std::optional<assignment> decide(const coordination_state& s, std::int64_t wall_ms) {
        if (state_ != phase::leading || !members_) return std::nullopt;
        // Its last decision not read back after a while: compaction may have
        // removed it before this reader got there (a stale decision written
        // after it keeps the key). It decides again, from what it did read.
        if (sent_ && (!s.latest() || s.latest()->id() < sent_->id()) && wall_ms - sent_ms_ >= republish_after_ms) {
            sent_.reset();
            due_ = true;
        }
        // Nothing it decides from changed since it last looked: nor would the decision.
        if (!due_ && s.changes() == seen_changes_) return std::nullopt;
        due_ = false;
        seen_changes_ = s.changes();
        // Its own last decision may not be back from the topic yet.
        const std::optional<assignment>& current =
            sent_ && sent_->epoch == epoch_ && (!s.latest() || s.latest()->id() < sent_->id()) ? sent_ : s.latest();
        auto [names, ids] = deciding_members(s, current ? &*current : nullptr);
        if (names.empty()) return std::nullopt;
        if (names != decided_for_) {
            decided_for_ = names;
            noticed_ms_ = wall_ms;
        }
        assignor_input in;
        in.tasks = o_.tasks;
        in.members = names;
        in.current = current ? &*current : nullptr;
        in.statuses = &s.statuses();
        in.standby_replicas = o_.standby_replicas;
        in.acceptable_lag = o_.acceptable_lag;
        std::vector<task_placement> tasks = assign_tasks(in);
        // Never a version it sent before: one it gave up on may have landed.
        const std::int64_t in_hand = current && current->epoch == epoch_ ? current->version : 0;
        const decision_id next{epoch_, std::max(in_hand, highest_version_) + 1};
        for (task_placement& t : tasks) {
            const task_placement* before = current ? current->find(t.task) : nullptr;
            const decision_id since = before != nullptr && before->active == t.active ? before->since() : next;
            t.since_epoch = since.epoch;
            t.since_version = since.version;
        }
        const bool same = current && current->epoch == epoch_ && current->tasks == tasks && current->members == names &&
                          current->member_ids == ids;
        const bool read_back = s.latest() && s.latest()->id() == current->id();
        const bool overwritten = same && read_back && s.last_written() && *s.last_written() != current->id();
        if (same && !overwritten) return std::nullopt;
        if (overwritten && last_republished_ == s.last_written()) return std::nullopt;  // sent already, not read yet
        if (overwritten) last_republished_ = s.last_written();
        assignment a{};
        a.epoch = next.epoch;
        a.version = next.version;
        a.leader = o_.instance;
        a.decided_ms = wall_ms;
        a.noticed_ms = noticed_ms_;
        a.members = std::move(names);
        a.member_ids = std::move(ids);
        a.tasks = std::move(tasks);
        sent_ = a;
        sent_ms_ = wall_ms;
        highest_version_ = a.version;
        return a;
    }

    /// @brief Statuses to remove: instances gone from the group and from the
    /// newest decision for longer than the retention.
    [[nodiscard]] std::vector<std::string> statuses_to_remove(const coordination_state& s, time_point now) {
        std::vector<std::string> out;
        if (state_ != phase::leading || !members_) return out;
        for (const auto& entry : s.statuses()) {
            const std::string& name = entry.first;
            const bool in_group = std::any_of(members_->begin(), members_->end(),
                                              [&](const group_member& m) { return m.instance == name; });
            const bool decided = s.latest() && s.latest()->member_id_of(name) != nullptr;
            if (in_group || decided) {
                absent_since_.erase(name);
                continue;
            }
            const auto [it, fresh] = absent_since_.try_emplace(name, now);
            if (!fresh && now - it->second >= o_.status_retention) {
                out.push_back(name);
                absent_since_.erase(it);
            }
        }
        return out;
    }

private:
    enum class phase { follower, claiming, leading };

    /// The members to decide for, by instance id, with their member ids.
    std::pair<std::vector<std::string>, std::vector<std::string>> deciding_members(const coordination_state& s,
                                                                                   const assignment* current) const {
        std::map<std::string, std::vector<std::string>> by_instance;
        for (const group_member& m : *members_)
            if (!m.instance.empty() && !s.withdrew(m.instance, m.member_id) &&
                std::find(silent_.begin(), silent_.end(), m) == silent_.end())
                by_instance[m.instance].push_back(m.member_id);
        std::pair<std::vector<std::string>, std::vector<std::string>> out;
        for (const auto& [name, ids] : by_instance) {
            const std::string* chosen = nullptr;
            if (ids.size() == 1) {
                chosen = &ids.front();
            } else if (current != nullptr) {
                if (const std::string* before = current->member_id_of(name);
                    before != nullptr && std::find(ids.begin(), ids.end(), *before) != ids.end())
                    chosen = before;
            }
            if (chosen == nullptr) continue;
            out.first.push_back(name);
            out.second.push_back(*chosen);
        }
        return out;
    }

    leader_options o_;
    phase state_ = phase::follower;
    std::string member_id_;
    std::int64_t election_ = 0;
    bool claim_sent_ = false;
    time_point elected_at_{};
    std::int64_t last_epoch_seen_ = 0;    // the newest epoch observe() saw
    std::int64_t epoch_at_election_ = 0;  // ... when this member was last elected
    bool stepped_aside_ = false;          // a newer claim came first: its own may still come
    std::int64_t epoch_ = 0;
    std::optional<std::vector<group_member>> members_;
    std::vector<group_member> silent_;  // of members_, left out (watch_liveness)
    std::vector<std::string> decided_for_;
    std::int64_t noticed_ms_ = 0;
    std::optional<decision_id> last_republished_;
    std::optional<assignment> sent_;
    std::int64_t sent_ms_ = 0;          // when sent_ was decided (wall clock)
    std::int64_t highest_version_ = 0;  // of the decisions sent in this epoch
    static constexpr std::int64_t republish_after_ms = 2'000;
    bool due_ = true;                // decide() looks again even if the state did not change
    std::uint64_t seen_changes_ = 0;  // the state's change count decide() last looked at
    std::map<std::string, time_point, std::less<>> absent_since_;
};

}  // namespace strata::runtime::detail
