// Instances that must not write: a process paused past its session and
// resumed (a zombie), and a second process started with an instance id in
// use. Real processes, a real broker.

#include "audit_support.hpp"
#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/kafka/transaction.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>

using namespace runtime_test;

namespace {

std::vector<std::string> app_args(const std::string& app, const std::string& input, const std::string& output,
                                  const std::filesystem::path& state, const std::string& instance) {
    return {"--bootstrap", kafka_test::bootstrap(), "--app", app,       "--input",      input,
            "--output",    output,                  "--state", state.string(), "--instance", instance,
            "--commit-ms", "200",                   "--session-ms", "6000"};
}

/// How many `started task=` lines `p` printed: the tasks it started.
std::size_t tasks_started(const instance_process& p) {
    std::size_t n = 0;
    for (const auto& l : p.lines()) n += l.rfind("started task=", 0) == 0 ? 1 : 0;
    return n;
}

/// Input at about one record a millisecond, for a while at a time.
class paced_input : public input_writer {
public:
    paced_input(std::string topic, std::int32_t partitions, int keys)
        : input_writer(std::move(topic), partitions), keys_(keys) {}
    void write_for(std::chrono::milliseconds d) {
        const auto until = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < until) {
            write(next_++, keys_);
            std::this_thread::sleep_for(1ms);
        }
        flush();
    }

    /// Writes until `p` has started `tasks` tasks, at most for `limit`: an
    /// instance paused before it runs one has nothing to lose or hand over,
    /// and under load the first assignment can take longer than any fixed wait.
    void write_until_running(const instance_process& p, std::size_t tasks = 1, std::chrono::seconds limit = 60s) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (tasks_started(p) < tasks && std::chrono::steady_clock::now() < until) write_for(500ms);
        INFO(p.output());
        REQUIRE(tasks_started(p) >= tasks);
    }

private:
    int keys_;
    std::int64_t next_ = 0;
};

/// What two instances had done when one of them was paused: the tasks the
/// paused one had started, and how many lines its successor had printed.
/// Which tasks the successor took is read from its lines after that point,
/// not from the last commit's owner: a task the paused instance had not yet
/// committed is taken from it all the same.
class pause_mark {
public:
    pause_mark(const instance_process& paused, const instance_process& successor)
        : successor_lines_(successor.lines().size()) {
        for (const auto& l : paused.lines())
            if (l.rfind("started task=", 0) == 0) tasks_.insert(text_field(l, "task"));
    }
    /// How many of the paused instance's tasks `successor` started since.
    [[nodiscard]] std::size_t taken_by(const instance_process& successor) const {
        const auto lines = successor.lines();
        std::size_t n = 0;
        for (std::size_t i = successor_lines_; i < lines.size(); ++i)
            if (lines[i].rfind("started task=", 0) == 0 && tasks_.count(text_field(lines[i], "task")) != 0) ++n;
        return n;
    }

private:
    std::set<std::string> tasks_;
    std::size_t successor_lines_;
};

}  // namespace

TEST_CASE("runtime: exactly-once, the tasks of an instance paused past its session are fenced before they restore "
          "elsewhere, and the output is that of an uninterrupted run",
          "[kafka][runtime][fencing]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 100;
    const std::string app = kafka_test::unique_name("zombie");
    const std::string input = kafka_test::make_topic("zombie-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("zombie-out", partitions, {{"cleanup.policy", "delete"}});
    const auto args = [&](const std::string& name) {
        auto a = app_args(app, input, output, dir / ("state-" + name), name);
        // A transaction may stay open longer than the pause: only fencing ends the zombie's.
        a.insert(a.end(), {"--exactly-once", "--transaction-ms", "40000"});
        return a;
    };
    instance_process a(args("a"), dir / "a.log");
    instance_process b(args("b"), dir / "b.log");

    paced_input in(input, partitions, keys);
    const auto write_for = [&](std::chrono::milliseconds d) { in.write_for(d); };
    in.write_until_running(b);
    write_for(3s);  // both run tasks now
    b.kill(SIGSTOP);
    const auto paused = std::chrono::steady_clock::now();
    write_for(2s);  // b holds an open transaction with some of these

    // a takes b's tasks once b's session ends (6 s). Until b resumes, its
    // open transaction can only end by fencing: the broker would abort it
    // after 40 s. Once a is idle, no transaction may stay open.
    std::set<std::int32_t> taken;
    const std::string changelog = app + "-totals-changelog";
    bool stable = false;
    const open_transactions open;
    while (!stable && std::chrono::steady_clock::now() - paused < 20s) {
        std::this_thread::sleep_for(500ms);
        taken.clear();
        for (const auto& l : a.lines())
            if (l.rfind("started task=", 0) == 0 && text_field(l, "previous_owner") == "b")
                taken.insert(static_cast<std::int32_t>(field(l, "task")));
        if (taken.empty()) continue;
        stable = std::none_of(taken.begin(), taken.end(), [&](std::int32_t p) { return open.any(changelog, p); });
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - paused);
    INFO("a:\n" << a.output());
    REQUIRE_FALSE(taken.empty());  // a took b's tasks while b was paused
    CHECK(stable);                 // and nothing b left open holds back their changelogs
    std::printf("zombie: a took %zu task(s); their changelogs stable %lld ms after b paused\n", taken.size(),
                static_cast<long long>(waited.count()));

    b.kill(SIGCONT);  // the zombie wakes up with records still in hand
    write_for(3s);
    const bool done = await_committed(app, input, in.written(), 120s, [&] { return a.running(); });
    for (instance_process* p : {&a, &b}) {
        if (p->running()) p->kill(SIGTERM);
        (void)p->wait();
    }
    INFO("b:\n" << b.output());
    REQUIRE(done);
    require_output_of_an_uninterrupted_run(output, in.written());
}

TEST_CASE("runtime: a second process with an instance id in use stops with an error naming both, and the first "
          "goes on",
          "[kafka][runtime][fencing]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    const std::string app = kafka_test::unique_name("duplicate");
    const std::string input = kafka_test::make_topic("duplicate-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("duplicate-out", partitions, {{"cleanup.policy", "delete"}});
    instance_process first(app_args(app, input, output, dir / "state-1", "same"), dir / "first.log");
    input_writer in(input, partitions);
    for (std::int64_t i = 0; i < 200; ++i) in.write(i, 20);
    in.flush();
    REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));

    instance_process second(app_args(app, input, output, dir / "state-2", "same"), dir / "second.log");
    const int status = second.wait(60s);
    INFO("second:\n" << second.output());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) != 0));
    CHECK(second.output().find("another process runs with instance id same") != std::string::npos);

    for (std::int64_t i = 200; i < 400; ++i) in.write(i, 20);
    in.flush();
    INFO("first:\n" << first.output());
    CHECK(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));
    first.kill(SIGTERM);
    const int first_status = first.wait();
    CHECK((WIFEXITED(first_status) && WEXITSTATUS(first_status) == 0));
    (void)require_every_input_has_output(output, in.written());
}

TEST_CASE("runtime: at-least-once, an instance paused past its session writes nothing when it wakes: no value in a "
          "changelog goes backwards, and no input is lost",
          "[kafka][runtime][fencing]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 100;
    const std::string app = kafka_test::unique_name("lease");
    const std::string input = kafka_test::make_topic("lease-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("lease-out", partitions, {{"cleanup.policy", "delete"}});
    instance_process a(app_args(app, input, output, dir / "state-a", "a"), dir / "a.log");
    instance_process b(app_args(app, input, output, dir / "state-b", "b"), dir / "b.log");
    paced_input in(input, partitions, keys);
    const auto write_for = [&](std::chrono::milliseconds d) { in.write_for(d); };
    in.write_until_running(b);
    write_for(3s);
    // Paused with records in hand and in its cache; its session (6 s) ends,
    // and a runs its tasks and writes newer totals for their keys.
    const pause_mark mark(b, a);
    b.kill(SIGSTOP);
    write_for(12s);
    b.kill(SIGCONT);
    write_for(3s);
    const bool done = await_committed(app, input, in.written(), 120s, [&] { return a.running(); });
    for (instance_process* p : {&a, &b}) {
        if (p->running()) p->kill(SIGTERM);
        (void)p->wait();
    }
    INFO("a:\n" << a.output() << "\nb:\n" << b.output());
    REQUIRE(done);
    const std::size_t taken = mark.taken_by(a);
    REQUIRE(taken >= 1);
    // A write of the paused instance after its successor's shows as a count going back.
    const std::size_t records = check_changelog_counts_never_go_back(app, partitions).records;
    std::printf("lease: %zu changelog records, a took %zu task(s) from b\n", records, taken);
    (void)require_every_input_has_output(output, in.written());
}

TEST_CASE("runtime: at-least-once, an instance paused in the middle of a batch of records processes none of the "
          "rest when it wakes: no input is processed by two copies at once",
          "[kafka][runtime][fencing]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    const std::string app = kafka_test::unique_name("batch-lease");
    const std::string input = kafka_test::make_topic("batch-lease-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("batch-lease-out", partitions, {{"cleanup.policy", "delete"}});
    const std::string audit = kafka_test::make_topic("batch-lease-audit", partitions, {{"cleanup.policy", "delete"}});
    // 3 ms a record: the two instances fall behind the input, so each pass
    // of their loops takes a full batch (1,000 records, 3 s), and the pause
    // almost surely comes in the middle of one.
    const auto args = [&](const std::string& name) {
        auto a = app_args(app, input, output, dir / ("state-" + name), name);
        a.insert(a.end(), {"--audit", audit, "--delay-us", "3000"});
        return a;
    };
    instance_process a(args("a"), dir / "a.log");
    instance_process b(args("b"), dir / "b.log");
    paced_input in(input, partitions, 100);
    in.write_until_running(b);
    in.write_for(6s);  // b has committed a pass or two
    const pause_mark mark(b, a);
    b.kill(SIGSTOP);  // past its session (6 s): a takes its tasks and processes their inputs
    in.write_for(10s);
    b.kill(SIGCONT);
    in.write_for(2s);
    const bool done = await_committed(app, input, in.written(), 180s, [&] { return a.running(); });
    for (instance_process* p : {&a, &b}) {
        if (p->running()) p->kill(SIGTERM);
        (void)p->wait();
    }
    INFO("a:\n" << a.output() << "\nb:\n" << b.output());
    REQUIRE(done);
    const std::size_t taken = mark.taken_by(a);
    REQUIRE(taken >= 1);
    for (std::int32_t p = 0; p < partitions; ++p) {
        const task_audit t = audit_task(audit, p);
        std::printf("batch lease: task %d ran on%s\n", p, t.history.c_str());
        INFO("task " << p << ":" << t.history);
        for (const std::string& late : t.late) FAIL_CHECK("task " << p << ": " << late);
        for (const std::string& overlap : t.overlaps) FAIL_CHECK("task " << p << ": " << overlap);
    }
    std::printf("batch lease: a took %zu task(s) from b\n", taken);
    (void)require_every_input_has_output(output, in.written());
}

TEST_CASE("runtime: exactly-once, an instance whose producer is fenced just before it stops exits cleanly, and the "
          "output is that of an uninterrupted run",
          "[kafka][runtime][fencing]") {
    // The campaign's seed 4282428254657086482: an instance back from a pause
    // was fenced again by a takeover of a decision made while it was out,
    // and was told to stop before it noticed; the commit of its stop failed
    // and it exited with the fencing as its error.
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 50;
    const std::string app = kafka_test::unique_name("fenced-stop");
    const std::string input = kafka_test::make_topic("fenced-stop-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("fenced-stop-out", partitions, {{"cleanup.policy", "delete"}});
    auto args = app_args(app, input, output, dir / "state-a", "a");
    // No commit but the stop's: the fencing is found by that one.
    args.insert(args.end(), {"--exactly-once", "--commit-ms", "60000", "--transaction-ms", "90000"});
    paced_input in(input, partitions, keys);
    {
        instance_process a(args, dir / "a-1.log");
        in.write_until_running(a, static_cast<std::size_t>(partitions), 30s);
        INFO(a.output());
        REQUIRE(tasks_started(a) == static_cast<std::size_t>(partitions));
        in.write_for(500ms);

        // A process with a's instance id fences a's producer, and a is stopped.
        strata::kafka::producer_options o;
        o.bootstrap_servers = kafka_test::bootstrap();
        o.transactional_id = app + "-a";
        const strata::kafka::exactly_once fencer(o, 30s);
        a.kill(SIGTERM);
        const int status = a.wait(60s);
        INFO(a.output());
        REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
        CHECK_THAT(a.output(), Catch::Contains("its producer was fenced as it stopped"));
    }
    auto restart = app_args(app, input, output, dir / "state-a", "a");
    restart.push_back("--exactly-once");
    instance_process again(restart, dir / "a-2.log");
    in.write_for(500ms);
    const bool done = await_committed(app, input, in.written(), 120s, [&] { return again.running(); });
    again.kill(SIGTERM);
    (void)again.wait();
    INFO(again.output());
    REQUIRE(done);
    require_output_of_an_uninterrupted_run(output, in.written());
}
