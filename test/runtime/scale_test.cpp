// Scaling while input flows: a third instance joins two, and tasks move to
// it only once its copy of them has caught up, so a moved task restores a
// tail, not its changelog; then an instance is stopped (SIGTERM), and its
// tasks run elsewhere well before a session timeout could have passed.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/runtime/task.hpp>

#include <cstdio>
#include <map>

using namespace runtime_test;

TEST_CASE("runtime: a joining instance takes tasks once warm, and a stopping one hands them over at once",
          "[kafka][runtime][scale]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 6;
    constexpr int keys = 300;
    constexpr std::int64_t acceptable_lag = 50;
    const std::string app = kafka_test::unique_name("scale");
    const std::string input = kafka_test::make_topic("scale-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("scale-out", partitions, {{"cleanup.policy", "delete"}});
    const auto args = [&](const std::string& name) {
        return std::vector<std::string>{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                        "--output", output, "--state", (dir / ("state-" + name)).string(),
                                        "--instance", name, "--commit-ms", "200", "--session-ms", "6000",
                                        "--no-cache", "--acceptable-lag", std::to_string(acceptable_lag)};
    };
    std::map<std::string, std::unique_ptr<instance_process>> instances;
    for (const std::string name : {"a", "b"})
        instances[name] = std::make_unique<instance_process>(args(name), dir / (name + ".log"));

    input_writer in(input, partitions);
    const auto start = std::chrono::steady_clock::now();
    bool joined = false, stopped = false;
    std::int64_t stopped_at_ms = 0;
    for (std::int64_t i = 0; i < 16'000; ++i) {
        in.write(i, keys);
        std::this_thread::sleep_for(1ms);
        const auto elapsed = std::chrono::steady_clock::now() - start;
        if (!joined && elapsed > 4s) {
            instances["c"] = std::make_unique<instance_process>(args("c"), dir / "c.log");
            joined = true;
        }
        if (!stopped && elapsed > 12s) {
            instances["a"]->kill(SIGTERM);
            stopped_at_ms = strata::runtime::wall_clock_ms();
            stopped = true;
        }
    }
    in.flush();
    REQUIRE(stopped);
    const int a_status = instances["a"]->wait();
    INFO("a:\n" << instances["a"]->output());
    REQUIRE((WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0));
    REQUIRE(await_committed(app, input, in.written(), 90s,
                            [&] { return instances["b"]->running() && instances["c"]->running(); }));
    for (const std::string name : {"b", "c"}) {
        instances[name]->kill(SIGTERM);
        const int status = instances[name]->wait();
        INFO(name << ":\n" << instances[name]->output());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    const auto c_log = instances["c"]->lines();
    INFO("c:\n" << instances["c"]->output() << "b:\n" << instances["b"]->output());

    // The joining instance: every task it took from a or b before a stopped
    // restored at most what its warm copy lagged, out of a much longer changelog.
    std::map<std::string, std::string> last_restore;
    std::size_t moved_while_warm = 0;
    for (const auto& l : c_log) {
        if (l.rfind("restored task=", 0) == 0) last_restore[text_field(l, "task")] = l;
        if (l.rfind("started task=", 0) != 0 || field(l, "assigned_ms") >= stopped_at_ms) continue;
        // Its own task rebuilt (a write that missed its delivery bound on a
        // loaded machine rebuilds the instance's tasks from their
        // changelogs, by design) is not a task taken from a or b.
        if (text_field(l, "previous_owner") == "c") continue;
        const std::string& r = last_restore[text_field(l, "task")];
        INFO(l << "\n" << r);
        REQUIRE(field(r, "to") >= 500);
        CHECK(field(l, "restored") <= acceptable_lag);
        CHECK(field(r, "from") > 0);  // it restored from where its copy was, not from the start
        ++moved_while_warm;
        std::printf("joined: task %s restored %lld of %lld changelog records\n", text_field(l, "task").c_str(),
                    static_cast<long long>(field(l, "restored")), static_cast<long long>(field(r, "to")));
    }
    CHECK(moved_while_warm >= 1);

    // The stopped instance's tasks ran again elsewhere within a fraction of the
    // 6 s session timeout: it left the group and said so.
    std::size_t handed_over = 0;
    for (const std::string name : {"b", "c"}) {
        for (const auto& l : instances[name]->lines()) {
            if (l.rfind("started task=", 0) != 0 || text_field(l, "previous_owner") != "a" ||
                field(l, "assigned_ms") < stopped_at_ms)
                continue;
            const std::int64_t after = field(l, "first_record_ms") - stopped_at_ms;
            INFO(l);
            CHECK(after < 3000);
            ++handed_over;
            std::printf("stopped: task %s running on %s %lld ms after SIGTERM (noticed +%lld, assigned +%lld, "
                        "restored +%lld, first record +%lld)\n",
                        text_field(l, "task").c_str(), name.c_str(), static_cast<long long>(after),
                        static_cast<long long>(field(l, "noticed_ms") - stopped_at_ms),
                        static_cast<long long>(field(l, "assigned_ms") - field(l, "noticed_ms")),
                        static_cast<long long>(field(l, "restored_ms") - field(l, "assigned_ms")),
                        static_cast<long long>(field(l, "first_record_ms") - field(l, "restored_ms")));
        }
    }
    CHECK(handed_over >= 1);

    // Nothing lost on the way (at-least-once).
    (void)require_every_input_has_output(output, in.written());
}
