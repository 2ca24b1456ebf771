#pragma once
/// @file
/// @brief The at-least-once lease, with no Kafka in it (the instance and
/// the simulation both keep it).
///
/// Under at-least-once nothing fences an instance the group expelled: a
/// process paused past its session wakes up believing it owns its tasks.
/// So it may write (process, punctuate, commit) only within a lease: until
/// a session timeout, less a margin, after it sent the last offset commit
/// the group coordinator accepted. An accepted commit renews the member's
/// session (the classic group protocol does so in a Stable or
/// PreparingRebalance group), so the coordinator cannot expel the member,
/// nor the leader move its tasks, before the lease ends. Its commits renew
/// the lease; when none is due, the instance commits something that nothing
/// reads, a third of a session before the end.
///
/// The lease stops what the instance hands its producer, not what the
/// producer already holds: a record queued before a pause would go out
/// after it, when another instance may run the task and write its
/// changelog. So under at-least-once a record must land or fail within
/// the lease's margin (`delivery_bound`, librdkafka's message.timeout.ms):
/// enqueued before the lease ends, it is settled before the coordinator
/// can have expelled the member (a session after the commit was sent),
/// and so before any other instance writes for the task.
///
/// A lease of the same kind runs on the coordination topic's heartbeats
/// (liveness.hpp, heartbeats.hpp): each heartbeat read back renews it until
/// its sending plus `liveness_timeout` less a third of it. The runtime's
/// instances have heartbeats, and that lease replaces this one
/// (committer.hpp says why); records settle within its margin.

#include <algorithm>
#include <chrono>

namespace strata::runtime::detail {

class lease {
public:
    using time_point = std::chrono::steady_clock::time_point;

    explicit lease(std::chrono::milliseconds session) : lease(session, margin_of(session)) {}
    /// @brief A lease of `length` from each confirmation, less `margin`.
    lease(std::chrono::milliseconds length, std::chrono::milliseconds margin) : session_(length), margin_(margin) {}

    /// @brief What a lease keeps short of a session: a fifth, at least 200 ms.
    [[nodiscard]] static constexpr std::chrono::milliseconds margin_of(std::chrono::milliseconds session) noexcept {
        return std::max<std::chrono::milliseconds>(session / 5, std::chrono::milliseconds(200));
    }
    /// @brief The longest an at-least-once write may stay unsettled (see above).
    [[nodiscard]] static constexpr std::chrono::milliseconds delivery_bound(std::chrono::milliseconds session) noexcept {
        return margin_of(session);
    }

    /// @brief A commit (a heartbeat) sent at `sent` was accepted.
    void confirmed(time_point sent) { until_ = std::max(until_, sent + session_ - margin_); }
    /// @brief A new membership: it earns its own lease.
    void reset() { until_ = {}; }

    [[nodiscard]] bool valid(time_point now) const noexcept { return now < until_; }
    /// @brief Whether a renewal is due: a third of a session or less is left.
    [[nodiscard]] bool renewal_due(time_point now) const noexcept { return now >= until_ - session_ / 3; }
    [[nodiscard]] time_point until() const noexcept { return until_; }

private:
    std::chrono::milliseconds session_;
    std::chrono::milliseconds margin_;
    time_point until_{};
};

}  // namespace strata::runtime::detail
