#pragma once
/// @file
/// @brief One instance on the coordination topic: it reads what every
/// instance and leader wrote there, publishes this instance's status (its
/// heartbeats have a thread of their own: heartbeats.hpp), and, while it
/// leads (the group made it the leader, or it succeeded a silent one), lists
/// the members and publishes the leader's decisions (the decisions
/// themselves: leader.hpp).
///
/// It refuses, before anything else of the instance starts, to run beside
/// a live process with the same instance id: see the constructor.

#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_log.hpp>
#include <strata/runtime/detail/group_watch.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/leader.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

class coordinator {
public:
    using clock = std::chrono::steady_clock;

    /// Reads the topic to its end and refuses to go on when another live
    /// process publishes statuses under this instance id.
    /// @param tasks the application's number of tasks (input partitions)
    /// @param rebalance_log called when the leader notices the membership change
    /// @throws usage_error naming both processes, for a duplicate instance id
    coordinator(const application_options& c, const std::string& topic, std::int32_t tasks,
                const std::function<void(std::int64_t)>& rebalance_log, metrics::registry& reg)
        : c_(&c),
          reader_(c.bootstrap_servers, topic, c.consumer_settings),
          writer_(c.bootstrap_servers, topic, writer_settings(c)),
          watch_(c.bootstrap_servers, c.group_name(), c.client_settings),
          leader_(leader_settings(c, tasks)),
          incarnation_(make_incarnation()),
          started_ms_(wall_clock_ms()),
          rebalance_log_(&rebalance_log),
          abandoned_(&reg.counter_for("strata_instance_group_describes_abandoned_total",
                                      "Requests for the group's members given up unanswered, and sent again",
                                      {{"instance", c.instance_id}})),
          successions_(&reg.counter_for("strata_instance_leader_successions_total",
                                        "Times this instance took over from a leader silent on the coordination topic",
                                        {{"instance", c.instance_id}})) {
        for (std::size_t r = 0; r < roles_.size(); ++r)
            roles_[r] = &reg.gauge_for("strata_instance_coordination_role",
                                       "1 for this instance's role: follower, claiming (elected, its claim not "
                                       "read back yet) or leader",
                                       {{"instance", c.instance_id}, {"role", role_names[r]}});
        reader_.watch_for_duplicates({c.instance_id, incarnation_, started_ms_});
        reader_.watch_own_heartbeats(c.instance_id);  // see read_own_heartbeat_after
        refuse_a_running_duplicate();
    }

    coordinator(const coordinator&) = delete;
    coordinator& operator=(const coordinator&) = delete;

    [[nodiscard]] const coordination_state& state() const noexcept { return reader_.state(); }
    [[nodiscard]] detail::leader& leader() noexcept { return leader_; }

    /// This instance's membership of the group, "" while it has none.
    [[nodiscard]] const std::string& member_id() const noexcept { return member_id_; }
    void set_member_id(std::string id) {
        member_id_ = std::move(id);
        status_dirty_ = true;
    }

    /// Reads what is new on the topic.
    /// @returns whether anything changed
    /// @throws usage_error when another process turned out to use this instance id
    bool read() {
        const bool changed = reader_.poll();
        throw_if_duplicate();
        return changed;
    }

    /// What the topic's writes came to since the last call.
    struct writes {
        bool acknowledged = false;  // the cluster acknowledged some: it is reachable
        bool lost = false;          // some failed (the partition's leader is down, say)
    };
    writes poll_writes() {
        writes w;
        if (const std::uint64_t acked = writer_.acknowledged(); acked != acknowledged_) {
            acknowledged_ = acked;
            w.acknowledged = true;
        }
        if (writer_.poll() > 0) {
            // Go on with what this instance owns, and publish again.
            w.lost = true;
            status_dirty_ = true;
            leader_.writes_lost();
        }
        return w;
    }

    /// The leader's part of one pass: it claims its epoch, watches the
    /// membership (at once when `group_changed`, else every 250 ms) and who
    /// is silent, and publishes a decision whenever one of them or a status
    /// changes it. A follower takes over from a silent leader here.
    void lead(clock::time_point now, bool group_changed) {
        const bool was_leading = leader_.leading();
        leader_.observe(reader_.state());
        if (leader_.succeed_if_silent(reader_.state(), now, member_id_)) {
            successions_->inc();
            next_describe_ = now;
            note([&] { return "succeeds the silent leader " + reader_.state().claim()->instance; });
        }
        publish_role();
        if (!leader_.elected()) {
            if (was_leading) note([] { return std::string("leads no more"); });
            return;
        }
        if (std::optional<leader_claim> c = leader_.claim_to_write()) writer_.publish(*c);
        leader_.observe(reader_.state());
        if (!leader_.leading()) return;
        if (!was_leading) note([&] { return "leads from epoch " + std::to_string(leader_.epoch()); });
        if (std::optional<std::vector<group_member>> m = watch_.poll()) {
            const std::optional<std::vector<group_member>> before = c_->on_note ? leader_.members() : std::nullopt;
            leader_.members_listed(std::move(*m), describe_sent_);
            if (leader_.members() && leader_.members() != before)
                note([&] { return "the group lists " + names_of(*leader_.members()); });
        }
        if (group_changed || now >= next_describe_) {
            if (watch_.request(now)) describe_sent_ = now;
            abandoned_->inc(watch_.abandoned() - abandoned_seen_);
            abandoned_seen_ = watch_.abandoned();
            next_describe_ = now + std::chrono::milliseconds(250);
        }
        // Decide only once the coordination topic is read to its end.
        if (!reader_.caught_up()) return;
        const std::vector<group_member> silent_before = c_->on_note ? leader_.silent() : std::vector<group_member>{};
        leader_.watch_liveness(reader_.state(), now);
        if (c_->on_note && leader_.silent() != silent_before)
            note([&] { return "silent on the coordination topic: " + names_of(leader_.silent()); });
        if (std::optional<assignment> a = leader_.decide(reader_.state(), wall_clock_ms())) {
            if (a->noticed_ms != noticed_ms_) {
                noticed_ms_ = a->noticed_ms;
                if (*rebalance_log_) (*rebalance_log_)(noticed_ms_);
            }
            note([&] { return "decides " + describe(*a); });
            writer_.publish(*a);
        }
        for (const std::string& gone : leader_.statuses_to_remove(reader_.state(), now)) writer_.remove_instance(gone);
    }

    /// A leader that stops decides once more, for the others, when it reads
    /// its withdrawal back: its tasks then move at once, not after the group
    /// has noticed it left (up to a heartbeat interval) and its successor
    /// has claimed and listed the members (a stop took 1.2 to 3.5 s so).
    /// Safe as any decision: it runs nothing now, the others still wait for
    /// each other's statuses, and a successor's claim outranks it.
    void decide_once_more() {
        if (!leader_.leading()) return;
        const auto deadline = clock::now() + std::chrono::seconds(2);
        while (!reader_.state().withdrew(c_->instance_id, member_id_)) {
            if (clock::now() >= deadline) return;
            (void)writer_.poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            (void)reader_.poll();
        }
        leader_.observe(reader_.state());
        if (!leader_.leading()) return;
        if (std::optional<assignment> a = leader_.decide(reader_.state(), wall_clock_ms())) {
            if (*rebalance_log_) (*rebalance_log_)(a->noticed_ms);
            note([&] { return "decides as it stops " + describe(*a); });
            writer_.publish(*a);
        }
    }

    /// A decision in one line, for notes: its id, members, and each task's
    /// active instance (standbys in brackets).
    [[nodiscard]] static std::string describe(const assignment& a) {
        std::string out = std::to_string(a.epoch) + "." + std::to_string(a.version) + " for";
        for (const std::string& m : a.members) out += " " + m;
        out += ":";
        for (const task_placement& t : a.tasks) {
            out += " " + std::to_string(t.task) + "=" + (t.active.empty() ? "-" : t.active);
            if (!t.release_from.empty()) out += "<" + t.release_from;
            if (!t.standbys.empty()) {
                out += "[";
                for (std::size_t i = 0; i < t.standbys.size(); ++i) out += (i ? "," : "") + t.standbys[i];
                out += "]";
            }
        }
        return out;
    }

    /// Hands on_note the line `make()` returns, prefixed with the instance
    /// id; builds it only when someone listens.
    template <class Make>
    void note(Make&& make) const {
        if (c_->on_note) c_->note(std::forward<Make>(make)());
    }

    /// The last decision this instance acted on (published with its status).
    void acted_on(decision_id id) {
        if (acted_ == id) return;
        acted_ = id;
        status_dirty_ = true;
    }

    /// Under exactly-once, the producers to fence before a task the
    /// decision `a` gives here restores (see handoff.hpp).
    [[nodiscard]] std::vector<fence_target> predecessors_to_fence(const assignment& a) const {
        return fence_targets(a, reader_.state(), c_->instance_id);
    }

    /// Whether this reader has read back a heartbeat of this instance sent
    /// after `steady_ms` (the heartbeats' clock, steady_clock in ms): the
    /// topic has one partition, so whatever was written before that
    /// heartbeat, a decision made while this instance was cut off included,
    /// has been read too.
    [[nodiscard]] bool read_own_heartbeat_after(std::int64_t steady_ms) const {
        const auto& h = reader_.state().own_read();
        return h.has_value() && h->sent_ms > steady_ms;
    }

    /// Names the instance whose processing thread this one is
    /// (application_options::processing_threads), in every status from now on.
    void set_process(std::string process) { process_ = std::move(process); }

    /// Publishes a status again at the next chance (its tasks changed).
    void status_changed() noexcept { status_dirty_ = true; }

    /// Whether a status is due: something changed, or 500 ms passed.
    [[nodiscard]] bool status_due(clock::time_point now) const noexcept {
        return status_dirty_ || now >= next_status_;
    }

    /// Publishes `s` as this instance's status, with its identity, membership
    /// and last decision filled in (the caller gives its tasks).
    void publish_status(instance_status s) {
        s.instance = c_->instance_id;
        s.member_id = member_id_;
        s.incarnation = incarnation_;
        s.started_ms = started_ms_;
        s.endpoint = c_->endpoint;
        s.published_ms = wall_clock_ms();
        s.acted_epoch = acted_.epoch;
        s.acted_version = acted_.version;
        s.process = process_;
        writer_.publish(s);
        status_dirty_ = false;
        next_status_ = clock::now() + std::chrono::milliseconds(500);
    }

    /// @brief Waits until what was published lands (at the end of a run).
    /// @returns false when something did not (it may be a publication an
    ///          outage of the coordination partition lost earlier)
    [[nodiscard]] bool flush() {
        try {
            writer_.flush();
            return true;
        } catch (const kafka::error&) {
            return false;
        }
    }

private:
    /// When the coordination topic's last word under this instance id is
    /// another process's, and not a withdrawal, that process crashed or
    /// still runs. Watch its statuses for a moment (it publishes every
    /// 500 ms): one that still runs is found before anything of this one
    /// (its producer) fences anything of it.
    void refuse_a_running_duplicate() {
        const auto deadline = clock::now() + c_->broker_timeout;
        while (!reader_.caught_up() && clock::now() < deadline) {
            (void)reader_.poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        const instance_status* last = reader_.state().status_of(c_->instance_id);
        if (last == nullptr || last->withdrawn || last->incarnation == incarnation_) return;
        publish_status({});
        const auto watch_until = clock::now() + std::chrono::milliseconds(1'500);
        while (clock::now() < watch_until) {
            (void)reader_.poll();
            throw_if_duplicate();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    [[nodiscard]] static std::string names_of(const std::vector<group_member>& ms) {
        std::string out;
        for (const group_member& m : ms) out += (out.empty() ? "" : " ") + m.instance;
        return out.empty() ? "none" : out;
    }

    void throw_if_duplicate() const {
        if (const auto& other = reader_.state().duplicates()->conflict())
            throw usage_error("strata::runtime: another process runs with instance id " + c_->instance_id +
                              " (incarnation " + other->incarnation + ", started at " +
                              std::to_string(other->started_ms) + " ms, endpoint '" + other->endpoint +
                              "'; this one: incarnation " + incarnation_ + ", started at " +
                              std::to_string(started_ms_) + " ms): every instance needs an id of its own. "
                              "This one, the later, stops");
    }

    [[nodiscard]] static std::string make_incarnation() {
        std::random_device rd;
        const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
        std::array<char, 17> hex{};
        (void)std::snprintf(hex.data(), hex.size(), "%016llx", static_cast<unsigned long long>(r));
        return hex.data();
    }

    static constexpr std::array<const char*, 3> role_names{"follower", "claiming", "leader"};

    void publish_role() {
        const std::size_t now = leader_.leading() ? 2 : leader_.elected() ? 1 : 0;
        for (std::size_t r = 0; r < roles_.size(); ++r) roles_[r]->set(r == now ? 1.0 : 0.0);
    }

    [[nodiscard]] static kafka::settings writer_settings(const application_options& c) {
        kafka::settings s = c.producer_settings;
        s.try_emplace("message.timeout.ms", std::to_string(c.broker_timeout.count()));
        return s;
    }

    [[nodiscard]] static leader_options leader_settings(const application_options& c, std::int32_t tasks) {
        leader_options o;
        o.instance = c.instance_id;
        o.tasks = tasks;
        o.standby_replicas = c.standby_replicas;
        o.acceptable_lag = c.acceptable_standby_lag;
        o.status_retention = std::max<std::chrono::milliseconds>(6 * c.session_timeout, std::chrono::minutes(1));
        o.liveness_timeout = c.liveness_timeout;
        return o;
    }

    const application_options* c_;
    coordination_reader reader_;
    coordination_writer writer_;
    group_watch watch_;
    detail::leader leader_;
    std::string incarnation_;  // unique to this run
    std::string process_;      // of a processing thread: its instance's id
    std::int64_t started_ms_;
    const std::function<void(std::int64_t)>* rebalance_log_;
    metrics::counter* abandoned_;
    metrics::counter* successions_;
    std::uint64_t abandoned_seen_ = 0;
    std::array<metrics::gauge*, 3> roles_{};

    std::string member_id_;
    decision_id acted_{};
    bool status_dirty_ = true;
    std::uint64_t acknowledged_ = 0;  // publications acknowledged so far
    std::int64_t noticed_ms_ = 0;
    clock::time_point describe_sent_{};
    clock::time_point next_describe_{};
    clock::time_point next_status_{};
};

}  // namespace strata::runtime::detail
