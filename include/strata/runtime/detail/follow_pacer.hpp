#pragma once
/// @file
/// @brief When the standbys' reader fetches: in a short window once an
/// interval, not all the time.
///
/// Why: the standbys of an instance follow their changelogs through one
/// consumer, whose fetch names every partition they follow (5,000 for 500
/// standby tasks of ten stores). A fetch that waits for records sits in the
/// broker's fetch purgatory, and the broker looks at every partition of it
/// again on each append to any of them (Kafka's DelayedFetch.tryComplete);
/// read committed, an append inside a transaction makes nothing readable,
/// so the fetch stays and is looked at again on the next append. With two
/// instances of 500 tasks starting on one broker, that took its request
/// threads (stack samples: DelayedFetch.tryComplete and readFromLog),
/// records waited past the transaction timeout, and every commit failed
/// (docs/benchmarks-runtime.md, "Scale"). Paced, the reader fetches for a
/// window once an interval and is paused between windows: no fetch of it
/// waits at the broker then.
///
/// Only from a number of standby partitions on
/// (application_options::standby_pacing_from_partitions, 1,000 by default):
/// paced, a standby, and the lag it reports, is up to an interval old, a
/// price worth paying only where the broker's load calls for it. The pacer
/// engages when the standbys followed reach that number and lets go (the
/// reader fetches all the time again) when they fall below it.
///
/// The restore thread drives it: before it looks at the standbys it
/// resumes fetching when the interval has passed (each standby's partition
/// sent to the offset its replay reads next: kafka::changelog_reader::
/// resume_at says why); after it looked at all of them at the window's end
/// it pauses again (records fetched and not yet taken in are dropped by a
/// pause, and fetched again next time). Windows opened by a timer of their
/// own would gain nothing: only the restore thread applies what was
/// fetched, so while it waits on the broker (an exactly-once takeover's
/// lookups) a standby falls behind whether its records wait in librdkafka's
/// queue or at the broker.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <utility>

namespace strata::runtime::detail {

class follow_pacer {
public:
    using clock = std::chrono::steady_clock;

    /// @param every   a window starts this often (0: no pacing, the reader
    ///                fetches all the time)
    /// @param window  how long fetching stays on in each
    /// @param pause   pauses (true) or resumes (false) the reader's fetching
    /// @param from    paces only while at least this many partitions are followed
    follow_pacer(std::chrono::milliseconds every, std::chrono::milliseconds window, std::function<void(bool)> pause,
                 std::size_t from = 0, clock::time_point now = clock::now())
        : every_(every), window_(std::min(window, every)), pause_(std::move(pause)), from_(from),
          window_end_(now + window_) {}

    /// @brief No pacing.
    follow_pacer() = default;

    /// @brief Whether the reader is paced now (engaged by the last before_look).
    [[nodiscard]] bool pacing() const noexcept { return engaged_; }

    /// @brief Before the standbys are looked at, with the number of
    /// partitions they follow: pacing engages or lets go (the reader
    /// fetches all the time again at once); paced, fetching starts again
    /// once the interval since the last window's start has passed.
    void before_look(clock::time_point now, std::size_t followed) {
        const bool was = engaged_;
        engaged_ = every_.count() > 0 && pause_ != nullptr && followed > 0 && followed >= from_;
        if (fetching_) {
            if (engaged_ && !was) window_end_ = now + window_;  // the first window starts now
            return;
        }
        if (!engaged_ || now >= resume_at_) {
            pause_(false);
            fetching_ = true;
            window_end_ = now + window_;
        }
    }

    /// @brief Whether this look ends the window: every standby is to take in
    /// what was fetched now, before after_look() pauses.
    [[nodiscard]] bool closing(clock::time_point now) const noexcept {
        return engaged_ && fetching_ && now >= window_end_;
    }

    /// @brief After the standbys were looked at: pauses once the window is over.
    void after_look(clock::time_point now) {
        if (!closing(now)) return;
        pause_(true);
        fetching_ = false;
        resume_at_ = window_end_ - window_ + every_;
        if (resume_at_ < now) resume_at_ = now;
    }

    /// @brief When the restore thread is to look again for the pacing's
    /// sake: the window's end, or the next window's start.
    [[nodiscard]] clock::time_point next_event() const noexcept { return fetching_ ? window_end_ : resume_at_; }

    [[nodiscard]] bool fetching() const noexcept { return fetching_; }

private:
    std::chrono::milliseconds every_{0};
    std::chrono::milliseconds window_{0};
    std::function<void(bool)> pause_;
    std::size_t from_ = 0;
    bool engaged_ = false;
    bool fetching_ = true;  // a reader fetches from the start
    clock::time_point window_end_{};
    clock::time_point resume_at_{};
};

}  // namespace strata::runtime::detail
