#pragma once
// A deterministic simulation of the runtime's coordination: a compacted
// coordination log, a group coordinator (members, session timeouts, the
// leader as the holder of the coordination partition), a network that
// delays each producer's writes, and instances that run the real parts
// (coordination_state, leader, assignor, plan_handoff) and are killed,
// paused, stopped and restarted at times a seeded generator picks. One
// thread, no clock, no sockets: a seed replays exactly.
//
// Every instance also writes heartbeats to the coordination log, which
// stamps each record with the broker's clock (the simulation's), and the
// leader leaves out members silent for `liveness_timeout`, followers succeed
// a silent leader (detail/liveness.hpp). A fault cuts an instance off from
// the coordination log alone (its reads stop, its writes wait) while its
// data writes and its group heartbeats go on: the case the heartbeats'
// lease is for.
//
// Invariants checked after every step:
// - I1 (leases): no task is held by two instances that both hold valid
//   leases, awake or paused.
// - I1 (writes): no task may be written by two instances: an instance
//   writes only while awake, holding the task, and within its lease (the
//   runtime's at-least-once lease on its heartbeats, detail/liveness.hpp:
//   the liveness timeout less a third after it sent the last heartbeat it
//   read back at the end of the log under a decision listing it; the
//   group's session lease, detail/lease.hpp, is renewed here as in the
//   runtime without a say). An instance left out that has not heard of it
//   yet (a zombie) may still hold a task another member runs: that is
//   measured in `zombie_overlap_ms`, and is harmless as long as its lease
//   stops its writes.
// - I1 (landed writes): a task's data writes (its changelog and outputs)
//   land only while their run of the task is its newest: none lands once
//   a member of the group has started another run of it (and restored
//   from the changelog without it). A write is handed to the producer only
//   within the lease, and lands or fails within `write_timeout` (the
//   runtime's message.timeout.ms under at-least-once, lease::delivery_bound):
//   a record queued before a pause goes out after it, unless it timed out
//   meanwhile (librdkafka scans for timeouts before it sends again).
// - I4: no two decisions with one id differ (no forks of the decision
//   history).
// - I5 (at the end, after the faults stop): every task is active on exactly
//   one live instance, the one the newest decision names, and every
//   instance acts on that decision.

#include <strata/core/bytes.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/detail/coordination_state.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/leader.hpp>
#include <strata/runtime/detail/lease.hpp>
#include <strata/runtime/detail/liveness.hpp>
#include <strata/serde/encode.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace simulation {

namespace rtd = strata::runtime::detail;
using ms = std::int64_t;

/// splitmix64: the same numbers on every platform and standard library.
class random {
public:
    explicit random(std::uint64_t seed) : s_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    ms between(ms lo, ms hi) { return lo + static_cast<ms>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
    bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }

private:
    std::uint64_t s_;
};

/// A fault of a process, planned ahead of a run (see plan_faults): a
/// topology's sub-topologies are groups of their own whose members share
/// processes, so one kill, pause or stop hits a member of every group.
struct planned_fault {
    ms at;
    int instance;  ///< index into the world's instances
    int kind;      ///< as world::fault draws it: 0 kill, 1-2 pause, 3 stop, 4 cut off from the coordination log
    ms length;     ///< of a pause or a cut; after a kill, until the process restarts
};

struct config {
    int instances = 3;
    std::int32_t tasks = 4;
    int standby_replicas = 1;
    ms session_timeout = 1'000;
    ms heartbeat_interval = 100;
    ms describe_interval = 250;
    /// A request for the members unanswered this long is given up and sent
    /// again (detail::group_watch::retry_after, 2 s against a 6 s session
    /// in the runtime's defaults, scaled here like the session).
    ms describe_retry = 400;
    ms status_interval = 500;
    /// Silence on the coordination log after which a member is left out
    /// (the runtime's 600 ms against a 10 s session, kept below the
    /// simulation's session).
    ms liveness_timeout = 300;
    /// The naive renewal, for the test that shows it unsafe: a heartbeat
    /// renews the lease when it lands (as its delivery report says), not
    /// when it is read back after no decision that left the member out.
    bool renew_on_delivery = false;
    ms fault_until = 8'000;  ///< faults happen before this
    ms end = 14'000;         ///< quiet from fault_until to here: everything must settle
    int fault_percent = 2;   ///< chance of a fault per instance step
    /// How long a data write may stay unsettled: the runtime's bound (the
    /// smaller margin of the two leases), scaled like the session.
    ms write_timeout = std::min(rtd::lease::delivery_bound(std::chrono::milliseconds(1'000)),
                                rtd::liveness{std::chrono::milliseconds(300)}.margin())
                           .count();
    /// Faults from a plan (the same for every group of a topology) instead
    /// of drawn as the run goes; empty: drawn.
    std::vector<planned_fault> plan{};
};

struct record {
    std::string key;
    std::optional<strata::byte_buffer> value;
    std::int64_t offset;
    ms appended;  ///< the broker's clock when it was appended
};

/// The coordination topic: one partition, compacted now and then.
struct coordination_log {
    std::vector<record> records;
    std::int64_t next_offset = 0;

    void append(std::string key, std::optional<strata::byte_buffer> value, ms now) {
        records.push_back({std::move(key), std::move(value), next_offset++, now});
    }
    /// Keeps the last record of each key (a tombstone, too, or drops it).
    void compact(bool drop_tombstones) {
        std::map<std::string, std::int64_t> last;
        for (const record& r : records) last[r.key] = r.offset;
        std::vector<record> kept;
        for (record& r : records)
            if (last[r.key] == r.offset && (r.value || !drop_tombstones)) kept.push_back(std::move(r));
        records = std::move(kept);
    }
};

struct member {
    std::string id;
    std::string instance;
    ms last_heartbeat;
};

/// The group coordinator: members by member id; the leader is the member
/// holding the coordination partition. It moves only when its holder leaves
/// or is expelled (cooperative-sticky keeps it otherwise).
struct coordinator {
    std::vector<member> members;
    std::string leader;   // member id
    std::set<std::string> elected_unheard;  // member ids elected, not told yet
    int next_member = 0;

    member* find(const std::string& id) {
        for (member& m : members)
            if (m.id == id) return &m;
        return nullptr;
    }
    std::string join(const std::string& instance, ms now) {
        const std::string id = instance + "#m" + std::to_string(next_member++);
        members.push_back({id, instance, now});
        elect();
        return id;
    }
    void remove(const std::string& id) {
        std::erase_if(members, [&](const member& m) { return m.id == id; });
        elected_unheard.erase(id);
        if (leader == id) leader.clear();
        elect();
    }
    void expire(ms now, ms session) {
        std::vector<std::string> dead;
        for (const member& m : members)
            if (now - m.last_heartbeat > session) dead.push_back(m.id);
        for (const std::string& id : dead) remove(id);
    }
    void elect() {
        if (!leader.empty() || members.empty()) return;
        leader = members.front().id;
        elected_unheard.insert(leader);
    }
};

/// A write on its way to the coordination log.
struct in_flight {
    ms deliver_at;
    std::string key;
    std::optional<strata::byte_buffer> value;
};

/// A data write of one run of a task, on its way to the task's changelog.
struct data_write {
    ms deliver_at;
    ms fails_at;  ///< handed over + write_timeout: not landed by then, it fails
    std::int32_t task;
    std::int64_t run;
};

struct instance {
    std::string name;
    bool alive = true;
    bool leaving = false;  // stopped cleanly: leaves the group once its writes landed
    std::optional<ms> handing_over_until;  // a stopping leader: decides once more, for the others
    ms paused_until = 0;
    ms next_step = 0;
    std::string member_id;  // as the instance believes it
    ms rejoin_at = 0;
    ms next_heartbeat = 0;
    rtd::lease lease{std::chrono::milliseconds(1'000)};  // when it may write (the runtime's own)
    rtd::lease heard{std::chrono::milliseconds(0), std::chrono::milliseconds(0)};  // the heartbeats' lease
    ms next_beat = 0;           // its next heartbeat to the coordination log
    ms confirmed_beat = -1;     // the newest heartbeat read back that renewed the lease
    ms cut_until = 0;           // cut off from the coordination log until then
    std::optional<ms> commit_answer_at;    // a lease commit on its way
    ms commit_sent = 0;
    bool commit_known = false;
    std::optional<ms> heartbeat_answer_at;
    bool heartbeat_known = false;
    std::vector<rtd::group_member> describe_answer;  // the members when the request was served
    ms next_describe = 0;
    std::optional<ms> describe_answer_at;
    ms describe_sent = 0;
    ms next_status = 0;
    bool status_dirty = true;
    std::size_t read_index = 0;  // next record of the log to read (by position in the vector)
    std::int64_t read_offset = 0;
    rtd::coordination_state state;
    std::unique_ptr<rtd::leader> lead;
    std::set<std::int32_t> active, standbys;
    rtd::decision_id acted{};
    std::deque<in_flight> outbox;
    std::map<std::int32_t, std::int64_t> runs;  // the run of each active task
    std::map<std::int32_t, ms> unleased_runs;   // runs started without a lease: when
    std::deque<data_write> data_outbox;
};

/// The faults of a run over `c.instances` processes, drawn from `seed`
/// ahead of time at the rate world::step draws them (fault_percent of the
/// steps, one every 5 to 25 ms, until fault_until), with their lengths.
inline std::vector<planned_fault> plan_faults(std::uint64_t seed, const config& c) {
    random rng(seed);
    std::vector<planned_fault> plan;
    for (int i = 0; i < c.instances; ++i)
        for (ms t = rng.between(0, 25); t < c.fault_until; t += rng.between(5, 25)) {
            if (!rng.chance(c.fault_percent)) continue;
            const int kind = static_cast<int>(rng.next() % 5);
            ms length = 0;
            if (kind == 0) length = rng.between(0, 3 * c.session_timeout);
            else if (kind == 1 || kind == 2)
                length = rng.chance(50) ? rng.between(10, c.session_timeout / 2)
                                        : rng.between(c.session_timeout, 3 * c.session_timeout);
            else if (kind == 4)
                length = rng.chance(50) ? rng.between(10, c.liveness_timeout)
                                        : rng.between(c.liveness_timeout, 3 * c.session_timeout);
            plan.push_back({t, i, kind, length});
        }
    std::sort(plan.begin(), plan.end(), [](const planned_fault& a, const planned_fault& b) { return a.at < b.at; });
    return plan;
}

class world {
public:
    world(std::uint64_t seed, config c) : rng_(seed), c_(c) {
        for (int i = 0; i < c_.instances; ++i) instances_.push_back(fresh("i" + std::to_string(i), 0));
    }

    /// Runs to the end. @returns the first invariant broken, or empty.
    std::string run() {
        while (now_ < c_.end && failure_.empty()) {
            deliver();
            coordinator_.expire(now_, c_.session_timeout);
            instance* next = nullptr;
            for (instance& i : instances_)
                if (i.alive && (next == nullptr || i.next_step < next->next_step)) next = &i;
            ms t = next != nullptr ? next->next_step : now_ + 10;
            for (const auto* each : {&instances_, &ghosts_})
                for (const instance& i : *each)
                {
                    if (!i.outbox.empty()) t = std::min(t, i.outbox.front().deliver_at);
                    if (!i.data_outbox.empty()) t = std::min(t, i.data_outbox.front().deliver_at);
                }
            now_ = std::max(now_, t);
            deliver();
            coordinator_.expire(now_, c_.session_timeout);
            if (next != nullptr && next->next_step <= now_) step(*next);
            restart_dead();
            check();
        }
        if (failure_.empty()) check_settled();
        return failure_;
    }

    [[nodiscard]] ms zombie_overlap_ms() const { return zombie_overlap_; }
    [[nodiscard]] const std::string& trace() const { return trace_; }
    [[nodiscard]] int faults() const { return faults_; }
    [[nodiscard]] int last_decisions() const { return last_decisions_; }  // by stopping leaders

private:
    instance fresh(std::string name, ms at) {
        instance i;
        i.name = std::move(name);
        i.next_step = at;
        i.rejoin_at = at + rng_.between(0, 50);
        rtd::leader_options o;
        o.instance = i.name;
        o.tasks = c_.tasks;
        o.standby_replicas = c_.standby_replicas;
        o.status_retention = std::chrono::milliseconds(3 * c_.session_timeout);
        o.liveness_timeout = std::chrono::milliseconds(c_.liveness_timeout);
        i.lead = std::make_unique<rtd::leader>(o);
        i.lease = rtd::lease(std::chrono::milliseconds(c_.session_timeout));
        i.heard = rtd::lease(liveness().timeout, liveness().margin());
        i.state.watch_own_heartbeats(i.name);
        return i;
    }

    [[nodiscard]] rtd::liveness liveness() const { return {std::chrono::milliseconds(c_.liveness_timeout)}; }

    /// Whether `i` may write (awake or not): within the heartbeats' lease,
    /// which replaces the group's (committer.hpp says why).
    [[nodiscard]] bool leased(const instance& i) const {
        return i.heard.valid(tp(now_));
    }

    static std::chrono::steady_clock::time_point tp(ms t) {
        return std::chrono::steady_clock::time_point(std::chrono::milliseconds(t));
    }

    void note(const std::string& what) {
        trace_ += std::to_string(now_) + " " + what + "\n";
        if (trace_.size() > 200'000) trace_.erase(0, 100'000);
    }

    void send(instance& i, std::string key, std::optional<strata::byte_buffer> value) {
        // Now and then slow while faults happen (longer than the liveness
        // timeout, with the writes queued behind it): quick once they stop.
        const bool slow = now_ < c_.fault_until && rng_.chance(5);
        ms at = now_ + (slow ? rng_.between(50, 400) : rng_.between(1, 20));
        if (now_ < i.cut_until) at = std::max(at, i.cut_until + rng_.between(1, 20));
        if (!i.outbox.empty()) at = std::max(at, i.outbox.back().deliver_at);  // one producer keeps its order
        i.outbox.push_back({at, std::move(key), std::move(value)});
    }

    /// A data write of `i`'s run of task p, if its lease lets it.
    void write(instance& i, std::int32_t p) {
        if (now_ < i.paused_until || !leased(i)) return;
        const ms r = rng_.next() % 100;
        // Mostly quick; sometimes slow; now and then the partition has no
        // leader for a while (a broker died).
        ms at = now_ + (r < 90 ? rng_.between(1, 20) : r < 97 ? rng_.between(50, 400) : rng_.between(200, 3'000));
        if (!i.data_outbox.empty()) at = std::max(at, i.data_outbox.back().deliver_at);
        i.data_outbox.push_back({at, now_ + c_.write_timeout, p, i.runs.at(p)});
    }

    /// Lands (or fails) what is due of `i`'s data writes.
    void land(instance& i, bool all_of_them = false) {
        while (!i.data_outbox.empty() && (all_of_them || i.data_outbox.front().deliver_at <= now_)) {
            const data_write w = i.data_outbox.front();
            i.data_outbox.pop_front();
            if (w.deliver_at > w.fails_at) continue;  // timed out: the write failed
            auto& landed = landed_[w.task];
            landed.push_back({w.run, now_});
            if (landed.size() > 200) landed.pop_front();
            const std::int64_t newest = newest_run_[w.task];
            if (w.run < newest)
                fail("task " + std::to_string(w.task) + ": a write of " + i.name + "'s run " + std::to_string(w.run) +
                     " (handed over " + std::to_string(w.fails_at - c_.write_timeout) + " ms) landed after run " +
                     std::to_string(newest) + " started");
        }
    }

    void deliver() {
        for (instance& g : ghosts_) {
            while (!g.outbox.empty() && g.outbox.front().deliver_at <= now_) {
                log_.append(std::move(g.outbox.front().key), std::move(g.outbox.front().value), now_);
                g.outbox.pop_front();
            }
            land(g);
        }
        std::erase_if(ghosts_, [](const instance& g) { return g.outbox.empty() && g.data_outbox.empty(); });
        for (instance& i : instances_) {
            land(i);
            while (!i.outbox.empty() && i.outbox.front().deliver_at <= now_) {
                in_flight& w = i.outbox.front();
                if (c_.renew_on_delivery && w.value && w.key == rtd::heartbeat_key(i.name)) {
                    const auto h = strata::decode<rtd::heartbeat>(*w.value);
                    if (h.member_id == i.member_id) i.heard.confirmed(tp(h.sent_ms));
                }
                log_.append(std::move(w.key), std::move(w.value), now_);
                i.outbox.pop_front();
            }
            if (i.leaving && !i.handing_over_until && i.outbox.empty() && i.alive) {  // its withdrawal landed: it leaves the group
                coordinator_.remove(i.member_id);
                i.alive = false;
                i.rejoin_at = now_ + rng_.between(50, 2'000);
                note(i.name + " left the group");
            }
        }
        if (rng_.chance(1)) {
            log_.compact(rng_.chance(50));
            for (instance& i : instances_) reposition(i);
        }
    }

    /// After compaction, a reader's place in the vector moves; its offset does not.
    void reposition(instance& i) {
        std::size_t k = 0;
        while (k < log_.records.size() && log_.records[k].offset < i.read_offset) ++k;
        i.read_index = k;
    }

    void restart_dead() {
        if (now_ >= c_.end) return;
        for (instance& i : instances_) {
            if (i.alive || now_ < i.rejoin_at) continue;
            const std::string name = i.name;
            i = fresh(name, now_);
            note(name + " restarts");
        }
    }

    /// A fault drawn now (no plan): its kind, then its length where it is
    /// applied (the order a seed's schedule has always drawn them in).
    void fault(instance& i) { fault(i, static_cast<int>(rng_.next() % 5), -1); }

    /// The next planned fault of `i` that is due, if any: one a step (those
    /// planned while it was dead, paused or leaving come then, one by one,
    /// until fault_until).
    const planned_fault* planned_for(const instance& i) {
        if (now_ >= c_.fault_until) return nullptr;  // quiet from then on: everything must settle
        const int index = static_cast<int>(&i - instances_.data());
        for (std::size_t k = 0; k < c_.plan.size(); ++k) {
            const planned_fault& f = c_.plan[k];
            if (f.at > now_) break;
            if (f.instance == index && planned_done_.insert(k).second) return &f;
        }
        return nullptr;
    }

    /// A fault of `kind` lasting `length` (-1: drawn here).
    void fault(instance& i, int kind, ms length) {
        ++faults_;
        switch (kind) {
            case 0: {  // SIGKILL: what is on the wire may still land, or not
                note(i.name + " killed");
                std::erase_if(i.outbox, [&](const in_flight&) { return rng_.chance(50); });
                // Of its data writes, only those already on the wire may land.
                std::erase_if(i.data_outbox, [&](const data_write& w) { return w.deliver_at > now_ + 20; });
                i.alive = false;
                i.active.clear();
                i.runs.clear();
                i.unleased_runs.clear();
                i.rejoin_at = now_ + (length >= 0 ? length : rng_.between(0, 3 * c_.session_timeout));
                // Its member stays in the group until the session times out.
                keep_outbox(i);
                break;
            }
            case 1:
            case 2: {  // SIGSTOP, sometimes longer than the session
                const ms d = length >= 0 ? length
                             : rng_.chance(50) ? rng_.between(10, c_.session_timeout / 2)
                                               : rng_.between(c_.session_timeout, 3 * c_.session_timeout);
                i.paused_until = now_ + d;
                note(i.name + " paused for " + std::to_string(d));
                // What its producer still holds goes out once it wakes up
                // (or times out then); what is on the wire lands meanwhile.
                for (data_write& w : i.data_outbox)
                    if (w.deliver_at > now_ + 20) w.deliver_at = std::max(w.deliver_at, i.paused_until + rng_.between(0, 5));
                break;
            }
            case 3: {  // stop(): lets go of everything, withdraws, leaves
                if (i.member_id.empty()) break;
                note(i.name + " stops");
                land(i, true);  // it closes its tasks: their writes settle first
                i.active.clear();
                i.runs.clear();
                i.unleased_runs.clear();
                rtd::instance_status s = status_of(i);
                s.withdrawn = true;
                send(i, rtd::status_key(i.name), strata::encode(s));
                i.leaving = true;
                if (i.lead->leading()) i.handing_over_until = now_ + 2'000;
                break;
            }
            case 4: {  // cut off from the coordination log (its partition's leader) alone
                const ms d = length >= 0 ? length
                             : rng_.chance(50) ? rng_.between(10, c_.liveness_timeout)
                                               : rng_.between(c_.liveness_timeout, 3 * c_.session_timeout);
                i.cut_until = now_ + d;
                note(i.name + " cut off from the coordination log for " + std::to_string(d));
                break;
            }
        }
    }

    /// A killed process's writes still in the network: they land from a
    /// ghost that no longer steps.
    void keep_outbox(instance& i) {
        if (i.outbox.empty() && i.data_outbox.empty()) return;
        instance ghost;
        ghost.name = i.name + "~ghost";
        ghost.alive = false;
        ghost.rejoin_at = c_.end + 1;
        ghost.outbox = std::move(i.outbox);
        ghost.data_outbox = std::move(i.data_outbox);
        ghost.lead = std::make_unique<rtd::leader>(rtd::leader_options{});
        ghosts_.push_back(std::move(ghost));
        i.outbox.clear();
        i.data_outbox.clear();
    }

    rtd::instance_status status_of(const instance& i) const {
        rtd::instance_status s{};
        s.instance = i.name;
        s.member_id = i.member_id;
        s.published_ms = now_;
        s.acted_epoch = i.acted.epoch;
        s.acted_version = i.acted.version;
        s.active.assign(i.active.begin(), i.active.end());
        for (std::int32_t p : i.standbys) s.standbys.push_back({p, 0});
        return s;
    }

    void step(instance& i) {
        i.next_step = now_ + rng_.between(5, 25);
        if (now_ < i.paused_until) return;
        if (i.leaving) {
            if (i.handing_over_until) hand_over(i);
            return;
        }
        if (c_.plan.empty() ? now_ < c_.fault_until && rng_.chance(c_.fault_percent) : false) {
            fault(i);
            if (!i.alive || now_ < i.paused_until || i.leaving) return;
        } else if (const planned_fault* f = c_.plan.empty() ? nullptr : planned_for(i)) {
            fault(i, f->kind, f->length);
            if (!i.alive || now_ < i.paused_until || i.leaving) return;
        }
        membership(i);
        beat(i);
        read(i);
        if (i.lead->succeed_if_silent(i.state, tp(now_), i.member_id)) {
            i.next_describe = now_;
            note(i.name + " succeeds a silent leader");
        }
        if (i.lead->elected()) lead(i);
        let_go_without_lease(i);  // before a renewal too: the tasks may have run elsewhere meanwhile
        renew(i);
        act(i);
        for (std::int32_t p : i.active)
            if (rng_.chance(50)) write(i, p);
        if (i.status_dirty || now_ >= i.next_status) {
            send(i, rtd::status_key(i.name), strata::encode(status_of(i)));
            i.status_dirty = false;
            i.next_status = now_ + c_.status_interval;
        }
    }

    void membership(instance& i) {
        if (i.member_id.empty()) {
            if (now_ < i.rejoin_at) return;
            i.member_id = coordinator_.join(i.name, now_);
            i.lease.reset();  // a new membership earns its own leases
            i.heard.reset();
            i.confirmed_beat = -1;
            i.next_beat = now_;
            i.commit_answer_at.reset();
            i.next_heartbeat = now_ + c_.heartbeat_interval;
            i.status_dirty = true;
            note(i.name + " joined as " + i.member_id);
        } else if (i.heartbeat_answer_at && now_ >= *i.heartbeat_answer_at) {
            // The answer to a heartbeat, read on the next poll: a paused
            // instance that wakes up learns of its expulsion only now, and
            // may act on what it believed until then.
            i.heartbeat_answer_at.reset();
            if (!i.heartbeat_known) {
                note(i.name + " hears it was expelled (" + i.member_id + ")");
                // It lets go of its tasks once its producer settled (the
                // runtime's refresh_membership): what it holds lands or fails.
                land(i, true);
                i.member_id.clear();
                i.active.clear();
                i.runs.clear();
                i.unleased_runs.clear();
                i.lead->deposed();
                i.status_dirty = true;
                i.lease.reset();
                i.heard.reset();
                i.commit_answer_at.reset();
                i.rejoin_at = now_ + rng_.between(0, 100);
                return;
            }
        } else if (!i.heartbeat_answer_at && now_ >= i.next_heartbeat) {
            i.next_heartbeat = now_ + c_.heartbeat_interval;
            member* m = coordinator_.find(i.member_id);
            i.heartbeat_known = m != nullptr;
            if (m != nullptr) m->last_heartbeat = now_;
            i.heartbeat_answer_at = now_ + (rng_.chance(5) ? rng_.between(50, 300) : rng_.between(1, 30));
        }
        lease(i);
        if (i.member_id.empty()) return;
        if (coordinator_.elected_unheard.erase(i.member_id) > 0) {
            i.lead->elected(i.member_id, tp(now_));
            i.next_describe = now_;  // a request still on its way is answered too
            note(i.name + " elected");
        }
    }

    /// The lease commit (see detail/instance.hpp): accepted, it renews the member's
    /// session at the coordinator, and the lease runs from when it was sent.
    void lease(instance& i) {
        if (i.member_id.empty()) return;
        if (i.commit_answer_at && now_ >= *i.commit_answer_at) {
            i.commit_answer_at.reset();
            if (i.commit_known) i.lease.confirmed(tp(i.commit_sent));
            return;
        }
        if (i.commit_answer_at || !i.lease.renewal_due(tp(now_))) return;
        i.commit_sent = now_;
        member* m = coordinator_.find(i.member_id);
        i.commit_known = m != nullptr;
        if (m != nullptr) m->last_heartbeat = now_;
        i.commit_answer_at = now_ + (rng_.chance(5) ? rng_.between(50, 300) : rng_.between(1, 30));
    }

    /// The heartbeats: one read back while the newest decision made the
    /// member one renews its lease from when it was sent
    /// (coordination_state::own_confirmed); a member writes the next one
    /// when it is due.
    void beat(instance& i) {
        if (i.member_id.empty() || now_ < i.next_beat) return;
        i.next_beat = now_ + liveness().heartbeat_interval().count();
        send(i, rtd::heartbeat_key(i.name), strata::encode(rtd::heartbeat{i.name, i.member_id, now_}));
    }

    void read(instance& i) {
        if (now_ < i.cut_until) return;  // nothing arrives
        // Sometimes only part of what is there has arrived.
        std::size_t upto = log_.records.size();
        if (upto > i.read_index && rng_.chance(20)) upto = i.read_index + rng_.next() % (upto - i.read_index + 1);
        for (; i.read_index < upto; ++i.read_index) {
            const record& r = log_.records[i.read_index];
            std::optional<strata::bytes_view> v;
            if (r.value) v = strata::bytes_view(*r.value);
            if (i.state.take(r.key, v, r.offset, {r.appended, tp(now_)})) i.status_dirty = i.status_dirty || r.key == "assignment";
            i.read_offset = r.offset + 1;
            if (r.key == "assignment" && i.state.latest()) remember(*i.state.latest());
        }
        if (upto == log_.records.size()) i.state.reached_end();
        const bool was = i.lead->leading();
        i.lead->observe(i.state);
        if (i.lead->leading() != was) note(i.name + (was ? " deposed by a newer claim" : " leads in epoch " + std::to_string(i.lead->epoch())));
    }

    void lead(instance& i) {
        if (auto claim = i.lead->claim_to_write()) {
            send(i, std::string(rtd::leader_key), strata::encode(*claim));
            note(i.name + " claims");
        }
        if (!i.lead->leading()) return;
        if (i.describe_answer_at && now_ >= *i.describe_answer_at) {
            i.lead->members_listed(std::move(i.describe_answer), tp(i.describe_sent));
            i.describe_answer_at.reset();
        }
        if (i.describe_answer_at && now_ - i.describe_sent >= c_.describe_retry) {
            i.describe_answer_at.reset();  // given up: a new request goes out below
            note(i.name + " gives up a request for the members");
        }
        if (!i.describe_answer_at && now_ >= i.next_describe) {
            i.describe_sent = now_;
            i.describe_answer.clear();
            for (const member& m : coordinator_.members) i.describe_answer.push_back({m.instance, m.id});
            // Some answers never come while faults happen: the group
            // coordinator died with the request on its way.
            const bool lost = now_ < c_.fault_until && rng_.chance(2);
            i.describe_answer_at = lost ? std::numeric_limits<ms>::max()
                                        : now_ + (rng_.chance(10) ? rng_.between(100, 800) : rng_.between(1, 30));
            i.next_describe = now_ + c_.describe_interval;
        }
        i.lead->watch_liveness(i.state, tp(now_));
        if (auto d = i.lead->decide(i.state, now_)) {
            std::string placed;
            for (const rtd::task_placement& t : d->tasks)
                placed += " " + std::to_string(t.task) + ":" + t.active + "@" + std::to_string(t.since_epoch) + "." +
                          std::to_string(t.since_version);
            std::string members;
            for (const std::string& m : d->member_ids) members += " " + m;
            note(i.name + " decides " + std::to_string(d->epoch) + "." + std::to_string(d->version) + " for" + members +
                 ":" + placed);
            send(i, std::string(rtd::assignment_key), strata::encode(*d));
        }
        for (const std::string& gone : i.lead->statuses_to_remove(i.state, tp(now_))) {
            note(i.name + " removes the status of " + gone);
            send(i, rtd::status_key(gone), std::nullopt);
            send(i, rtd::heartbeat_key(gone), std::nullopt);
        }
    }

    /// A stopping leader (detail/instance.hpp, decide_once_more): once it reads its
    /// own withdrawal back, it decides for the others before it leaves the
    /// group, unless it was deposed meanwhile or waited too long.
    void hand_over(instance& i) {
        read(i);
        const bool read_back = i.state.withdrew(i.name, i.member_id);
        if (!i.lead->leading() || now_ >= *i.handing_over_until) {
            i.handing_over_until.reset();
            return;
        }
        if (!read_back) return;
        note(i.name + " decides once more as it stops");
        ++last_decisions_;
        lead(i);
        i.handing_over_until.reset();
    }

    /// A heartbeat read back renews the lease (coordination_state::own_confirmed).
    void renew(instance& i) {
        const auto& own = i.state.own_confirmed();
        if (c_.renew_on_delivery || !own || own->member_id != i.member_id || own->sent_ms <= i.confirmed_beat) return;
        i.confirmed_beat = own->sent_ms;
        i.heard.confirmed(tp(own->sent_ms));
        note(i.name + " reads back its heartbeat of " + std::to_string(own->sent_ms));
    }

    /// With the liveness timeout, an instance whose heartbeats' lease ran out
    /// may have been left out of a decision it has not read (compaction may
    /// even keep it from ever reading it): it lets go of its tasks, without
    /// a commit, and starts them again, restored, under a decision and a lease.
    void let_go_without_lease(instance& i) {
        if (i.active.empty() || i.heard.valid(tp(now_))) return;
        note(i.name + " lets go of its tasks: its heartbeats' lease ran out");
        land(i, true);  // its producer settles first: what it holds lands or fails
        i.active.clear();
        i.runs.clear();
        i.unleased_runs.clear();
        i.status_dirty = true;
    }

    void act(instance& i) {
        const std::optional<rtd::assignment>& d = i.state.latest();
        if (!d) return;
        const rtd::handoff_plan plan = rtd::plan_handoff(*d, i.state, {i.name, i.member_id, i.active, i.standbys},
                                                         {tp(now_), liveness().timeout});
        if (!plan.release.empty()) land(i, true);  // a release commits: its writes settle first
        for (std::int32_t p : plan.release) {
            note(i.name + " releases task " + std::to_string(p) + " under " + std::to_string(d->epoch) + "." +
                 std::to_string(d->version));
            i.active.erase(p);
            i.runs.erase(p);
            i.unleased_runs.erase(p);
            i.status_dirty = true;
        }
        if (!plan.member) return;
        const bool may_start = i.heard.valid(tp(now_));
        for (std::int32_t p : plan.start) {
            if (!may_start) break;  // again once its lease holds
            i.active.insert(p);
            // A zombie (expelled, not told yet) starts it too, but its lease
            // keeps it from writing: only a member's run counts as newer.
            // With the liveness timeout, a member without a lease (awake
            // after a pause, acting on what it read so far) starts it too:
            // its run counts from when it has a lease, and must have
            // restored after every write of an older run landed (check()).
            i.runs[p] = ++runs_started_;
            if (coordinator_.find(i.member_id) != nullptr) {
                if (leased(i)) newest_run_[p] = runs_started_;
                else i.unleased_runs[p] = now_;
            }
            i.standbys.erase(p);  // promoted
            i.status_dirty = true;
            note(i.name + " starts task " + std::to_string(p) + " under " + std::to_string(d->epoch) + "." +
                 std::to_string(d->version));
        }
        for (std::int32_t p : plan.add_standby) i.standbys.insert(p);
        for (std::int32_t p : plan.drop_standby) i.standbys.erase(p);
        if (i.acted != d->id()) {
            i.acted = d->id();
            i.status_dirty = true;
        }
    }

    void remember(const rtd::assignment& a) {
        const auto [it, fresh] = decisions_.try_emplace({a.epoch, a.version}, a);
        if (!fresh && !(it->second == a))
            fail("two different decisions carry the id " + std::to_string(a.epoch) + "." + std::to_string(a.version));
    }

    /// A run started without a lease counts once the instance has one, and
    /// its restore (at its start) must not have missed a write of an older run.
    void count_leased_runs() {
        for (instance& i : instances_) {
            if (!i.alive || i.unleased_runs.empty() || !leased(i)) continue;
            for (const auto& [p, started] : i.unleased_runs) {
                const std::int64_t run = i.runs.at(p);
                for (const auto& [older, at] : landed_[p])
                    if (older < run && at > started)
                        fail("task " + std::to_string(p) + ": " + i.name + "'s run " + std::to_string(run) +
                             ", started at " + std::to_string(started) + " ms without a lease, has one now, and a "
                             "write of run " + std::to_string(older) + " landed after its restore");
                newest_run_[p] = std::max(newest_run_[p], run);
            }
            i.unleased_runs.clear();
        }
    }

    void check() {
        count_leased_runs();
        bool overlap = false;
        for (std::int32_t p = 0; p < c_.tasks; ++p) {
            std::vector<const instance*> members, zombies, writers, leased_holders;
            for (const instance& i : instances_) {
                if (!i.alive || !i.active.contains(p)) continue;
                (coordinator_.find(i.member_id) != nullptr ? members : zombies).push_back(&i);
                if (leased(i)) leased_holders.push_back(&i);
                if (now_ >= i.paused_until && leased(i)) writers.push_back(&i);
            }
            if (leased_holders.size() > 1)
                fail("task " + std::to_string(p) + " is held by " + leased_holders[0]->name + " and " +
                     leased_holders[1]->name + ", both within their leases");
            if (writers.size() > 1)
                fail("task " + std::to_string(p) + " may be written by " + writers[0]->name + " and " +
                     writers[1]->name + " at once");
            if (!zombies.empty() && !members.empty()) overlap = true;
        }
        if (overlap) zombie_overlap_ += now_ - last_check_;
        last_check_ = now_;
    }

    void check_settled() {
        const instance* any = nullptr;
        for (const instance& i : instances_)
            if (i.alive && !i.leaving) any = &i;
        if (any == nullptr) return;  // everyone stopped at the end: nothing to settle
        const std::optional<rtd::assignment>& d = any->state.latest();
        if (!d) return fail("no decision after the faults stopped (" + roles() + ")");
        for (const instance& i : instances_) {
            if (!i.alive || i.leaving) continue;
            if (!i.state.latest() || i.state.latest()->id() != d->id())
                return fail(i.name + " acts on another decision than " + any->name + " (" + roles() + ")");
            if (i.acted != d->id())
                return fail(i.name + " has not acted on the newest decision (" + std::to_string(d->epoch) + "." +
                            std::to_string(d->version) + ", for " + (d->member_id_of(i.name) ? *d->member_id_of(i.name) : "-") +
                            "; it is " + i.member_id + " and acted on " + std::to_string(i.acted.epoch) + "." +
                            std::to_string(i.acted.version) + "; " + roles() + ")");
        }
        for (std::int32_t p = 0; p < c_.tasks; ++p) {
            const rtd::task_placement* placed = d->find(p);
            if (placed == nullptr) return fail("the newest decision leaves task " + std::to_string(p) + " out");
            int holders = 0;
            for (const instance& i : instances_)
                if (i.alive && !i.leaving && i.active.contains(p)) {
                    ++holders;
                    if (i.name != placed->active)
                        return fail("task " + std::to_string(p) + " runs on " + i.name + ", the decision says " +
                                    placed->active);
                }
            if (holders != 1)
                return fail("task " + std::to_string(p) + " runs on " + std::to_string(holders) +
                            " instances once the faults stopped");
        }
    }

    [[nodiscard]] std::string silent_of(const instance& i) const {
        std::string out;
        for (const rtd::group_member& m : i.lead->silent()) out += " " + m.member_id;
        for (const member& m : coordinator_.members)
            if (i.lead->leading() && i.state.silent(m.instance, m.id, tp(now_), liveness().timeout)) out += " now:" + m.id;
        if (i.lead->leading() && i.lead->members()) {
            out += "; listed";
            for (const rtd::group_member& m : *i.lead->members()) out += " " + m.member_id;
        }
        return out.empty() ? "" : "; leaves out" + out;
    }

    [[nodiscard]] std::string roles() const {
        std::string who;
        for (const instance& i : instances_)
            who += ", " + i.name + " " + i.member_id + (i.lead->leading() ? " leads " + std::to_string(i.lead->epoch())
                                                       : i.lead->elected() ? " claims" : " follows") +
                   " (claim read: " + (i.state.claim() ? i.state.claim()->member_id : "none") + silent_of(i) + ")";
        for (const instance& i : instances_)
            if (i.lead->leading())
                for (const auto& [n, st] : i.state.statuses())
                    who += "; status " + n + " " + st.member_id + (st.withdrawn ? " withdrawn" : "") + " acted " +
                           std::to_string(st.acted_epoch) + "." + std::to_string(st.acted_version);
        who += "; group:";
        for (const member& m : coordinator_.members) who += " " + m.id;
        return who.substr(2);
    }

    void fail(const std::string& what) {
        if (failure_.empty()) failure_ = "at " + std::to_string(now_) + " ms: " + what;
    }

    random rng_;
    config c_;
    ms now_ = 0;
    coordination_log log_;
    coordinator coordinator_;
    std::vector<instance> instances_;
    std::vector<instance> ghosts_;
    std::map<rtd::decision_id, rtd::assignment> decisions_;
    std::string failure_;
    std::string trace_;
    ms zombie_overlap_ = 0;
    std::map<std::int32_t, std::int64_t> newest_run_;  // of each task
    std::map<std::int32_t, std::deque<std::pair<std::int64_t, ms>>> landed_;  // each task's last writes: run, when
    std::int64_t runs_started_ = 0;
    ms last_check_ = 0;
    int faults_ = 0;
    int last_decisions_ = 0;
    std::set<std::size_t> planned_done_;  // the plan's faults applied
};

}  // namespace simulation
