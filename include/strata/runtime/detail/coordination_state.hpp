#pragma once
/// @file
/// @brief What an instance knows from the coordination topic, built record
/// by record in log order, with no Kafka in it (so that it is tested alone
/// and driven by the simulation as it is by the real reader).
///
/// Three kinds of records, by key:
/// - `leader`: a leader_claim. Its offset + 1 is the epoch of the
///   claimant's decisions. Every reader sees the claims in the same order, so all agree
///   on the newest epoch.
/// - `assignment`: a decision. Taken only from the newest epoch, and only
///   when newer than the one in hand: a paused leader that wakes up and
///   decides again is ignored by everyone, and so is a decision that
///   compaction kept because it was written last (the leader republishes,
///   see leader.hpp).
/// - `status/<instance>`: an instance_status; null (a tombstone) when the
///   leader removed the status of an instance long gone.
/// - `alive/<instance>`: a heartbeat. It changes nothing an instance acts
///   on by itself; it says when the member was last heard of (liveness.hpp).

#include <strata/core/bytes.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/serde/all.hpp>
#include <strata/serde/encode.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

inline constexpr std::string_view assignment_key = "assignment";
inline constexpr std::string_view leader_key = "leader";
inline constexpr std::string_view status_prefix = "status/";
inline constexpr std::string_view heartbeat_prefix = "alive/";

/// @brief When a record was written and read: the broker's append time
/// (-1: unknown, the topic keeps the producers' times) and the reader's
/// steady clock when it took the record.
struct record_time {
    std::int64_t broker_ms = -1;
    std::chrono::steady_clock::time_point read_at{};
};

[[nodiscard]] inline std::string status_key(std::string_view instance) {
    return std::string(status_prefix) + std::string(instance);
}
[[nodiscard]] inline std::string heartbeat_key(std::string_view instance) {
    return std::string(heartbeat_prefix) + std::string(instance);
}

/// @brief Sees a second live process with this process's instance id: a
/// status under its key from another incarnation, written after this one's
/// own first status, twice (a killed predecessor's last write may still land
/// once). Of the two, the one that started later gives way.
class duplicate_watch {
public:
    duplicate_watch(std::string instance, std::string incarnation, std::int64_t started_ms)
        : instance_(std::move(instance)), incarnation_(std::move(incarnation)), started_ms_(started_ms) {}

    [[nodiscard]] const std::string& instance() const noexcept { return instance_; }

    void saw(const instance_status& s) {
        if (s.incarnation == incarnation_) {
            announced_ = true;
            return;
        }
        if (!announced_ || s.withdrawn) return;
        if (++others_[s.incarnation] < 2) return;
        if (std::pair(s.started_ms, s.incarnation) < std::pair(started_ms_, incarnation_)) conflict_ = s;
    }
    /// @brief The other process's status, when this one must give way.
    [[nodiscard]] const std::optional<instance_status>& conflict() const noexcept { return conflict_; }

private:
    std::string instance_;
    std::string incarnation_;
    std::int64_t started_ms_;
    bool announced_ = false;
    std::map<std::string, int, std::less<>> others_;
    std::optional<instance_status> conflict_;
};

class coordination_state {
public:
    /// @brief Watches for another live process with this instance id.
    void watch_for_duplicates(duplicate_watch w) { duplicates_.emplace(std::move(w)); }
    [[nodiscard]] const std::optional<duplicate_watch>& duplicates() const noexcept { return duplicates_; }

    using status_map = std::map<std::string, instance_status, std::less<>>;

    /// @brief Takes the record at `offset` (value null: a tombstone),
    /// written and read at `t`.
    /// @returns whether what the instance acts on changed
    bool take(std::string_view key, std::optional<bytes_view> value, std::int64_t offset, record_time t = {}) {
        if (t.broker_ms > broker_now_ms_) broker_now_ms_ = t.broker_ms;
        if (key.substr(0, heartbeat_prefix.size()) == heartbeat_prefix) {
            heard(key.substr(heartbeat_prefix.size()), value, t);
            return false;  // heartbeats are many and change no decision by themselves
        }
        const std::optional<decision_id> written = last_written_;
        const bool changed = apply(key, value, offset);
        if (key == leader_key && value) claim_time_ = t;
        if (changed || last_written_ != written) ++changes_;
        return changed;
    }

    /// @brief Counts the changes taken (a stale decision written last
    /// counts too): equal counts, equal state.
    [[nodiscard]] std::uint64_t changes() const noexcept { return changes_; }

    /// @brief The newest decision of the newest epoch that made one.
    [[nodiscard]] const std::optional<assignment>& latest() const noexcept { return latest_; }
    /// @brief The newest epoch (the offset of the newest claim + 1; 0: none yet).
    [[nodiscard]] std::int64_t epoch() const noexcept { return epoch_; }
    [[nodiscard]] const std::optional<leader_claim>& claim() const noexcept { return claim_; }

    /// @brief The id of the decision written last, whatever its epoch: when
    /// it is not the newest one, compaction may keep only it.
    [[nodiscard]] const std::optional<decision_id>& last_written() const noexcept { return last_written_; }
    [[nodiscard]] const status_map& statuses() const noexcept { return statuses_; }

    [[nodiscard]] const instance_status* status_of(std::string_view instance) const {
        const auto it = statuses_.find(instance);
        return it == statuses_.end() ? nullptr : &it->second;
    }
    /// @brief Whether the member `member_id` of `instance` has been silent
    /// for `timeout` at `now` (liveness.hpp): heard of before, and both the
    /// broker's append times and the reader's clock say so. A member never
    /// heard of is not silent: the group's session timeout covers it.
    [[nodiscard]] bool silent(std::string_view instance, std::string_view member_id,
                              std::chrono::steady_clock::time_point now, std::chrono::milliseconds timeout) const {
        if (timeout.count() <= 0) return false;
        const auto it = heard_.find(std::pair<std::string, std::string>(instance, member_id));
        return it != heard_.end() && silent_since(it->second, now, timeout);
    }
    /// @brief Whether the leader of the newest claim has been silent for
    /// `timeout`: its claim counts as a sign of life too (a claimant killed
    /// before any of its heartbeats was read is silent all the same).
    [[nodiscard]] bool leader_silent(std::chrono::steady_clock::time_point now, std::chrono::milliseconds timeout) const {
        if (!claim_ || timeout.count() <= 0) return false;
        const auto it = heard_.find(std::pair<std::string, std::string>(claim_->instance, claim_->member_id));
        return silent_since(claim_time_, now, timeout) && (it == heard_.end() || silent_since(it->second, now, timeout));
    }
    /// @brief The members heard of lately (not silent at `now`), by
    /// instance id and member id, ascending.
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> heard_lately(std::chrono::steady_clock::time_point now,
                                                                               std::chrono::milliseconds timeout) const {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& [who, t] : heard_)
            if (timeout.count() <= 0 || !silent_since(t, now, timeout)) out.push_back(who);
        return out;
    }

    /// @brief Reads this process's own heartbeats back (liveness.hpp): see own_heartbeat().
    void watch_own_heartbeats(std::string instance) { self_ = std::move(instance); }
    /// @brief This instance's newest heartbeat read back, as of the last
    /// time the reader reached the end of the topic (reached_end()) with a
    /// decision in hand that lists this member and was written last: its
    /// member id and when it was sent.
    ///
    /// Why at the end: compaction removes a decision once a newer one is
    /// written, so a reader behind may read its heartbeat after a decision
    /// that left it out without ever seeing that decision. At the end it
    /// holds the newest decision there is, which compaction never removes;
    /// and one that left the member out was written after every heartbeat
    /// that renewed the lease, so its next owner waits for silence
    /// (handoff.hpp). With a stale decision written last (a paused leader's),
    /// the decision in hand may not be the newest valid one: nothing renews
    /// until the leader writes its decision again (leader.hpp). A newer claim
    /// without a decision yet renews like the decision in hand: whatever its
    /// leader decides comes after the heartbeat, as above (a leader change
    /// would otherwise end every lease while the new leader lists the members).
    struct own_heartbeat {
        std::string member_id;
        std::int64_t sent_ms = 0;
    };
    [[nodiscard]] const std::optional<own_heartbeat>& own_confirmed() const noexcept { return own_; }
    /// @brief This instance's newest heartbeat read back, whatever came after it.
    [[nodiscard]] const std::optional<own_heartbeat>& own_read() const noexcept { return own_read_; }

    /// @brief The reader read everything there is: see own_confirmed().
    void reached_end() {
        if (!own_read_ || !latest_ || last_written_ != latest_->id()) return;
        const std::string* m = latest_->member_id_of(self_);
        if (m != nullptr && *m == own_read_->member_id) own_ = own_read_;
    }

    /// @brief Whether the member `member_id` of `instance` said it left.
    [[nodiscard]] bool withdrew(std::string_view instance, std::string_view member_id) const {
        const instance_status* s = status_of(instance);
        return s != nullptr && s->withdrawn && s->member_id == member_id;
    }

private:
    bool apply(std::string_view key, std::optional<bytes_view> value, std::int64_t offset) {
        try {
            if (key == leader_key) {
                if (!value) return false;
                claim_ = decode<leader_claim>(*value);
                epoch_ = offset + 1;  // from 1: epoch 0 means none
                return true;
            }
            if (key == assignment_key) {
                if (!value) return false;
                assignment a = decode<assignment>(*value);
                last_written_ = a.id();
                if (a.epoch != epoch_) return false;  // a leader that lost its epoch, or never had one
                if (latest_ && a.id() <= latest_->id()) return false;
                latest_ = std::move(a);
                return true;
            }
            if (key.substr(0, status_prefix.size()) == status_prefix) {
                const std::string_view instance = key.substr(status_prefix.size());
                if (!value) return statuses_.erase(std::string(instance)) > 0;
                instance_status s = decode<instance_status>(*value);
                if (s.instance != instance) return false;  // not a status we can trust
                if (duplicates_ && duplicates_->instance() == instance) duplicates_->saw(s);
                statuses_.insert_or_assign(std::string(instance), std::move(s));
                return true;
            }
        } catch (const serde_error&) {
            // Written by another version, or damaged: not ours to act on.
        }
        return false;
    }

    bool silent_since(const record_time& t, std::chrono::steady_clock::time_point now,
                      std::chrono::milliseconds timeout) const {
        if (now - t.read_at < timeout) return false;
        return t.broker_ms < 0 || broker_now_ms_ - t.broker_ms >= timeout.count();
    }

    void heard(std::string_view instance, std::optional<bytes_view> value, record_time t) {
        if (!value) {  // the leader removed a long-gone instance's records
            std::erase_if(heard_, [&](const auto& e) { return e.first.first == instance; });
            return;
        }
        try {
            const heartbeat h = decode<heartbeat>(*value);
            if (h.instance != instance) return;
            heard_.insert_or_assign({h.instance, h.member_id}, t);
            if (!self_.empty() && h.instance == self_) own_read_ = own_heartbeat{h.member_id, h.sent_ms};
        } catch (const serde_error&) {
            // Written by another version, or damaged: not a sign of life we can read.
        }
    }

    std::optional<assignment> latest_;
    std::optional<leader_claim> claim_;
    record_time claim_time_;  // when the newest claim was written and read
    std::map<std::pair<std::string, std::string>, record_time> heard_;  // newest heartbeat of each member
    std::int64_t broker_now_ms_ = -1;
    std::string self_;                   // whose heartbeats renew a lease when read back
    std::optional<own_heartbeat> own_read_;  // the newest read
    std::optional<own_heartbeat> own_;       // ... as of the last reached_end() that found it a member
    std::optional<decision_id> last_written_;
    std::int64_t epoch_ = 0;
    status_map statuses_;
    std::optional<duplicate_watch> duplicates_;
    std::uint64_t changes_ = 0;
};

}  // namespace strata::runtime::detail
