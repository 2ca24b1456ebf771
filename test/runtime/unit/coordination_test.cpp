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
    ld.writes_lost();  // nor did the decision
    const auto again = ld.decide(l.state, 0);
    REQUIRE(again);
    CHECK(again->version == 1);
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
    CHECK(f[0] == fence_target{"app-b2", "b2#9-run"});
    CHECK(f[1] == fence_target{"app-c", "c#1-run"});
    // b restarted: its status is from another membership than the decision's
    l.put("status/b", with_producer(status("b", "b#2", {}, {}), "app-b"));
    CHECK(fence_targets(d, l.state, "a").size() == 3);
}
