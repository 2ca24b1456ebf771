#pragma once
/// @file
/// @brief The producer of one instance: plain under at-least-once, or
/// transactional under exactly-once with the transactional id
/// `<application_id>-<instance_id>`, and its renewal after it was fenced.
///
/// Every task's changelogs and outputs write through it, and the committer
/// commits its transactions (kafka_commit_port.hpp). After a fencing the
/// instance drops every task (each holds the fenced producer), calls
/// `renew()`, and the tasks restore again on the new one.
///
/// Under at-least-once nothing fences it, so the lease does (lease.hpp): a
/// record is enqueued only while `may_write` holds, and it lands or fails
/// within the lease's margin (message.timeout.ms), so nothing of a paused
/// instance lands after its successor's first write.

#include <strata/kafka/error.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/lease.hpp>
#include <strata/runtime/detail/liveness.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief The longest a record may stay unsettled under at-least-once: the
/// heartbeats' lease margin (liveness.hpp), and never more than the
/// group's (lease.hpp).
[[nodiscard]] inline std::chrono::milliseconds at_least_once_delivery_bound(const application_options& c) {
    return std::min(lease::delivery_bound(c.session_timeout), liveness{c.liveness_timeout}.margin());
}

class instance_producer {
public:
    using clock = std::chrono::steady_clock;

    /// Starts the producer (and its first transaction, under exactly-once).
    /// `may_write`: under at-least-once, asked before each record (the lease).
    explicit instance_producer(const application_options& c, std::function<bool()> may_write = {})
        : c_(&c), may_write_(std::move(may_write)), eos_mode_(c.guarantee == processing_guarantee::exactly_once) {
        start();
    }

    instance_producer(const instance_producer&) = delete;
    instance_producer& operator=(const instance_producer&) = delete;

    /// Whether it runs under exactly-once (so it still says after a renewal failed).
    [[nodiscard]] bool exactly_once() const noexcept { return eos_mode_; }

    /// The producer as it is now (it changes in `renew()`; none after a
    /// renewal that failed, when the instance stops).
    [[nodiscard]] const std::shared_ptr<kafka::producer>& get() const noexcept { return producer_; }

    /// Under exactly-once only.
    [[nodiscard]] kafka::exactly_once& transaction() { return *eos_; }

    /// "" under at-least-once.
    [[nodiscard]] std::string transactional_id() const {
        return eos_mode_ ? transactional_id_of(*c_) : std::string();
    }

    [[nodiscard]] static std::string transactional_id_of(const application_options& c) {
        return c.group_name() + "-" + c.instance_id;
    }

    /// Whether the transactional producer was fenced: another instance took
    /// over a task of this one, or a process started with its instance id.
    [[nodiscard]] bool fenced() const {
        if (!eos_ || !producer_) return false;
        std::array<char, 256> why{};
        const rd_kafka_resp_err_t err = rd_kafka_fatal_error(producer_->get(), why.data(), why.size());
        return err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
               err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
    }

    /// Whether the producer must be made anew: fenced, or its transaction
    /// could be neither completed nor aborted (see kafka::exactly_once).
    [[nodiscard]] bool needs_renewal() const {
        return fenced() || (eos_ && eos_->needs_new_producer());
    }

    /// A new producer takes the transactional id back. Nothing may hold the
    /// old one's transaction any more.
    /// @throws kafka::error after more than 10 renewals within a minute:
    ///         another process runs with this instance id, most likely; or
    ///         what the new producer's start threw (under exactly-once its
    ///         initialization asks the broker, which may be away): the
    ///         instance then stops, and abandon() and settle() have nothing
    ///         to do (a broker that died under a renewal made settle() read
    ///         the producer that was gone, and the process crashed)
    void renew(clock::time_point now = clock::now()) {
        std::erase_if(renewals_, [&](clock::time_point t) { return now - t > std::chrono::minutes(1); });
        renewals_.push_back(now);
        if (renewals_.size() > 10)
            throw kafka::error("strata::runtime: the producer of " + c_->instance_id +
                                   " was fenced more than 10 times within a minute: is another process "
                                   "running with instance id " + c_->instance_id + "?",
                               RD_KAFKA_RESP_ERR__FENCED);
        eos_.reset();
        producer_.reset();
        start();
    }

    /// At-least-once, before tasks are let go of or rebuilt: waits until
    /// every record handed to the producer has landed or failed
    /// (message.timeout.ms bounds it), so that no record of theirs lands
    /// after the next owner (or the rebuilt task) has read their changelogs.
    /// A release whose commit went out waited already; one whose commit was
    /// held (the lease had run out) or not sent did not. Nothing to do under
    /// exactly-once: the transaction was aborted, and fencing stops the rest.
    /// @throws kafka::error records still unsettled after four times
    ///         the message timeout and 2 s (librdkafka no longer serves its queue)
    void settle() {
        if (eos_mode_ || !producer_) return;
        // librdkafka looks for queued records past their timeout once a
        // second: with the 200 ms timeout of a 600 ms liveness_timeout, a
        // record queued for a broker that just died fails a second or more
        // after it was due (the chaos campaign's coordinator kill saw this
        // bound without the 2 s stop an instance).
        const auto until = clock::now() + 4 * delivery_timeout_ + std::chrono::seconds(2);
        while (rd_kafka_outq_len(producer_->get()) > 0) {
            if (clock::now() >= until)
                throw kafka::error("strata::runtime: records of the producer neither landed nor failed within "
                                   "four times its message timeout and 2 s",
                                   RD_KAFKA_RESP_ERR__TIMED_OUT);
            (void)rd_kafka_flush(producer_->get(), 100);
        }
    }

    /// Aborts the open transaction, if any. A fenced or failed producer's
    /// transaction ends with it.
    void abandon() noexcept {
        if (!eos_) return;
        try {
            eos_->abort();
        } catch (...) {
        }
    }

    /// Aborts the open transaction (if any) and opens the next one.
    void abandon_and_begin() {
        if (!eos_) return;
        abandon();
        eos_->begin();
    }

private:
    void start() {
        kafka::producer_options o;
        o.bootstrap_servers = c_->bootstrap_servers;
        o.extra = c_->producer_settings;
        auto delivery_timeout = c_->broker_timeout;
        if (eos_mode_) delivery_timeout = std::min(delivery_timeout, c_->transaction_timeout);  // librdkafka requires it
        else delivery_timeout = std::min(delivery_timeout, at_least_once_delivery_bound(*c_));
        if (const auto it = o.extra.find("message.timeout.ms"); it == o.extra.end()) {
            o.extra["message.timeout.ms"] = std::to_string(delivery_timeout.count());
            delivery_timeout_ = delivery_timeout;
        } else {
            delivery_timeout_ = std::chrono::milliseconds(std::strtoll(it->second.c_str(), nullptr, 10));
            if (!eos_mode_ && delivery_timeout_ > delivery_timeout)
                c_->warn("producer_settings message.timeout.ms=" + it->second + " is over " +
                         std::to_string(delivery_timeout.count()) +
                         " ms (a third of liveness_timeout, at most a fifth of session_timeout): records an "
                         "instance queued before a pause may land after "
                         "another instance took its tasks over, and undo that instance's changelog writes");
        }
        if (eos_mode_) {
            o.transactional_id = transactional_id_of(*c_);
            o.extra["transaction.timeout.ms"] = std::to_string(c_->transaction_timeout.count());
            eos_.emplace(std::move(o), c_->broker_timeout);
            producer_ = eos_->shared_producer();
            eos_->begin();
        } else {
            o.may_write = may_write_;
            o.refusal = "the group has not confirmed this instance a member lately (its at-least-once lease ran out)";
            producer_ = std::make_shared<kafka::producer>(std::move(o));
        }
    }

    const application_options* c_;
    std::function<bool()> may_write_;
    bool eos_mode_;
    std::chrono::milliseconds delivery_timeout_{};  // its message.timeout.ms
    std::optional<kafka::exactly_once> eos_;
    std::shared_ptr<kafka::producer> producer_;
    std::vector<clock::time_point> renewals_;  // in the last minute
};

}  // namespace strata::runtime::detail
