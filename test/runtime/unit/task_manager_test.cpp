// The task manager alone (detail/task_manager.hpp), against a host that
// records what each move asks of stores, inputs and the restore thread:
// promotion of a standby, clean closes only of running tasks, inputs given
// back, everything disposed, the rebuild after an abort, the state gauges.

#include <catch2/catch.hpp>

#include <strata/metrics/registry.hpp>
#include <strata/runtime/detail/task_manager.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace strata::runtime;
using namespace strata::runtime::detail;

namespace {

struct fake_task {
    fake_task(std::int32_t p, int g) : p_(p), generation(g) {}
    [[nodiscard]] std::int32_t partition() const { return p_; }
    [[nodiscard]] std::string id() const { return std::to_string(p_); }
    [[nodiscard]] task_state state() const { return s_; }
    void set_state(task_state s) { s_ = s; }

    std::int32_t p_;
    int generation;  // which make_task() call built it
    bool prepared = false;
    task_state s_ = task_state::created;
};
static_assert(managed_task<fake_task>);

struct fake_host final : task_host<fake_task> {
    std::vector<std::string> calls;
    bool promotes = true;
    int made = 0;

    static std::string name(const fake_task& t) { return t.id() + "#" + std::to_string(t.generation); }
    std::shared_ptr<fake_task> make_task(std::int32_t p) override {
        auto t = std::make_shared<fake_task>(p, ++made);
        calls.push_back("make " + name(*t));
        return t;
    }
    void restore(std::shared_ptr<fake_task> t) override { calls.push_back("restore " + name(*t)); }
    void keep_current(std::shared_ptr<fake_task> t) override { calls.push_back("keep current " + name(*t)); }
    bool promote(fake_task& t) override {
        calls.push_back("promote " + name(t));
        return promotes;
    }
    void close_stores(fake_task& t, bool clean) override {
        calls.push_back(std::string(clean ? "close clean " : "close ") + name(t));
    }
    void unassign_inputs(fake_task& t) override { calls.push_back("unassign " + name(t)); }
    void dispose(std::shared_ptr<fake_task> t) override { calls.push_back("dispose " + name(*t)); }
};

struct fixture {
    fake_host host;
    strata::metrics::registry reg;
    task_manager<fake_task> m{host, reg, "a"};
    const task_manager<fake_task>::prepare_fn prepare = [](fake_task& t) { t.prepared = true; };

    double tasks_in(const char* state) {
        return reg.gauge_for("strata_instance_tasks", "", {{"instance", "a"}, {"state", state}}).value();
    }
    void run(std::int32_t p) {
        m.start(p, prepare);
        m.started(*m.active().at(p));
    }
};

using calls = std::vector<std::string>;

}  // namespace

TEST_CASE("task manager: a task without a standby is built and restored, and with one, the standby is promoted",
          "[runtime][task_manager]") {
    fixture f;
    f.m.start(0, f.prepare);
    CHECK(f.host.calls == calls{"make 0#1", "restore 0#1"});
    CHECK(f.m.active().at(0)->state() == task_state::restoring);
    CHECK(f.m.active().at(0)->prepared);  // before the restore thread sees it
    CHECK(f.m.take_set_changed());
    CHECK_FALSE(f.m.take_set_changed());
    CHECK(f.tasks_in("restoring") == 1);

    f.m.start_standby(1);
    f.host.calls.clear();
    f.m.start(1, f.prepare);
    CHECK(f.host.calls == calls{"promote 1#2"});  // only its lag is restored, by the restore thread
    CHECK(f.m.standbys().empty());
    CHECK(f.m.active().at(1)->generation == 2);
    CHECK(f.m.active().at(1)->prepared);
    CHECK(f.tasks_in("restoring") == 2);
    CHECK(f.tasks_in("standby") == 0);
}

TEST_CASE("task manager: a standby the restore thread cannot promote is closed and the task restored anew",
          "[runtime][task_manager]") {
    fixture f;
    f.m.start_standby(3);
    f.host.promotes = false;
    f.host.calls.clear();
    f.m.start(3, f.prepare);
    CHECK(f.host.calls == calls{"promote 3#1", "close 3#1", "dispose 3#1", "make 3#2", "restore 3#2"});
    CHECK(f.m.active().at(3)->generation == 2);
}

TEST_CASE("task manager: only a running task is released clean, and every release gives the inputs back",
          "[runtime][task_manager]") {
    fixture f;
    f.run(0);
    f.m.start(1, f.prepare);  // still restoring
    const std::shared_ptr<fake_task> zero = f.m.active().at(0);
    f.host.calls.clear();
    f.m.release(0, true);
    f.m.release(1, true);
    f.m.release(7, true);  // not here: nothing
    CHECK(f.host.calls == calls{"close clean 0#1", "unassign 0#1", "dispose 0#1", "close 1#2", "unassign 1#2", "dispose 1#2"});
    CHECK(zero->state() == task_state::closed);
    CHECK_FALSE(f.m.holds(zero));  // a restore that finishes now starts nothing
    CHECK(f.m.active().empty());
    CHECK(f.tasks_in("running") == 0);
    CHECK(f.tasks_in("restoring") == 0);
}

TEST_CASE("task manager: closing everything closes running tasks clean, the rest as they are, and keeps the inputs",
          "[runtime][task_manager]") {
    fixture f;
    f.run(0);
    f.m.start(1, f.prepare);
    f.m.start_standby(2);
    f.host.calls.clear();
    f.m.close_all(true);
    CHECK(f.host.calls == calls{"close clean 0#1", "dispose 0#1", "close 1#2", "dispose 1#2", "close 2#3", "dispose 2#3"});
    CHECK(f.m.active().empty());
    CHECK(f.m.standbys().empty());
    for (const char* s : {"running", "restoring", "standby"}) CHECK(f.tasks_in(s) == 0);

    fixture g;  // after a failure: nothing clean
    g.run(0);
    g.host.calls.clear();
    g.m.close_all(false);
    CHECK(g.host.calls == calls{"close 0#1", "dispose 0#1"});
}

TEST_CASE("task manager: after an aborted transaction every running task restores anew, and a restoring one goes on",
          "[runtime][task_manager]") {
    fixture f;
    f.run(0);
    f.m.start(1, f.prepare);
    f.m.start_standby(2);
    f.host.calls.clear();
    int prepared = 0;
    f.m.rebuild_running([&](fake_task&) { ++prepared; });
    CHECK(f.host.calls == calls{"close 0#1", "unassign 0#1", "dispose 0#1", "make 0#4", "restore 0#4"});
    CHECK(prepared == 1);
    CHECK(f.m.active().at(0)->state() == task_state::restoring);
    CHECK(f.m.active().at(1)->generation == 2);
    CHECK(f.m.standbys().at(2)->state() == task_state::standby);
    CHECK(f.tasks_in("restoring") == 2);
    CHECK(f.tasks_in("running") == 0);
}

TEST_CASE("task manager: after at-least-once writes of some tasks failed, only those restore anew",
          "[runtime][task_manager]") {
    fixture f;
    f.run(0);
    f.run(1);
    f.run(2);
    f.host.calls.clear();
    int prepared = 0;
    f.m.rebuild_running([&](fake_task&) { ++prepared; }, [](std::int32_t p) { return p == 1; });
    CHECK(f.host.calls == calls{"close 1#2", "unassign 1#2", "dispose 1#2", "make 1#4", "restore 1#4"});
    CHECK(prepared == 1);
    CHECK(f.m.active().at(0)->state() == task_state::running);
    CHECK(f.m.active().at(1)->state() == task_state::restoring);
    CHECK(f.m.active().at(2)->state() == task_state::running);
    CHECK(f.tasks_in("restoring") == 1);
    CHECK(f.tasks_in("running") == 2);
}

TEST_CASE("task manager: losing the membership lets go of the active tasks and keeps the standbys",
          "[runtime][task_manager]") {
    fixture f;
    f.run(0);
    f.run(1);
    f.m.start_standby(2);
    (void)f.m.take_set_changed();
    f.m.release_all();
    CHECK(f.m.active().empty());
    CHECK(f.m.standby_partitions() == std::set<std::int32_t>{2});
    CHECK(f.m.take_set_changed());
    CHECK(f.m.running().empty());
    CHECK_FALSE(f.m.has_running());
    f.m.drop_standbys();
    CHECK(f.m.standbys().empty());
}
