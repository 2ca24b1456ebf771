#pragma once
/// @file
/// @brief The instance's heartbeats on the coordination topic, on a thread
/// of their own (liveness.hpp says what they are for).
///
/// The processing thread may be busy for longer than a heartbeat interval:
/// a batch of slow records, a commit waiting for the group coordinator, a
/// release. Heartbeats written from it went quiet then, and under
/// at-least-once its lease ran out, so that a loaded instance let go of its
/// tasks again and again. Here a thread writes them every sixth of
/// `liveness_timeout` with a producer of its own, reads the topic with a
/// reader of its own, and renews the heartbeats' lease when it reads one
/// back at the end of the topic under a decision that lists the member
/// (coordination_state::own_confirmed). The processing thread reads the
/// lease (`until`), and `lapses` counts the renewals that came after it had
/// run out: the tasks may have run elsewhere in between, so the instance
/// lets go of them.
///
/// Two Kafka clients per instance, whatever its tasks.

#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_log.hpp>
#include <strata/runtime/detail/lease.hpp>
#include <strata/runtime/detail/liveness.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace strata::runtime::detail {

class heartbeat_keeper {
public:
    using clock = std::chrono::steady_clock;

    heartbeat_keeper(const application_options& c, const std::string& topic)
        : instance_(c.instance_id), liveness_{c.liveness_timeout},
          writer_(c.bootstrap_servers, topic, writer_settings(c)),
          reader_(c.bootstrap_servers, topic, c.consumer_settings) {
        reader_.watch_own_heartbeats(instance_);
        thread_ = std::thread([this] { run(); });
    }
    heartbeat_keeper(const heartbeat_keeper&) = delete;
    heartbeat_keeper& operator=(const heartbeat_keeper&) = delete;
    ~heartbeat_keeper() {
        stop_.store(true);
        thread_.join();
    }

    /// @brief The membership heartbeats are written for ("" : none). A new
    /// one earns its own lease.
    void set_member(const std::string& member_id) {
        const std::lock_guard lock(mutex_);
        if (member_id == member_) return;
        member_ = member_id;
        lease_.reset();
        until_.store(0);
        next_ = {};
    }

    /// @brief Until when the heartbeats' lease holds (steady clock).
    [[nodiscard]] clock::time_point until() const noexcept { return clock::time_point(clock::duration(until_.load())); }
    /// @brief Renewals that came after the lease had run out, so far.
    [[nodiscard]] std::uint64_t lapses() const noexcept { return lapses_.load(); }
    /// @brief What stopped the thread (the coordination topic gone, say), if anything did.
    [[nodiscard]] std::exception_ptr failure() const {
        const std::lock_guard lock(mutex_);
        return failure_;
    }

private:
    void run() {
        try {
            while (!stop_.load()) {
                beat();
                (void)writer_.poll();
                (void)reader_.poll();
                renew();
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        } catch (...) {
            const std::lock_guard lock(mutex_);
            failure_ = std::current_exception();
        }
    }

    void beat() {
        const auto now = clock::now();
        std::string member;
        {
            const std::lock_guard lock(mutex_);
            if (member_.empty() || now < next_) return;
            member = member_;
            next_ = now + liveness_.heartbeat_interval();
        }
        const auto sent = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
        writer_.publish(heartbeat{instance_, member, sent});
    }

    void renew() {
        const auto& own = reader_.state().own_confirmed();
        if (!own) return;
        const std::lock_guard lock(mutex_);
        if (own->member_id != member_ || own->sent_ms <= confirmed_ms_) return;
        confirmed_ms_ = own->sent_ms;
        // A renewal after the lease ran out (not the first of this membership) is a lapse.
        if (lease_.until() != clock::time_point{} && !lease_.valid(clock::now())) lapses_.fetch_add(1);
        lease_.confirmed(clock::time_point(std::chrono::milliseconds(own->sent_ms)));
        until_.store(lease_.until().time_since_epoch().count());
    }

    [[nodiscard]] static kafka::settings writer_settings(const application_options& c) {
        kafka::settings s = c.producer_settings;
        // A heartbeat that has not landed within the liveness timeout says nothing any more.
        s.try_emplace("message.timeout.ms", std::to_string(std::max<std::int64_t>(c.liveness_timeout.count(), 100)));
        return s;
    }

    std::string instance_;
    liveness liveness_;
    coordination_writer writer_;
    coordination_reader reader_;
    mutable std::mutex mutex_;
    std::string member_;            // under mutex_
    clock::time_point next_{};      // under mutex_: the next heartbeat
    std::int64_t confirmed_ms_ = 0;  // under mutex_: the newest heartbeat that renewed the lease
    lease lease_{liveness_.timeout, liveness_.margin()};  // under mutex_; until_ publishes its end
    std::exception_ptr failure_;    // under mutex_
    std::atomic<clock::rep> until_{0};
    std::atomic<std::uint64_t> lapses_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace strata::runtime::detail
