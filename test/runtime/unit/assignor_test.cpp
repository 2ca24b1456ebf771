// The leader's placement rule, alone: balance from scratch, a dead
// instance's tasks to the warmest standby, a new instance warmed up before a
// task moves to it, a move that waits for the old instance to let go, and
// the same decision whatever order the members come in.

#include <catch2/catch.hpp>

#include <strata/runtime/detail/assignor.hpp>

#include <map>
#include <string>
#include <vector>

using namespace strata::runtime;
using namespace strata::runtime::detail;

namespace {

using statuses = std::map<std::string, instance_status, std::less<>>;

std::map<std::string, std::vector<std::int32_t>> actives(const std::vector<task_placement>& tasks) {
    std::map<std::string, std::vector<std::int32_t>> out;
    for (const auto& t : tasks) out[t.active].push_back(t.task);
    return out;
}

assignment decided(std::vector<task_placement> tasks, std::vector<std::string> members) {
    assignment a{};
    a.version = 7;
    a.members = std::move(members);
    a.tasks = std::move(tasks);
    return a;
}

instance_status status(std::string name, std::vector<std::int32_t> active, std::vector<standby_lag> standbys = {}) {
    instance_status s{};
    s.instance = std::move(name);
    s.active = std::move(active);
    s.standbys = std::move(standbys);
    return s;
}

}  // namespace

TEST_CASE("assignor: from nothing, tasks spread evenly and standbys avoid the active instance",
          "[runtime][assignor]") {
    assignor_input in;
    in.tasks = 6;
    in.members = {"c", "a", "b"};
    in.standby_replicas = 1;
    const auto tasks = assign_tasks(in);
    REQUIRE(tasks.size() == 6);
    const auto by = actives(tasks);
    REQUIRE(by.size() == 3);
    for (const auto& [m, ts] : by) CHECK(ts.size() == 2);
    std::map<std::string, int> standbys;
    for (const auto& t : tasks) {
        REQUIRE(t.standbys.size() == 1);
        CHECK(t.standbys[0] != t.active);
        CHECK(t.release_from.empty());
        ++standbys[t.standbys[0]];
    }
    for (const auto& [m, n] : standbys) CHECK(n == 2);
}

TEST_CASE("assignor: a dead instance's tasks go to the live instance with the warmest standby",
          "[runtime][assignor]") {
    const assignment current = decided({{0, "a", {"b"}, "", 0, 0},
                                        {1, "a", {"c"}, "", 0, 0},
                                        {2, "b", {"a", "c"}, "", 0, 0},
                                        {3, "b", {"c"}, "", 0, 0},
                                        {4, "c", {"a"}, "", 0, 0},
                                        {5, "c", {"b"}, "", 0, 0}},
                                       {"a", "b", "c"});
    statuses s{{"a", status("a", {0, 1}, {{2, 50}, {4, 0}})}, {"c", status("c", {4, 5}, {{1, 0}, {2, 3}, {3, 0}})}};
    assignor_input in;
    in.tasks = 6;
    in.members = {"a", "c"};  // b died
    in.current = &current;
    in.statuses = &s;
    in.standby_replicas = 1;
    const auto tasks = assign_tasks(in);
    CHECK(tasks[2].active == "c");  // lag 3 beats a's 50
    CHECK(tasks[3].active == "c");  // the only standby
    CHECK(tasks[2].release_from.empty());  // b is dead: nothing to wait for
    CHECK(tasks[3].release_from.empty());
    for (const auto& t : tasks)
        for (const auto& sb : t.standbys) CHECK(sb != "b");
    CHECK(tasks[0].active == "a");  // the living keep what they run
    CHECK(tasks[5].active == "c");
    // c now runs four and a two: a takes one it has a warm copy of, from c.
    CHECK(tasks[4].active == "a");
    CHECK(tasks[4].release_from == "c");
    CHECK(actives(tasks)["a"].size() == 3);
}

TEST_CASE("assignor: a new instance gets a warm-up copy first, and the task moves once it caught up",
          "[runtime][assignor]") {
    const assignment current = decided({{0, "a", {}, "", 0, 0},
                                        {1, "a", {}, "", 0, 0},
                                        {2, "a", {}, "", 0, 0},
                                        {3, "b", {}, "", 0, 0},
                                        {4, "b", {}, "", 0, 0},
                                        {5, "b", {}, "", 0, 0}},
                                       {"a", "b"});
    assignor_input in;
    in.tasks = 6;
    in.members = {"a", "b", "c"};  // c joined
    in.current = &current;
    in.acceptable_lag = 100;

    statuses cold{{"a", status("a", {0, 1, 2})}, {"b", status("b", {3, 4, 5})}, {"c", status("c", {})}};
    in.statuses = &cold;
    auto tasks = assign_tasks(in);
    CHECK(actives(tasks)["a"].size() == 3);  // nothing moves to a cold instance
    CHECK(actives(tasks)["c"].empty());
    CHECK(tasks[0].standbys == std::vector<std::string>{"c"});  // it warms up a copy of one

    statuses behind = cold;
    behind["c"] = status("c", {}, {{0, 5000}});
    in.statuses = &behind;
    tasks = assign_tasks(in);
    CHECK(tasks[0].active == "a");  // still too far behind

    statuses caught_up = cold;
    caught_up["c"] = status("c", {}, {{0, 40}});
    in.statuses = &caught_up;
    tasks = assign_tasks(in);
    CHECK(tasks[0].active == "c");
    CHECK(tasks[0].release_from == "a");  // a lets go first
    CHECK(actives(tasks)["a"].size() == 2);
    CHECK(actives(tasks)["b"].size() == 3);
}

TEST_CASE("assignor: a move waits until its old instance no longer lists the task", "[runtime][assignor]") {
    const assignment current = decided({{0, "c", {}, "a", 0, 0}, {1, "a", {}, "", 0, 0}}, {"a", "c"});
    assignor_input in;
    in.tasks = 2;
    in.members = {"a", "c"};
    in.current = &current;
    statuses still{{"a", status("a", {0, 1})}, {"c", status("c", {})}};
    in.statuses = &still;
    CHECK(assign_tasks(in)[0].release_from == "a");
    statuses released{{"a", status("a", {1})}, {"c", status("c", {})}};
    in.statuses = &released;
    CHECK(assign_tasks(in)[0].release_from.empty());
    in.members = {"c"};  // a died before letting go: nothing to wait for
    in.statuses = &still;
    const auto tasks = assign_tasks(in);
    CHECK(tasks[0].release_from.empty());
    CHECK(tasks[1].active == "c");
}

TEST_CASE("assignor: the decision does not depend on the order of the members", "[runtime][assignor]") {
    assignor_input in;
    in.tasks = 7;
    in.standby_replicas = 2;
    in.members = {"x", "y", "z", "w"};
    const auto one = assign_tasks(in);
    in.members = {"z", "w", "y", "x", "x"};
    CHECK(assign_tasks(in) == one);
}

TEST_CASE("assignor: a task on its way to an instance does not move again before it arrived",
          "[runtime][assignor]") {
    // Task 0 moves from a to c (a has yet to let go); c is the busiest, and
    // b has a warm standby of task 0. Moving task 0 on to b would name c as
    // the instance to wait for, and forget a, which still runs it.
    auto t = [](std::int32_t p, std::string active, std::string release_from = {}) {
        task_placement x{};
        x.task = p;
        x.active = std::move(active);
        x.release_from = std::move(release_from);
        return x;
    };
    const assignment current = decided({t(0, "c", "a"), t(1, "c"), t(2, "c"), t(3, "c"), t(4, "a")}, {"a", "b", "c"});
    statuses s;
    s["a"] = status("a", {0, 4});
    s["b"] = status("b", {}, {{0, 0}});
    s["c"] = status("c", {1, 2, 3});
    assignor_input in;
    in.tasks = 5;
    in.members = {"a", "b", "c"};
    in.current = &current;
    in.statuses = &s;
    const auto tasks = assign_tasks(in);
    CHECK(tasks[0].active == "c");
    CHECK(tasks[0].release_from == "a");
}

namespace {

/// Two processes of two processing threads each: p's threads are p and p-t1.
statuses two_processes_of_two_threads() {
    statuses s;
    for (const std::string& p : {std::string("p"), std::string("q")})
        for (const std::string& name : {p, p + "-t1"}) {
            s[name] = status(name, {});
            s[name].process = p;
        }
    return s;
}

}  // namespace

TEST_CASE("assignor: tasks spread over the processing threads, and a standby is never on its active task's process",
          "[runtime][assignor]") {
    statuses s = two_processes_of_two_threads();
    assignor_input in;
    in.tasks = 8;
    in.members = {"p", "p-t1", "q", "q-t1"};
    in.statuses = &s;
    in.standby_replicas = 1;
    const auto tasks = assign_tasks(in);
    for (const auto& [m, ts] : actives(tasks)) CHECK(ts.size() == 2);
    CHECK(actives(tasks).size() == 4);
    for (const auto& t : tasks) {
        REQUIRE(t.standbys.size() == 1);
        CHECK(s[t.standbys[0]].process != s[t.active].process);
    }

    // More replicas than other processes: one standby still, not one per thread.
    in.standby_replicas = 3;
    for (const auto& t : assign_tasks(in)) {
        REQUIRE(t.standbys.size() == 1);
        CHECK(s[t.standbys[0]].process != s[t.active].process);
    }

    // One process alone: no standby at all, however many threads.
    statuses one{{"p", s["p"]}, {"p-t1", s["p-t1"]}};
    in.members = {"p", "p-t1"};
    in.statuses = &one;
    in.standby_replicas = 1;
    for (const auto& t : assign_tasks(in)) CHECK(t.standbys.empty());
}

TEST_CASE("assignor: a standby kept from the last decision on the active task's process is replaced",
          "[runtime][assignor]") {
    // Task 0's standby was on p-t1 while it ran on q (say, before p-t1 said
    // which process it is part of); it now runs on p.
    statuses s = two_processes_of_two_threads();
    const assignment current = decided({{0, "p", {"p-t1"}, "", 0, 0}}, {"p", "p-t1", "q", "q-t1"});
    assignor_input in;
    in.tasks = 1;
    in.members = {"p", "p-t1", "q", "q-t1"};
    in.current = &current;
    in.statuses = &s;
    in.standby_replicas = 1;
    const auto tasks = assign_tasks(in);
    CHECK(tasks[0].active == "p");
    REQUIRE(tasks[0].standbys.size() == 1);
    CHECK(s[tasks[0].standbys[0]].process == "q");
}

TEST_CASE("assignor: a move between two threads of one process warms a copy there first, beside the standby that counts",
          "[runtime][assignor]") {
    // p and q run two tasks each, with standbys on each other; p-t1, a
    // second thread of p, just started.
    statuses s;
    s["p"] = status("p", {0, 1}, {{2, 0}, {3, 0}});
    s["q"] = status("q", {2, 3}, {{0, 0}, {1, 0}});
    s["p-t1"] = status("p-t1", {});
    s["p"].process = s["p-t1"].process = "p";
    const assignment current =
        decided({{0, "p", {"q"}, "", 0, 0}, {1, "p", {"q"}, "", 0, 0}, {2, "q", {"p"}, "", 0, 0}, {3, "q", {"p"}, "", 0, 0}},
                {"p", "q"});
    assignor_input in;
    in.tasks = 4;
    in.members = {"p", "p-t1", "q"};
    in.current = &current;
    in.statuses = &s;
    in.standby_replicas = 1;
    in.acceptable_lag = 100;
    auto tasks = assign_tasks(in);
    CHECK(actives(tasks)["p-t1"].empty());  // nothing moves to a cold thread
    CHECK(tasks[0].active == "p");
    CHECK(tasks[0].standbys == std::vector<std::string>{"p-t1", "q"});  // a warm-up, and the standby that counts

    // Once p-t1's copy caught up, the task moves to it and keeps q's standby.
    s["p-t1"].standbys = {{0, 10}};
    const assignment next = decided(tasks, {"p", "p-t1", "q"});
    in.current = &next;
    tasks = assign_tasks(in);
    CHECK(tasks[0].active == "p-t1");
    CHECK(tasks[0].release_from == "p");
    CHECK(tasks[0].standbys == std::vector<std::string>{"q"});
    for (const auto& t : tasks) CHECK(t.standbys.size() == 1);
}
