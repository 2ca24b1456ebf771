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

#include <strata/core/bytes.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/serde/all.hpp>
#include <strata/serde/encode.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata::runtime::detail {

inline constexpr std::string_view assignment_key = "assignment";
inline constexpr std::string_view leader_key = "leader";
inline constexpr std::string_view status_prefix = "status/";

[[nodiscard]] inline std::string status_key(std::string_view instance) {
    return std::string(status_prefix) + std::string(instance);
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

    /// @brief Takes the record at `offset` (value null: a tombstone).
    /// @returns whether what the instance acts on changed
    bool take(std::string_view key, std::optional<bytes_view> value, std::int64_t offset) {
        const std::optional<decision_id> written = last_written_;
        const bool changed = apply(key, value, offset);
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

    std::optional<assignment> latest_;
    std::optional<leader_claim> claim_;
    std::optional<decision_id> last_written_;
    std::int64_t epoch_ = 0;
    status_map statuses_;
    std::optional<duplicate_watch> duplicates_;
    std::uint64_t changes_ = 0;
};

}  // namespace strata::runtime::detail
