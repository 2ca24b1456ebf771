// The coordination parts alone, record by record: what a reader accepts
// (coordination_state), what the leader writes (leader), and what an
// instance does with a decision (plan_handoff). Each case is one of the
// defects the simulation and the broker runs are built to find.

#include <catch2/catch.hpp>

#include <strata/runtime/detail/coordination_state.hpp>
#include <strata/runtime/detail/handoff.hpp>
#include <strata/runtime/detail/leader.hpp>
#include <strata/serde/encode.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace strata::runtime;
using namespace strata::runtime::detail;

namespace {

struct fake_log {
    coordination_state state;
    std::int64_t offset = 0;
    template <class T>
    bool put(std::string key, const T& v) {
        const strata::byte_buffer b = strata::encode(v);
        return state.take(key, strata::bytes_view(b), offset++);
    }
    /// A record written at `broker_ms` on the broker's clock, read at `read_ms` on the reader's.
    template <class T>
    void put_at(std::string key, const T& v, std::int64_t broker_ms, int read_ms) {
        const strata::byte_buffer b = strata::encode(v);
        (void)state.take(key, strata::bytes_view(b), offset++,
                         {broker_ms, std::chrono::steady_clock::time_point(std::chrono::milliseconds(read_ms))});
    }
    void beat(const std::string& instance, const std::string& member, std::int64_t broker_ms, int read_ms,
              std::int64_t sent_ms = 0) {
        put_at(heartbeat_key(instance), heartbeat{instance, member, sent_ms}, broker_ms, read_ms);
    }
    std::int64_t claim(std::string instance, std::string member, std::int64_t election = 1) {
        put("leader", leader_claim{std::move(instance), std::move(member), election});
        return state.epoch();
    }
};

assignment decision(std::int64_t epoch, std::int64_t version, std::vector<std::pair<std::string, std::string>> members,
                    std::vector<std::string> owners) {
    assignment a{};
    a.epoch = epoch;
    a.version = version;
    for (auto& [n, m] : members) {
        a.members.push_back(n);
        a.member_ids.push_back(m);
    }
    for (std::size_t p = 0; p < owners.size(); ++p) {
        task_placement t{};
        t.task = static_cast<std::int32_t>(p);
        t.active = owners[p];
        t.since_epoch = epoch;
        t.since_version = version;
        a.tasks.push_back(t);
    }
    return a;
}

instance_status status(std::string name, std::string member, decision_id acted, std::vector<std::int32_t> active) {
    instance_status s{};
    s.instance = std::move(name);
    s.member_id = std::move(member);
    s.acted_epoch = acted.epoch;
    s.acted_version = acted.version;
    s.active = std::move(active);
    return s;
}

std::chrono::steady_clock::time_point at(int ms) {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace

TEST_CASE("coordination: a decision of an older epoch is ignored, even one written last", "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e1 = l.claim("a", "a#1");
    REQUIRE(l.put("assignment", decision(e1, 1, {{"a", "a#1"}}, {"a"})));
    const std::int64_t e2 = l.claim("b", "b#1");
    REQUIRE(e2 > e1);
    REQUIRE(l.put("assignment", decision(e2, 1, {{"b", "b#1"}}, {"b"})));
    // a paused leader wakes up and decides again in its old epoch
    CHECK_FALSE(l.put("assignment", decision(e1, 9, {{"a", "a#1"}}, {"a"})));
    CHECK(l.state.latest()->id() == decision_id{e2, 1});
    CHECK(*l.state.last_written() == decision_id{e1, 9});  // the leader republishes (see below)
}

TEST_CASE("coordination: versions survive a leader's restart, since the epoch is the claim's offset",
          "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e1 = l.claim("a", "a#1");
    l.put("assignment", decision(e1, 7, {{"a", "a#1"}}, {"a"}));
    const std::int64_t e2 = l.claim("a", "a#2");  // restarted: it counts from 1 again
    REQUIRE(l.put("assignment", decision(e2, 1, {{"a", "a#2"}}, {"a"})));
    CHECK(l.state.latest()->id() == decision_id{e2, 1});
}

TEST_CASE("leader: decides only after reading its own claim back, from members listed after its election",
          "[runtime][coordination]") {
    fake_log l;
    leader_options o;
    o.instance = "a";
    o.tasks = 2;
    leader ld(o);
    ld.elected("a#1", at(1'000));
    ld.members_listed({{"a", "a#1"}, {"gone", "gone#1"}}, at(900));  // asked before the election: stale
    const auto c = ld.claim_to_write();
    REQUIRE(c);
    CHECK_FALSE(ld.claim_to_write());  // once per election
    CHECK_FALSE(ld.decide(l.state, 0));  // not read back yet
    l.put("leader", *c);
    ld.observe(l.state);
    REQUIRE(ld.leading());
    CHECK_FALSE(ld.decide(l.state, 0));  // no members listed in this term
    ld.members_listed({{"a", "a#1"}}, at(1'001));
    const auto d = ld.decide(l.state, 0);
    REQUIRE(d);
    CHECK(d->epoch == l.state.epoch());
    CHECK(d->members == std::vector<std::string>{"a"});
    CHECK(d->member_ids == std::vector<std::string>{"a#1"});
    CHECK_FALSE(ld.decide(l.state, 0));  // sent, not read back: not again
    l.put("assignment", *d);
    CHECK_FALSE(ld.decide(l.state, 0));
    // a stale leader's decision lands after ours: compaction could keep only it
    l.put("assignment", decision(l.state.epoch() - 1, 50, {{"x", "x#1"}}, {"x", "x"}));
    const auto again = ld.decide(l.state, 0);
    REQUIRE(again);
    CHECK(again->version == d->version + 1);
    CHECK(again->tasks == d->tasks);
}

TEST_CASE("leader: a newer claim deposes a leader that did not hear it lost", "[runtime][coordination]") {
    fake_log l;
    leader ld(leader_options{"a", 1, 0, 0, std::chrono::milliseconds(1)});
    ld.elected("a#1", at(0));
    l.put("leader", *ld.claim_to_write());
    ld.observe(l.state);
    REQUIRE(ld.leading());
    l.claim("b", "b#1");
    ld.observe(l.state);
    CHECK_FALSE(ld.leading());
}

TEST_CASE("leader: an instance id listed twice keeps the member the last decision had, and a withdrawn member counts as gone",
          "[runtime][coordination]") {
    fake_log l;
    leader ld(leader_options{"a", 2, 0, 0, std::chrono::milliseconds(1)});
    ld.elected("a#1", at(0));
    l.put("leader", *ld.claim_to_write());
    ld.observe(l.state);
    ld.members_listed({{"a", "a#1"}, {"b", "b#1"}}, at(1));
    const auto d1 = ld.decide(l.state, 0);
    REQUIRE(d1);
    l.put("assignment", *d1);
    // b restarted before its old session ended: both b members are listed
    ld.members_listed({{"a", "a#1"}, {"b", "b#1"}, {"b", "b#2"}}, at(2));
    CHECK_FALSE(ld.decide(l.state, 0));  // b keeps b#1
    // the old b withdrew: the new one is b now
    instance_status w = status("b", "b#1", d1->id(), {});
    w.withdrawn = true;
    l.put("status/b", w);
    const auto d2 = ld.decide(l.state, 0);
    REQUIRE(d2);
    CHECK(*d2->member_id_of("b") == "b#2");
    // two new members with one id, neither in the last decision: neither runs anything
    l.put("assignment", *d2);
    ld.members_listed({{"a", "a#1"}, {"c", "c#1"}, {"c", "c#2"}}, at(3));
    const auto d3 = ld.decide(l.state, 0);
    REQUIRE(d3);
    CHECK(d3->members == std::vector<std::string>{"a"});
}

TEST_CASE("leader: statuses of instances long gone are removed", "[runtime][coordination]") {
    fake_log l;
    leader ld(leader_options{"a", 1, 0, 0, std::chrono::milliseconds(1'000)});
    ld.elected("a#1", at(0));
    l.put("leader", *ld.claim_to_write());
    ld.observe(l.state);
    ld.members_listed({{"a", "a#1"}}, at(1));
    l.put("assignment", *ld.decide(l.state, 0));
    l.put("status/host-123", status("host-123", "h#1", {}, {}));
    CHECK(ld.statuses_to_remove(l.state, at(10)).empty());     // first seen absent
    CHECK(ld.statuses_to_remove(l.state, at(500)).empty());
    CHECK(ld.statuses_to_remove(l.state, at(1'010)) == std::vector<std::string>{"host-123"});
}

TEST_CASE("handoff: no task runs under a decision made for another membership", "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e = l.claim("a", "a#1");
    const assignment d = decision(e, 1, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"});
    // b restarted (member b#2): the decision was made for b#1
    const handoff_plan restarted = plan_handoff(d, l.state, {"b", "b#2", {}, {}});
    CHECK_FALSE(restarted.member);
    CHECK(restarted.start.empty());
    // not joined at all
    CHECK(plan_handoff(d, l.state, {"b", "", {}, {}}).start.empty());
    // dropped from the group while it ran task 1: it lets go
    const handoff_plan dropped = plan_handoff(d, l.state, {"b", "b#2", {1}, {}});
    CHECK(dropped.release == std::vector<std::int32_t>{1});
}

TEST_CASE("handoff: a task starts only once every other member said it acted on the decision that moved it",
          "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e = l.claim("a", "a#1");
    assignment d = decision(e, 2, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"});
    // b's status is from before the move: it does not list task 0 yet,
    // but it may have started it under decision 1, which gave it b
    l.put("status/b", status("b", "b#1", {e, 1}, {1}));
    l.put("status/a", status("a", "a#1", {e, 1}, {}));
    handoff_plan p = plan_handoff(d, l.state, {"a", "a#1", {}, {}});
    CHECK(p.start.empty());
    CHECK(p.wait == std::vector<std::int32_t>{0});
    // b acted on decision 2 and lists task 1 only: a starts task 0
    l.put("status/b", status("b", "b#1", {e, 2}, {1}));
    p = plan_handoff(d, l.state, {"a", "a#1", {}, {}});
    CHECK(p.start == std::vector<std::int32_t>{0});
    // a status of b's earlier membership does not count
    l.put("status/b", status("b", "b#0", {e, 2}, {}));
    CHECK(plan_handoff(d, l.state, {"a", "a#1", {}, {}}).start.empty());
}

TEST_CASE("leader: what it wrote and did not land is written again", "[runtime][coordination]") {
    fake_log l;
    leader ld(leader_options{"a", 1, 0, 0, std::chrono::milliseconds(1)});
    ld.elected("a#1", at(0));
    REQUIRE(ld.claim_to_write());
    ld.writes_lost();  // the claim did not land
    const auto claim = ld.claim_to_write();
    REQUIRE(claim);
    l.put("leader", *claim);
    ld.observe(l.state);
    ld.members_listed({{"a", "a#1"}}, at(1));
    REQUIRE(ld.decide(l.state, 0));
    CHECK_FALSE(ld.decide(l.state, 0));
    ld.writes_lost();  // nor did the decision, as far as its delivery report says
    const auto again = ld.decide(l.state, 0);
    REQUIRE(again);
    // A record reported lost may have landed all the same (a timeout):
    // a version is never sent twice with what may be other contents.
    CHECK(again->version == 2);
}

TEST_CASE("handoff: under exactly-once the producers of instances outside the decision are fenced, members' are not",
          "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e = l.claim("a", "a#1");
    const assignment d = decision(e, 1, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"});
    auto with_producer = [](instance_status s, std::string id) {
        s.transactional_id = std::move(id);
        s.incarnation = s.member_id + "-run";
        return s;
    };
    l.put("status/a", with_producer(status("a", "a#1", {e, 1}, {0}), "app-a"));
    l.put("status/b", with_producer(status("b", "b#1", {e, 1}, {1}), "app-b"));  // a member: lets go by itself
    l.put("status/c", with_producer(status("c", "c#1", {e, 1}, {2}), "app-c"));  // expelled, may still write
    l.put("status/b2", with_producer(status("b2", "b2#9", {e, 1}, {}), "app-b2"));  // not in the decision
    instance_status gone = with_producer(status("d", "d#1", {e, 1}, {}), "app-d");
    gone.withdrawn = true;  // committed and left
    l.put("status/d", gone);
    const std::vector<fence_target> f = fence_targets(d, l.state, "a");
    REQUIRE(f.size() == 2);
    CHECK(f[0] == fence_target{"app-b2", "b2#9-run", d.id()});
    CHECK(f[1] == fence_target{"app-c", "c#1-run", d.id()});
    // b restarted: its status is from another membership than the decision's
    l.put("status/b", with_producer(status("b", "b#2", {}, {}), "app-b"));
    CHECK(fence_targets(d, l.state, "a").size() == 3);
}

// ------------------------------------------------------------ liveness --

TEST_CASE("liveness: a member is silent only once the broker's append times and the reader's clock both say so",
          "[runtime][coordination][liveness]") {
    using namespace std::chrono_literals;
    fake_log l;
    l.beat("b", "b#1", 1'000, 1'000);
    CHECK_FALSE(l.state.silent("b", "b#1", at(1'200), 600ms));
    CHECK_FALSE(l.state.silent("c", "c#1", at(9'000), 600ms));  // never heard of: the group's session covers it
    // Nothing written since: the reader cannot tell the broker's time moved on.
    CHECK_FALSE(l.state.silent("b", "b#1", at(5'000), 600ms));
    // a reader that stalled and reads a backlog late: the broker says 700 ms passed, its own clock 100 ms
    l.beat("a", "a#1", 1'700, 1'100);
    CHECK_FALSE(l.state.silent("b", "b#1", at(1'100), 600ms));
    CHECK(l.state.silent("b", "b#1", at(1'600), 600ms));
    CHECK(l.state.heard_lately(at(1'600), 600ms) == std::vector<std::pair<std::string, std::string>>{{"a", "a#1"}});
    // heard again
    l.beat("b", "b#1", 1'800, 1'700);
    CHECK_FALSE(l.state.silent("b", "b#1", at(1'800), 600ms));
    // a member whose broker time jumped ahead is not silent before the reader's clock agrees
    l.beat("a", "a#1", 90'000, 1'900);
    CHECK_FALSE(l.state.silent("b", "b#1", at(1'900), 600ms));
}

TEST_CASE("liveness: a heartbeat read back renews the lease only at the end of the topic, under a decision written last that lists the member",
          "[runtime][coordination][liveness]") {
    fake_log l;
    l.state.watch_own_heartbeats("a");
    const auto sent = [&] { return l.state.own_confirmed() ? l.state.own_confirmed()->sent_ms : -1; };
    const std::int64_t e1 = l.claim("a", "a#1");
    l.beat("a", "a#1", 0, 0, 100);
    l.state.reached_end();
    CHECK(sent() == -1);  // no decision yet
    l.put("assignment", decision(e1, 1, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"}));
    l.beat("a", "a#1", 0, 0, 200);
    CHECK(sent() == -1);  // not at the end yet: a decision leaving it out may come next
    l.state.reached_end();
    CHECK(sent() == 200);
    // a decision that leaves a out, read before or after its heartbeat: nothing renews at the end
    l.beat("a", "a#1", 0, 0, 300);
    l.put("assignment", decision(e1, 2, {{"b", "b#1"}}, {"b", "b"}));
    l.state.reached_end();
    CHECK(sent() == 200);
    // listed again, then a newer claim before its first decision: the decision in hand still counts
    // (what the new leader decides comes after the heartbeat, and its next owner waits for silence)
    l.put("assignment", decision(e1, 3, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"}));
    l.beat("a", "a#1", 0, 0, 400);
    l.state.reached_end();
    CHECK(sent() == 400);
    const std::int64_t e2 = l.claim("b", "b#1");
    l.beat("a", "a#1", 0, 0, 500);
    l.state.reached_end();
    CHECK(sent() == 500);
    l.put("assignment", decision(e2, 1, {{"b", "b#1"}}, {"b", "b"}));
    l.beat("a", "a#1", 0, 0, 550);
    l.state.reached_end();
    CHECK(sent() == 500);  // the new leader left a out
    // listed again; then a paused leader's stale decision written last: the valid one may be compacted away behind it
    l.put("assignment", decision(e2, 2, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"}));
    l.state.reached_end();
    CHECK(sent() == 550);
    l.put("assignment", decision(e1, 9, {{"a", "a#1"}}, {"a", "a"}));
    l.beat("a", "a#1", 0, 0, 600);
    l.state.reached_end();
    CHECK(sent() == 550);
    // another member id of the same instance (a restart) is not this member
    l.put("assignment", decision(e2, 3, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "b"}));
    l.beat("a", "a#2", 0, 0, 700);
    l.state.reached_end();
    CHECK(sent() == 550);
}

TEST_CASE("leader: leaves out a member silent on the coordination topic, and takes it back once heard again",
          "[runtime][coordination][liveness]") {
    using namespace std::chrono_literals;
    fake_log l;
    leader_options o{"a", 2, 0, 0, std::chrono::milliseconds(60'000)};
    o.liveness_timeout = 600ms;
    leader ld(o);
    ld.elected("a#1", at(0));
    l.put_at("leader", *ld.claim_to_write(), 0, 0);
    ld.observe(l.state);
    REQUIRE(ld.leading());
    ld.members_listed({{"a", "a#1"}, {"b", "b#1"}}, at(1));
    l.beat("a", "a#1", 0, 0);
    l.beat("b", "b#1", 0, 0);
    ld.watch_liveness(l.state, at(10));
    const auto d1 = ld.decide(l.state, 0);
    REQUIRE(d1);
    CHECK(d1->members == std::vector<std::string>{"a", "b"});
    l.put_at("assignment", *d1, 10, 10);
    // b goes quiet; a goes on
    for (int t = 100; t <= 700; t += 100) l.beat("a", "a#1", t, t);
    ld.watch_liveness(l.state, at(500));
    CHECK_FALSE(ld.decide(l.state, 500));  // 500 ms: not yet
    ld.watch_liveness(l.state, at(700));
    const auto d2 = ld.decide(l.state, 700);
    REQUIRE(d2);
    CHECK(d2->members == std::vector<std::string>{"a"});
    CHECK(d2->find(1)->active == "a");
    CHECK(d2->noticed_ms == 700);
    l.put_at("assignment", *d2, 710, 710);
    // heard again
    l.beat("b", "b#1", 800, 800);
    ld.watch_liveness(l.state, at(800));
    const auto d3 = ld.decide(l.state, 800);
    REQUIRE(d3);
    CHECK(d3->members == std::vector<std::string>{"a", "b"});
}

TEST_CASE("leader: a follower succeeds a silent leader when it comes first among the members heard of lately",
          "[runtime][coordination][liveness]") {
    using namespace std::chrono_literals;
    auto options = [](std::string name) {
        leader_options o{std::move(name), 1, 0, 0, std::chrono::milliseconds(60'000)};
        o.liveness_timeout = 600ms;
        return o;
    };
    fake_log l;
    l.put_at("leader", leader_claim{"a", "a#1", 1}, 0, 0);
    l.beat("a", "a#1", 0, 0);
    l.beat("b", "b#1", 0, 0);
    l.beat("c", "c#1", 0, 0);
    leader b(options("b")), c(options("c"));
    b.observe(l.state);
    c.observe(l.state);
    CHECK_FALSE(b.succeed_if_silent(l.state, at(300), "b#1"));  // a was heard 300 ms ago
    for (int t = 100; t <= 700; t += 100) {
        l.beat("b", "b#1", t, t);
        l.beat("c", "c#1", t, t);
    }
    CHECK_FALSE(c.succeed_if_silent(l.state, at(700), "c#1"));  // b comes first
    CHECK(b.succeed_if_silent(l.state, at(700), "b#1"));
    CHECK(b.elected());
    // b claims; c, which also took over at once (b went quiet too), claims after it: the topic orders them
    l.put_at("leader", *b.claim_to_write(), 710, 710);
    b.observe(l.state);
    CHECK(b.leading());
    // a claimant whose claim was read together with a newer one steps aside
    leader d(options("d"));
    d.observe(l.state);
    d.elected("d#1", at(720));
    const auto dc = d.claim_to_write();
    l.put_at("leader", *dc, 730, 740);
    l.put_at("leader", leader_claim{"e", "e#1", 1}, 735, 740);
    d.observe(l.state);
    CHECK_FALSE(d.elected());
    b.observe(l.state);
    CHECK_FALSE(b.leading());  // deposed by the newer claims
}

TEST_CASE("handoff: a task does not start while a member the decision left out is still heard of",
          "[runtime][coordination][liveness]") {
    using namespace std::chrono_literals;
    fake_log l;
    const std::int64_t e = l.claim("a", "a#1");
    l.put("status/b", status("b", "b#1", {e, 1}, {1}));
    // b's heartbeat, written before the decision that left it out, read at 1000
    l.beat("b", "b#1", 1'000, 1'000);
    const assignment d = decision(e, 2, {{"a", "a#1"}}, {"a", "a"});
    l.put_at("assignment", d, 1'010, 1'010);
    const local_tasks a{"a", "a#1", {0}, {}};
    const handoff_plan early = plan_handoff(d, l.state, a, {at(1'100), 600ms});
    CHECK(early.start.empty());
    CHECK(early.wait == std::vector<std::int32_t>{1});
    l.beat("a", "a#1", 1'700, 1'700);
    const handoff_plan later = plan_handoff(d, l.state, a, {at(1'700), 600ms});
    CHECK(later.start == std::vector<std::int32_t>{1});
    // one that withdrew holds nothing: no wait for it
    fake_log w;
    const std::int64_t e2 = w.claim("a", "a#1");
    instance_status gone = status("b", "b#1", {e2, 1}, {});
    gone.withdrawn = true;
    w.put("status/b", gone);
    w.beat("b", "b#1", 1'000, 1'000);
    const assignment d2 = decision(e2, 2, {{"a", "a#1"}}, {"a", "a"});
    CHECK(plan_handoff(d2, w.state, a, {at(1'100), 600ms}).start == std::vector<std::int32_t>{1});
}

TEST_CASE("handoff: a task starts only once every other member acted on a decision of the deciding leader's epoch",
          "[runtime][coordination]") {
    fake_log l;
    const std::int64_t e1 = l.claim("b", "b#1");
    l.put("assignment", decision(e1, 1, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "a"}));
    // A leader of a newer epoch that never read a decision giving task 1 to b
    // (compaction removed its claim) keeps task 1 where it last read it, since e1.1.
    const std::int64_t e2 = l.claim("a", "a#1");
    assignment d = decision(e2, 1, {{"a", "a#1"}, {"b", "b#1"}}, {"a", "a"});
    d.tasks[1].since_epoch = e1;
    d.tasks[1].since_version = 1;
    l.put("assignment", d);
    // b's status says it acted on e1.1 and runs nothing: published before it acted on the decision a never read
    l.put("status/b", status("b", "b#1", {e1, 1}, {}));
    const handoff_plan early = plan_handoff(d, l.state, {"a", "a#1", {0}, {}});
    CHECK(early.wait == std::vector<std::int32_t>{1});
    l.put("status/b", status("b", "b#1", {e2, 1}, {}));
    CHECK(plan_handoff(d, l.state, {"a", "a#1", {0}, {}}).start == std::vector<std::int32_t>{1});
}
