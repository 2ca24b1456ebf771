#pragma once
/// @file
/// @brief Detection of a silent instance through the coordination topic,
/// with no Kafka in it: the times, and why acting on them is safe.
///
/// Every member writes a heartbeat (coordination.hpp) every sixth of
/// `timeout`, from a thread of its own (heartbeats.hpp). A reader keeps, for each member (instance id and member id),
/// when it read the member's newest heartbeat and the broker's append time
/// on it (the topic is created with message.timestamp.type=LogAppendTime).
/// A member is **silent** when both say `timeout` passed since: the newest
/// append time read on the topic, from anyone, is `timeout` past the
/// member's, and the reader's own steady clock is `timeout` past the moment
/// it read it. The leader leaves silent members out of its decisions (their
/// tasks move at once, without waiting for the group's session timeout), and
/// followers succeed a silent leader (leader.hpp).
///
/// Why a member left out this way writes nothing any more:
/// - Under exactly-once, a task that moves fences the producers of every
///   instance the decision was not made for (handoff.hpp): whatever the
///   silent member still sends is refused.
/// - Under at-least-once nothing fences it, so it writes only within a lease
///   (lease.hpp) that each heartbeat renews until `sent + timeout - margin`,
///   `sent` on its own clock, once the member read it back at the end of the
///   topic under a decision that lists it (coordination_state::own_confirmed
///   says why not at once, and why not on its delivery report; handoff.hpp
///   why the next owner waits for silence in its own reading). The heartbeat was
///   appended after it was sent, and the leader acts only once `timeout`
///   has passed since that append on the broker's clock and since it read
///   it on its own: by then the lease has run out for `margin`, and what the
///   member's producer held when it ran out has landed or failed (its
///   message.timeout.ms is at most `margin`; but see below). Either clock alone suffices
///   for this; both must agree so that a leader that stalled (and reads a
///   backlog late) or a broker clock that jumps does not declare a live
///   member silent.
/// - A member that was only cut off (a network partition, a long pause) lets
///   go of its tasks without a commit once its lease has run out (it may
///   have been left out of a decision it cannot read), and is put back in
///   the next decision once its heartbeats land again.
/// - What a client's timeout cannot bound: librdkafka fails a record past
///   message.timeout.ms only at a scan of its queues (once a second, and
///   after a reconnection) and sends one found expired at send time anyway,
///   with 100 ms to land; and a cut-off host's kernel may deliver bytes it
///   held once the network is back. docs/runtime.md ("What the producer
///   holds") says what is left open under at-least-once and what closes it.
/// - The price under at-least-once: while the coordination partition has no
///   leader, no heartbeat lands, and processing pauses until it is back (an
///   instance cannot tell that from being cut off from it alone). Under
///   exactly-once nothing pauses.

#include <algorithm>
#include <chrono>

namespace strata::runtime::detail {

struct liveness {
    /// Silence after which a member is left out.
    std::chrono::milliseconds timeout{0};

    /// How often a member writes its heartbeat.
    [[nodiscard]] constexpr std::chrono::milliseconds heartbeat_interval() const noexcept {
        return std::max<std::chrono::milliseconds>(timeout / 6, std::chrono::milliseconds(10));
    }
    /// What the at-least-once lease keeps short of `timeout`, and so the
    /// longest a record may stay unsettled in the producer.
    [[nodiscard]] constexpr std::chrono::milliseconds margin() const noexcept { return timeout / 3; }
};

}  // namespace strata::runtime::detail
