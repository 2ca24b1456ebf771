// The committer alone (detail/committer.hpp), against a fake commit port
// that records every call and a clock the test moves: the order of a
// commit's steps under each guarantee, what it carries, the lease, and
// what a refused, aborted or fenced commit leaves behind.

#include <catch2/catch.hpp>

#include <strata/metrics/registry.hpp>
#include <strata/runtime/detail/committer.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

using namespace strata::runtime::detail;
using namespace std::chrono_literals;

namespace {

struct fake_task {
    std::int32_t p = 0;
    std::vector<std::string>* calls = nullptr;
    std::vector<std::int64_t> next_offsets;
    std::vector<std::int64_t> partition_times;
    std::uint64_t uncommitted = 0;

    [[nodiscard]] std::int32_t partition() const { return p; }
    [[nodiscard]] std::string id() const { return std::to_string(p); }
    bool flush_fails = false;  // a changelog record was not acknowledged
    void flush_stores() {
        calls->push_back("flush stores " + id());
        if (flush_fails) throw strata::changelog_error("18 record(s) were not acknowledged");
    }
    void commit_self_checkpointing_stores() { calls->push_back("store commits " + id()); }
};
static_assert(committable_task<fake_task>);

struct fake_port final : commit_port {
    std::vector<std::string> calls;
    std::vector<std::vector<offset_to_commit>> committed;
    group_answer answer = group_answer::accepted;
    bool group_throws = false;
    transaction_end end = transaction_end::committed;
    bool fenced = false;
    std::chrono::milliseconds commit_takes{0};
    std::chrono::steady_clock::time_point* now = nullptr;

    bool output_fails = false;  // an output record of no task (a dead letter) was not acknowledged
    std::vector<std::int32_t> output_fails_for;  // tasks an output record of which was not acknowledged
    output_failures flush_output() override {
        calls.push_back("flush output");
        if (output_fails) throw strata::changelog_error("3 output record(s) were not acknowledged");
        if (output_fails_for.empty()) return {};
        return {output_fails_for, "2 output record(s) of task " + std::to_string(output_fails_for.front()) +
                                      " were not acknowledged"};
    }
    group_answer commit_to_group(const std::vector<offset_to_commit>& o) override {
        calls.push_back("commit to group");
        *now += commit_takes;
        if (group_throws) throw std::runtime_error("coordinator away");
        if (answer == group_answer::accepted) committed.push_back(o);
        return answer;
    }
    transaction_end commit_transaction(const std::vector<offset_to_commit>& o) override {
        calls.push_back("commit transaction");
        if (fenced) throw std::runtime_error("fenced");
        if (end == transaction_end::committed) committed.push_back(o);
        return end;
    }
    void begin_transaction() override { calls.push_back("begin"); }
    bool rejoining = false;  // the member joins the group again
    [[nodiscard]] bool group_rejoining() const override { return rejoining; }
    bool exactly_once = false;
    bool discard_failed_writes() override {
        calls.push_back(exactly_once ? "abort" : "settle");
        return !fenced;
    }
};

struct fixture {
    std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
    fake_port port;
    strata::metrics::registry reg;
    fake_task t0, t1;

    explicit fixture(bool exactly_once) {
        port.now = &now;
        port.exactly_once = exactly_once;
        t0 = {0, &port.calls, {10, -1}, {1000, -1}, 0};
        t1 = {1, &port.calls, {-1, -1}, {-1, -1}, 0};
        o.exactly_once = exactly_once;
        o.instance = "a";
        o.input_topics = {"in", "other"};
        o.session_timeout = 6'000ms;
        o.lease_topic = "coordination";
        o.now = [this] { return now; };
        o.wall_ms = [] { return std::int64_t{1'700'000'000'000}; };
    }
    committer_options o;
    committer make() { return committer(o, port, reg); }
    /// At-least-once, within the lease: both tasks have work to commit
    /// (t0 5 records, t1 3 records up to in[1]@20), nothing recorded yet.
    void two_tasks_with_work(committer& c) {
        c.keep_lease();
        port.calls.clear();
        port.committed.clear();
        t0.uncommitted = 5;
        t1.next_offsets = {20, -1};
        t1.uncommitted = 3;
    }
    std::uint64_t count(const char* name, strata::metrics::labels l) { return reg.counter_for(name, "", l).value(); }
};

}  // namespace

TEST_CASE("committer: at-least-once commits nothing before the lease, then flushes stores and outputs before the offsets",
          "[runtime][committer]") {
    fixture f(false);
    committer c = f.make();
    f.t0.uncommitted = 3;
    const std::vector<fake_task*> ts{&f.t0, &f.t1};
    CHECK_FALSE(c.may_write());
    CHECK(c.commit(ts) == commit_outcome::held);
    CHECK(f.port.calls.empty());

    c.keep_lease();  // the lease commit
    REQUIRE(c.may_write());
    f.port.calls.clear();
    f.port.committed.clear();
    CHECK(c.commit(ts) == commit_outcome::committed);
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "flush stores 1", "flush output", "commit to group"});
    REQUIRE(f.port.committed.size() == 1);
    const std::vector<offset_to_commit>& sent = f.port.committed[0];
    REQUIRE(sent.size() == 1);  // only what a task has read
    CHECK(sent[0].topic == "in");
    CHECK(sent[0].partition == 0);
    CHECK(sent[0].offset == 10);
    const commit_metadata m = decode_commit_metadata(sent[0].metadata);
    CHECK(m.partition_time == 1000);
    CHECK(m.committed_by == "a");
    CHECK(m.commit_ms == 1'700'000'000'000);
    CHECK(f.t0.uncommitted == 0);
    CHECK(f.count("strata_task_commits_total", {{"task", "0"}}) == 1);

    f.port.calls.clear();
    CHECK(c.commit(ts) == commit_outcome::nothing_to_commit);  // no new work
    CHECK(f.port.calls.empty());
}

TEST_CASE("committer: an accepted commit renews the lease from when it was sent, a refused one does not",
          "[runtime][committer]") {
    fixture f(false);
    committer c = f.make();
    c.keep_lease();
    const auto first = c.current_lease().until();
    CHECK(first == f.now + 6'000ms - 1'200ms);  // a session less a fifth

    f.now += 3'000ms;
    f.port.commit_takes = 500ms;  // the answer comes late: the lease runs from the request
    const auto sent = f.now;
    f.t0.uncommitted = 1;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::committed);
    CHECK(c.current_lease().until() == sent + 4'800ms);

    f.now += 1'000ms;
    f.port.answer = group_answer::rebalancing;
    f.t0.uncommitted = 2;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::refused);
    CHECK(f.t0.uncommitted == 2);  // goes with the next commit, or is processed again
    CHECK(c.current_lease().until() == sent + 4'800ms);
    CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 1);
}

TEST_CASE("committer: an at-least-once commit the group does not answer in time keeps its work and renews no lease",
          "[runtime][committer]") {
    fixture f(false);
    committer c = f.make();
    c.keep_lease();
    const auto until = c.current_lease().until();
    f.now += 1'000ms;
    f.port.answer = group_answer::unanswered;
    f.port.commit_takes = 1'000ms;  // the port's wait, run out
    f.t0.uncommitted = 4;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::refused);
    CHECK(f.t0.uncommitted == 4);  // goes with the next commit
    CHECK(c.current_lease().until() == until);
    CHECK(f.count("strata_instance_commits_unanswered_total", {{"instance", "a"}}) == 1);
    CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 0);

    // Unanswered lease commits are retried until the lease runs out; then nothing is written.
    f.now = until - 2'000ms;
    f.port.commit_takes = 0ms;
    const std::size_t before = f.port.calls.size();
    c.keep_lease();
    c.keep_lease();
    CHECK(f.port.calls.size() == before + 1);
    f.now = until;
    c.keep_lease();
    CHECK_FALSE(c.may_write());
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::held);

    f.port.answer = group_answer::accepted;  // the coordinator answers again
    f.now += 50ms;
    c.keep_lease();
    CHECK(c.may_write());
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::committed);
    CHECK(f.t0.uncommitted == 0);
}

TEST_CASE("committer: an at-least-once commit deferred while the member joins the group again keeps its work, "
          "renews no lease, and is counted apart from refusals",
          "[runtime][committer]") {
    fixture f(false);
    committer c = f.make();
    c.keep_lease();
    const auto until = c.current_lease().until();
    f.now += 1'000ms;
    f.port.answer = group_answer::deferred;
    f.t0.uncommitted = 3;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::refused);
    CHECK(f.t0.uncommitted == 3);  // goes with the next commit
    CHECK(f.port.committed.size() == 1);  // the first lease only
    CHECK(c.current_lease().until() == until);
    CHECK(f.count("strata_instance_commits_deferred_total", {{"instance", "a"}}) == 1);
    CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 0);

    // A lease renewal deferred is tried again 50 ms later; the lease runs out meanwhile if the join takes long.
    f.now = until - 2'000ms;
    c.keep_lease();
    f.now = until;
    c.keep_lease();
    CHECK_FALSE(c.may_write());
    f.port.answer = group_answer::accepted;  // steady in the group again
    f.now += 50ms;
    c.keep_lease();
    CHECK(c.may_write());
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::committed);
    CHECK(f.t0.uncommitted == 0);
}

TEST_CASE("committer: the lease is renewed with a third of a session left, retried when refused, and runs out",
          "[runtime][committer]") {
    fixture f(false);
    committer c = f.make();
    c.keep_lease();
    const auto until = c.current_lease().until();
    f.port.calls.clear();
    f.now = until - 2'001ms;  // more than a third left: nothing to do
    c.keep_lease();
    CHECK(f.port.calls.empty());

    f.now = until - 2'000ms;
    f.port.group_throws = true;  // the coordinator is away
    c.keep_lease();
    CHECK(f.port.calls.size() == 1);
    c.keep_lease();  // retried only 50 ms later
    CHECK(f.port.calls.size() == 1);
    f.now += 50ms;
    f.port.group_throws = false;
    f.port.answer = group_answer::rebalancing;
    c.keep_lease();
    CHECK(f.port.calls.size() == 2);
    CHECK(c.may_write());

    f.now = until;  // still refused when it runs out
    c.keep_lease();
    CHECK_FALSE(c.may_write());
    CHECK(f.count("strata_instance_lease_expired_total", {{"instance", "a"}}) == 1);
    f.t0.uncommitted = 1;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::held);

    c.new_membership();
    f.port.answer = group_answer::accepted;
    c.keep_lease();
    CHECK(c.may_write());
}

TEST_CASE("committer: a punctuation's writes are committed though no record was read", "[runtime][committer]") {
    for (const bool eos : {false, true}) {
        INFO("exactly-once: " << eos);
        fixture f(eos);
        committer c = f.make();
        c.keep_lease();
        f.port.calls.clear();
        f.t1.uncommitted = 1;  // a punctuation ran; nothing was read
        CHECK(c.commit(std::vector<fake_task*>{&f.t1}) == commit_outcome::committed);
        CHECK(f.port.calls.front() == "flush stores 1");
        if (eos) CHECK(f.port.calls[1] == "commit transaction");  // the store writes' transaction ends
        else CHECK(f.port.calls == std::vector<std::string>{"flush stores 1", "flush output"});  // no offsets to commit
        CHECK(f.t1.uncommitted == 0);
    }
}

TEST_CASE("committer: exactly-once commits the transaction, opens the next, then lets the stores commit",
          "[runtime][committer]") {
    fixture f(true);
    committer c = f.make();
    CHECK(c.may_write());  // fencing guards it, not a lease
    f.t0.uncommitted = 5;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::committed);
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "flush stores 1", "commit transaction", "begin",
                                                   "store commits 0", "store commits 1"});
    REQUIRE(f.port.committed.size() == 1);
    CHECK(f.port.committed[0].size() == 1);
    CHECK(f.t0.uncommitted == 0);
}

TEST_CASE("committer: exactly-once, an interval commit waits while the member joins the group again, its work in the "
          "open transaction, for at most defer_at_most, and a handover does not wait",
          "[runtime][committer]") {
    fixture f(true);
    f.o.defer_at_most = 5'000ms;
    committer c = f.make();
    const std::vector<fake_task*> ts{&f.t0};
    f.t0.uncommitted = 5;
    f.port.rejoining = true;
    CHECK(c.commit(ts, commit_kind::interval) == commit_outcome::deferred);
    CHECK(f.port.calls.empty());  // nothing flushed, nothing sent: the transaction stays open
    CHECK(f.t0.uncommitted == 5);
    f.now += 4'999ms;
    CHECK(c.commit(ts, commit_kind::interval) == commit_outcome::deferred);
    CHECK(f.count("strata_instance_commits_deferred_total", {{"instance", "a"}}) == 2);

    f.now += 1ms;  // waited long enough: it goes, rejoining or not
    CHECK(c.commit(ts, commit_kind::interval) == commit_outcome::committed);
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "commit transaction", "begin", "store commits 0"});
    CHECK(f.t0.uncommitted == 0);

    f.t0.uncommitted = 3;  // a new wait begins
    CHECK(c.commit(ts, commit_kind::interval) == commit_outcome::deferred);
    f.port.calls.clear();
    CHECK(c.commit(ts, commit_kind::handover) == commit_outcome::committed);  // a release or a stop does not wait
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "commit transaction", "begin", "store commits 0"});

    f.port.rejoining = false;
    f.t0.uncommitted = 2;
    CHECK(c.commit(ts, commit_kind::interval) == commit_outcome::committed);
    CHECK(f.port.committed.size() == 3);
    CHECK(f.count("strata_instance_commits_deferred_total", {{"instance", "a"}}) == 3);
}

TEST_CASE("committer: at-least-once leaves waiting for a rejoin to its port (which sends nothing then)",
          "[runtime][committer]") {
    fixture f(false);
    f.o.defer_at_most = 5'000ms;
    committer c = f.make();
    f.two_tasks_with_work(c);
    f.port.rejoining = true;
    f.port.answer = group_answer::deferred;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}, commit_kind::interval) == commit_outcome::refused);
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "flush stores 1", "flush output", "commit to group"});
    CHECK(f.count("strata_instance_commits_deferred_total", {{"instance", "a"}}) == 1);
}

TEST_CASE("committer: an aborted transaction asks for a rebuild, and a fenced producer throws", "[runtime][committer]") {
    fixture f(true);
    committer c = f.make();
    f.t0.uncommitted = 5;
    f.port.end = transaction_end::aborted;
    CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::aborted);
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "commit transaction", "begin"});  // no store commits
    CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 1);
    CHECK(f.count("strata_task_commits_total", {{"task", "0"}}) == 0);

    f.port.calls.clear();
    f.port.fenced = true;
    CHECK_THROWS(c.commit(std::vector<fake_task*>{&f.t0}));
    CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "commit transaction"});  // nothing begins
}

TEST_CASE("committer: a write that failed ends the commit with nothing committed and the tasks to be rebuilt (the "
          "transaction aborted, or at-least-once's writes settled), and stops the instance when the producer cannot "
          "go on",
          "[runtime][committer]") {
    SECTION("exactly-once: aborted, the next transaction opened, the tasks to be rebuilt") {
        fixture f(true);
        committer c = f.make();
        f.t0.uncommitted = 5;
        f.t0.flush_fails = true;
        CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::aborted);
        CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "abort", "begin"});
        CHECK(f.port.committed.empty());
        CHECK(c.failed_tasks().empty());  // one transaction: every task is rebuilt
        CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 1);
        CHECK(f.t0.uncommitted == 5);
    }
    SECTION("exactly-once, a producer that cannot abort: the error stands") {
        fixture f(true);
        committer c = f.make();
        f.t0.uncommitted = 5;
        f.t0.flush_fails = true;
        f.port.fenced = true;
        CHECK_THROWS_WITH(c.commit(std::vector<fake_task*>{&f.t0}), Catch::Contains("not acknowledged"));
        CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "abort"});
    }
    SECTION("exactly-once, a failure that is not a changelog's: the error stands") {
        fixture f(true);
        committer c = f.make();
        CHECK_FALSE(c.recover_from_failed_write(std::make_exception_ptr(std::runtime_error("a processor's bug"))));
        CHECK(f.port.calls.empty());
        // A changelog write nested in a processing error (the processor wrote to a store) aborts.
        std::exception_ptr nested;
        try {
            try {
                throw strata::changelog_error("not acknowledged");
            } catch (...) {
                std::throw_with_nested(std::runtime_error("task 0 failed on the record at in[0]@7"));
            }
        } catch (...) {
            nested = std::current_exception();
        }
        CHECK(c.recover_from_failed_write(nested));
        CHECK(f.port.calls == std::vector<std::string>{"abort", "begin"});
    }
    SECTION("at-least-once: what is on its way settles, nothing is committed, the tasks to be rebuilt") {
        fixture f(false);
        committer c = f.make();
        c.keep_lease();  // the lease commit
        REQUIRE(c.may_write());
        f.port.calls.clear();
        f.port.committed.clear();
        f.t0.uncommitted = 5;
        f.t0.flush_fails = true;
        CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::aborted);
        CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "settle"});  // no transaction to begin
        CHECK(f.port.committed.empty());
        CHECK(f.t0.uncommitted == 5);
        CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 1);
    }
    SECTION("at-least-once: an output record not acknowledged ends the commit the same way") {
        fixture f(false);
        committer c = f.make();
        c.keep_lease();
        f.port.calls.clear();
        f.port.committed.clear();
        f.t0.uncommitted = 5;
        f.port.output_fails = true;
        CHECK(c.commit(std::vector<fake_task*>{&f.t0}) == commit_outcome::aborted);
        CHECK(f.port.calls == std::vector<std::string>{"flush stores 0", "flush output", "settle"});
        CHECK(f.port.committed.empty());
    }
    SECTION("at-least-once: one task's changelog records failed, the others' landed: their work is committed and "
            "only the failed task is to be rebuilt") {
        fixture f(false);
        committer c = f.make();
        f.two_tasks_with_work(c);
        f.t0.flush_fails = true;
        CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::committed);
        CHECK(f.port.calls ==
              std::vector<std::string>{"flush stores 0", "flush stores 1", "flush output", "settle", "commit to group"});
        REQUIRE(f.port.committed.size() == 1);
        REQUIRE(f.port.committed[0].size() == 1);  // t1's offset, not t0's
        CHECK(f.port.committed[0][0].partition == 1);
        CHECK(f.port.committed[0][0].offset == 20);
        CHECK(c.failed_tasks() == std::vector<std::int32_t>{0});
        CHECK(c.last_failure().find("not acknowledged") != std::string::npos);
        CHECK(f.t0.uncommitted == 5);
        CHECK(f.t1.uncommitted == 0);
        CHECK(f.count("strata_instance_commits_failed_total", {{"instance", "a"}}) == 1);
        CHECK(f.count("strata_task_commits_total", {{"task", "0"}}) == 0);
        CHECK(f.count("strata_task_commits_total", {{"task", "1"}}) == 1);

        // The next commit starts with no failed task.
        f.port.calls.clear();
        f.t0.flush_fails = false;
        f.t1.uncommitted = 1;
        CHECK(c.commit(std::vector<fake_task*>{&f.t1}) == commit_outcome::committed);
        CHECK(c.failed_tasks().empty());
    }
    SECTION("at-least-once: one task's output records failed: the others' work is committed, that task is to be "
            "rebuilt") {
        fixture f(false);
        committer c = f.make();
        f.two_tasks_with_work(c);
        f.port.output_fails_for = {0};
        CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::committed);
        CHECK(f.port.calls ==
              std::vector<std::string>{"flush stores 0", "flush stores 1", "flush output", "settle", "commit to group"});
        REQUIRE(f.port.committed.size() == 1);
        REQUIRE(f.port.committed[0].size() == 1);
        CHECK(f.port.committed[0][0].partition == 1);
        CHECK(c.failed_tasks() == std::vector<std::int32_t>{0});
        CHECK(c.last_failure().find("of task 0") != std::string::npos);
        CHECK(f.t0.uncommitted == 5);
        CHECK(f.t1.uncommitted == 0);

        // A task whose changelog and output both failed is named once.
        f.port.calls.clear();
        f.port.committed.clear();
        f.t0.flush_fails = true;
        f.t1.uncommitted = 1;
        CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::committed);
        CHECK(c.failed_tasks() == std::vector<std::int32_t>{0});
        CHECK(f.port.committed.size() == 1);
    }
    SECTION("at-least-once: every task's records failed, or an output's as well: nothing committed, every task to "
            "be rebuilt") {
        fixture f(false);
        committer c = f.make();
        f.two_tasks_with_work(c);
        f.t0.flush_fails = true;
        SECTION("an output of no task too") { f.port.output_fails = true; }
        SECTION("both tasks") { f.t1.flush_fails = true; }
        SECTION("the other task's output") { f.port.output_fails_for = {1}; }
        CHECK(c.commit(std::vector<fake_task*>{&f.t0, &f.t1}) == commit_outcome::aborted);
        CHECK(f.port.committed.empty());
        CHECK(c.failed_tasks().empty());  // aborted: the caller rebuilds them all
        CHECK(f.t1.uncommitted == 3);
    }
    SECTION("at-least-once, a producer whose queue does not settle: the error stands") {
        fixture f(false);
        committer c = f.make();
        c.keep_lease();
        f.port.committed.clear();
        f.t0.uncommitted = 5;
        f.t0.flush_fails = true;
        f.port.fenced = true;
        CHECK_THROWS_WITH(c.commit(std::vector<fake_task*>{&f.t0}), Catch::Contains("not acknowledged"));
        CHECK(f.port.committed.empty());
    }
}
