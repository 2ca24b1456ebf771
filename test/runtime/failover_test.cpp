// Three instances of one application, as separate processes, over an input
// topic of six partitions, computing a per-key aggregate. Input arrives
// while they run; one instance is SIGKILLed mid-stream and the other two
// take its partitions over, restoring its stores from their changelogs.
//
// Exactly-once: the output equals, record for record, what one uninterrupted
// run produces. At-least-once: no input is missing from the output
// (duplicates are allowed, and counted). With two processing threads in each
// instance, both threads of the killed one go at once, and their tasks find
// their standbys on the other processes.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/runtime/task.hpp>

#include <cstdio>

using namespace runtime_test;

namespace {

struct scenario {
    bool exactly_once = false;
    std::int32_t partitions = 6;
    int keys = 200;
    std::int64_t records = 12'000;
    std::chrono::milliseconds pace{1};  // between two input records
    std::chrono::seconds kill_after{5};
    int standbys = 0;
    int threads = 1;  // processing threads of each instance
    int standby_fetch_ms = 0;  // standby_fetch_interval, paced whatever the standbys follow; 0: the defaults (unpaced here)
};

struct outcome {
    partitioned_input written;
    std::string output_topic;
    std::int64_t killed_at_ms = 0;
    std::vector<std::vector<std::string>> survivor_logs;
};

outcome run_with_a_kill(const scenario& s, test_support::temp_dir& dir) {
    const std::string app = kafka_test::unique_name("failover");
    const std::string input = kafka_test::make_topic("failover-in", s.partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("failover-out", s.partitions, {{"cleanup.policy", "delete"}});

    const auto args = [&](int i) {
        std::vector<std::string> a{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                   "--output", output, "--state", (dir / ("state-" + std::to_string(i))).string(),
                                   "--instance", "instance-" + std::to_string(i), "--commit-ms", "200",
                                   "--session-ms", "6000"};
        if (s.exactly_once) a.insert(a.end(), {"--exactly-once", "--transaction-ms", "5000"});
        if (s.standbys > 0) a.insert(a.end(), {"--standbys", std::to_string(s.standbys)});
        if (s.standby_fetch_ms > 0)
            a.insert(a.end(), {"--standby-fetch-ms", std::to_string(s.standby_fetch_ms), "--standby-pacing-from", "0"});
        if (s.threads > 1) a.insert(a.end(), {"--threads", std::to_string(s.threads)});
        return a;
    };
    std::vector<std::unique_ptr<instance_process>> instances;
    for (int i = 0; i < 3; ++i)
        instances.push_back(std::make_unique<instance_process>(args(i), dir / ("instance-" + std::to_string(i) + ".log")));

    input_writer in(input, s.partitions);
    const auto start = std::chrono::steady_clock::now();
    bool killed = false;
    std::int64_t killed_at_ms = 0;
    for (std::int64_t i = 0; i < s.records; ++i) {
        in.write(i, s.keys);
        std::this_thread::sleep_for(s.pace);
        if (!killed && std::chrono::steady_clock::now() - start > s.kill_after) {
            instances[1]->kill(SIGKILL);
            killed = true;
            killed_at_ms = strata::runtime::wall_clock_ms();
            std::printf("killed instance-1 after %lld records\n", static_cast<long long>(i + 1));
        }
    }
    in.flush();
    REQUIRE(killed);
    const bool done = await_committed(app, input, in.written(), 120s,
                                      [&] { return instances[0]->running() && instances[2]->running(); });
    for (int i : {0, 2}) {
        auto& instance = *instances[static_cast<std::size_t>(i)];
        if (instance.running()) instance.kill(SIGTERM);
        const int status = instance.wait();
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!done || !clean)
            std::printf("instance-%d (wait status %d):\n%s\n", i, status, instance.output().c_str());
        CHECK(clean);
    }
    REQUIRE(done);
    outcome o{in.written(), output, killed_at_ms, {}};
    for (int i : {0, 2}) o.survivor_logs.push_back(instances[static_cast<std::size_t>(i)]->lines());
    return o;
}

}  // namespace

TEST_CASE("runtime: exactly-once over three instances, one killed: the output of an uninterrupted run",
          "[kafka][runtime][failover]") {
    test_support::temp_dir dir;
    scenario s;
    s.exactly_once = true;
    const outcome o = run_with_a_kill(s, dir);
    std::size_t taken_over = 0;
    for (const auto& log : o.survivor_logs)
        for (const auto& l : log)
            if (l.rfind("started task=", 0) == 0 && text_field(l, "previous_owner") == "instance-1") ++taken_over;
    CHECK(taken_over >= 1);  // the killed instance's tasks moved to the survivors
    for (std::int32_t p = 0; p < s.partitions; ++p)
        std::printf("partition %d: %zu outputs, %zu expected\n", p, read_output(o.output_topic, p).size(),
                    expected_output(o.written[static_cast<std::size_t>(p)]).size());
    require_output_of_an_uninterrupted_run(o.output_topic, o.written);
}

TEST_CASE("runtime: at-least-once over three instances, one killed: no input is lost",
          "[kafka][runtime][failover]") {
    test_support::temp_dir dir;
    scenario s;
    const outcome o = run_with_a_kill(s, dir);
    const std::size_t outputs = require_every_input_has_output(o.output_topic, o.written);
    std::size_t inputs = 0;
    for (const auto& each : o.written) inputs += each.size();
    std::printf("at-least-once: %zu inputs, %zu outputs, %zu duplicates\n", inputs, outputs, outputs - inputs);
}

TEST_CASE("runtime: with standbys, a task taken over from a killed instance restores under 1% of its changelog",
          "[kafka][runtime][failover][standby]") {
    test_support::temp_dir dir;
    scenario s;
    s.standbys = 1;
    s.records = 9'000;
    const outcome o = run_with_a_kill(s, dir);
    std::size_t checked = 0;
    for (const auto& log : o.survivor_logs) {
        std::map<std::string, std::string> last_restore;  // task -> its latest "restored" line
        for (const auto& l : log) {
            if (l.rfind("restored task=", 0) == 0) last_restore[text_field(l, "task")] = l;
            if (l.rfind("started task=", 0) != 0 || text_field(l, "previous_owner") != "instance-1" ||
                field(l, "assigned_ms") < o.killed_at_ms)
                continue;
            const std::string& r = last_restore[text_field(l, "task")];
            INFO(l << "\n" << r);
            const std::int64_t changelog = field(r, "to");
            REQUIRE(changelog >= 100);  // a changelog worth restoring
            CHECK(field(l, "restored") * 100 < changelog);
            ++checked;
            std::printf("took over task %s: restored %lld of %lld changelog records\n", text_field(l, "task").c_str(),
                        static_cast<long long>(field(l, "restored")), static_cast<long long>(changelog));
        }
    }
    CHECK(checked >= 1);
    // And nothing is lost on the way (at-least-once).
    (void)require_every_input_has_output(o.output_topic, o.written);
}

TEST_CASE("runtime: exactly-once over three instances of two processing threads, one killed: the output of an "
          "uninterrupted run, its tasks taken over from standbys on other processes",
          "[kafka][runtime][failover][standby][threads]") {
    test_support::temp_dir dir;
    scenario s;
    s.exactly_once = true;
    s.standbys = 1;
    s.threads = 2;
    // And with the standbys' reader paced (standby_fetch_interval, and
    // standby_pacing_from_partitions 0, since these standbys follow a few
    // dozen partitions, not thousands): paused
    // and resumed every second, each standby still reads its changelog in
    // order, never sent back below what it read (a resume once sent
    // standbys back to offset 0, and they were rebuilt), and the output is
    // still that of an uninterrupted run. A paced standby need not have
    // got anywhere by the kill: its reader fetches only when the restore
    // thread opens a window, and that thread waits on the broker in an
    // exactly-once takeover (a loaded run's standby had read nothing).
    s.standby_fetch_ms = GENERATE(0, 1000);
    INFO("standby_fetch_interval " << s.standby_fetch_ms << " ms");
    s.partitions = 12;
    s.records = 9'000;
    const outcome o = run_with_a_kill(s, dir);
    std::size_t taken_over = 0;
    for (const auto& log : o.survivor_logs) {
        std::map<std::string, std::string> last_restore;
        for (const auto& l : log) {
            if (l.rfind("restored task=", 0) == 0) last_restore[text_field(l, "task")] = l;
            // The killed process's threads: instance-1 and instance-1-t1.
            if (l.rfind("started task=", 0) != 0 || text_field(l, "previous_owner").rfind("instance-1", 0) != 0 ||
                field(l, "assigned_ms") < o.killed_at_ms)
                continue;
            const std::string& r = last_restore[text_field(l, "task")];
            INFO(l << "\n" << r);
            REQUIRE(field(r, "to") > 0);
            // A standby was there, on another process: the restore began
            // where the copy had got to, not at the changelog's start.
            if (s.standby_fetch_ms == 0) CHECK(field(r, "from") > 0);
            ++taken_over;
        }
        for (const auto& l : log) CHECK_THAT(l, !Catch::Contains("the copy is rebuilt from the changelog"));
    }
    // What the survivors started and restored, for a run that found fewer
    // takeovers than the killed process's two threads held (once in 14 runs).
    if (taken_over < 2)
        for (const auto& log : o.survivor_logs) {
            std::printf("--- a survivor's tasks (instance-1 killed at %lld ms)\n", static_cast<long long>(o.killed_at_ms));
            for (const auto& l : log)
                if (l.rfind("started task=", 0) == 0 || l.rfind("restored task=", 0) == 0 || l.rfind("rebalance", 0) == 0)
                    std::printf("%s\n", l.c_str());
        }
    CHECK(taken_over >= 2);  // at least one task of each killed thread
    require_output_of_an_uninterrupted_run(o.output_topic, o.written);
}
