// Local state: an instance restarted on the same state directory restores
// only the part of each changelog its checkpoint does not cover (nothing at
// all after a clean stop), and two instances cannot share a state directory.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/restore/checkpoint.hpp>
#include <strata/runtime/detail/state_directory.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>

using namespace runtime_test;

TEST_CASE("runtime: a restart on the same state directory restores only the changelog's tail",
          "[kafka][runtime][local-state]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 50;
    const std::string app = kafka_test::unique_name("restart");
    const std::string input = kafka_test::make_topic("restart-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("restart-out", partitions, {{"cleanup.policy", "delete"}});
    const std::vector<std::string> args{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                        "--output", output, "--state", (dir / "state").string(), "--instance", "one",
                                        "--commit-ms", "200", "--persistent", "--no-cache"};
    input_writer in(input, partitions);
    std::int64_t next = 0;
    const auto write = [&](std::int64_t n) {
        for (const std::int64_t end = next + n; next < end; ++next) {
            in.write(next, keys);
            std::this_thread::sleep_for(1ms);
        }
        in.flush();
    };

    // First run: everything restored from nothing, then a clean stop.
    {
        instance_process first(args, dir / "first.log");
        write(2000);
        REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));
        first.kill(SIGTERM);
        const int status = first.wait();
        INFO(first.output());
        REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }

    // After a clean stop the checkpoint covers every changelog: nothing to restore.
    {
        instance_process second(args, dir / "second.log");
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (restores(second).size() < partitions && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(100ms);
        INFO(second.output());
        std::set<std::int64_t> restored;
        for (const auto& each : restores(second)) {
            INFO("task " << each.task);
            CHECK(each.from > 0);
            CHECK(each.from == each.to);
            CHECK(each.records == 0);
            restored.insert(each.task);
        }
        REQUIRE(restored.size() == partitions);
        // Then input arrives, and the instance is killed in the middle of it.
        write(1500);
        second.kill(SIGKILL);
        (void)second.wait();
    }

    // After the kill only the records written since the last checkpoint are restored.
    {
        instance_process third(args, dir / "third.log");
        REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return third.running(); }));
        INFO(third.output());
        // A task may be restored more than once: the killed instance stays in
        // the group until its session ends, so a slow start can see a second
        // rebalance move a task within this instance. Every restore of it,
        // the first included, must start from a checkpoint.
        std::map<std::int64_t, std::int64_t> end_of;  // task -> its changelog's end
        std::int64_t tail = 0;
        for (const auto& each : restores(third)) {
            INFO("task " << each.task);
            CHECK(each.from > 0);
            CHECK(each.records == each.to - each.from);
            tail += each.records;
            end_of[each.task] = std::max(end_of[each.task], each.to);
        }
        REQUIRE(end_of.size() == partitions);
        std::int64_t whole = 0;
        for (const auto& [task, end] : end_of) whole += end;
        std::printf("restart after kill: restored %lld of %lld changelog records\n", static_cast<long long>(tail),
                    static_cast<long long>(whole));
        CHECK(tail < whole / 4);
        third.kill(SIGTERM);
        const int status = third.wait();
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }

    // At-least-once: every input made it to the output.
    (void)require_every_input_has_output(output, in.written());
}

TEST_CASE("runtime: two instances cannot share a state directory", "[kafka][runtime][local-state]") {
    test_support::temp_dir dir;
    const strata::runtime::detail::state_directory first(dir.path(), "app");
    REQUIRE_THROWS_WITH(strata::runtime::detail::state_directory(dir.path(), "app"),
                        Catch::Contains("is in use by another instance") &&
                            Catch::Contains("(process " + std::to_string(::getpid()) + ")"));
    // Another application may use the same root.
    REQUIRE_NOTHROW(strata::runtime::detail::state_directory(dir.path(), "other-app"));
}

TEST_CASE("runtime: a checkpoint past the changelog's end stops the instance with an error naming the store",
          "[kafka][runtime][local-state]") {
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("lost-changelog");
    const std::string input = kafka_test::make_topic("lost-in", 1, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("lost-out", 1, {{"cleanup.policy", "delete"}});
    const std::vector<std::string> args{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                        "--output", output, "--state", (dir / "state").string(), "--instance", "one",
                                        "--commit-ms", "200", "--persistent", "--no-cache"};
    input_writer in(input, 1);
    for (std::int64_t i = 0; i < 200; ++i) in.write(i, 20);
    in.flush();
    {
        instance_process first(args, dir / "first.log");
        REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));
        first.kill(SIGTERM);
        const int status = first.wait();
        INFO(first.output());
        REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    // The changelog "loses" its records: the checkpoint now claims far more.
    const auto checkpoint = dir / "state" / app / "task-0" / ".checkpoint";
    REQUIRE(std::filesystem::exists(checkpoint));
    strata::checkpoint_file file(checkpoint);
    const auto entries = file.entries();
    REQUIRE_FALSE(entries.empty());
    for (const auto& [key, offset] : entries) file.save(key.first, key.second, offset + 1'000'000);

    instance_process second(args, dir / "second.log");
    const int status = second.wait();
    const std::string out = second.output();
    INFO(out);
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(out.find("store '" + entries.begin()->first.first + "'") != std::string::npos);
    CHECK(out.find("says the store holds offsets below") != std::string::npos);
    CHECK(out.find("-changelog[0] ends at") != std::string::npos);
}

namespace {

/// Two instances of one application over one input partition, with a
/// standby each, exactly-once, persistent stores: instance one has run 200
/// inputs to a clean stop, and instance two's folder is a copy of one's with
/// its checkpoint rewritten (to an offset the test picks from the real one).
struct standby_copy {
    test_support::temp_dir dir;
    std::string app = kafka_test::unique_name("stale-standby");
    std::string input = kafka_test::make_topic("stale-in", 1, {{"cleanup.policy", "delete"}});
    std::string output = kafka_test::make_topic("stale-out", 1, {{"cleanup.policy", "delete"}});
    input_writer in{input, 1};
    std::int64_t next = 0;
    std::int64_t checkpointed = 0;  // instance one's checkpoint after its first run

    explicit standby_copy(const std::function<std::int64_t(std::int64_t)>& rewrite) {
        write(200);
        {
            instance_process first(args("one"), dir / "first.log");
            REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));
            first.kill(SIGTERM);
            const int status = first.wait();
            INFO(first.output());
            REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
        }
        std::filesystem::copy(dir / "one", dir / "two", std::filesystem::copy_options::recursive);
        strata::checkpoint_file file(dir / "two" / app / "task-0" / ".checkpoint");
        const auto entries = file.entries();
        REQUIRE(entries.size() == 1);
        checkpointed = static_cast<std::int64_t>(entries.begin()->second);
        REQUIRE(checkpointed >= 200);
        file.save(entries.begin()->first.first, entries.begin()->first.second,
                  static_cast<strata::offset_t>(rewrite(checkpointed)));
    }

    [[nodiscard]] std::vector<std::string> args(const std::string& instance) const {
        return {"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output", output,
                "--state", (dir / instance).string(), "--instance", instance, "--commit-ms", "200", "--persistent",
                "--no-cache", "--exactly-once", "--standbys", "1"};
    }

    void write(std::int64_t n) {
        for (const std::int64_t end = next + n; next < end; ++next) in.write(next, 20);
        in.flush();
    }

    /// Starts one (it runs task 0: it had it, and comes first), then two (its standby).
    std::pair<std::unique_ptr<instance_process>, std::unique_ptr<instance_process>> start_both() {
        auto one = std::make_unique<instance_process>(args("one"), dir / "one.log");
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (restores(*one).empty() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(50ms);
        REQUIRE_FALSE(restores(*one).empty());
        return {std::move(one), std::make_unique<instance_process>(args("two"), dir / "two.log")};
    }
};

/// How often `p` said so far that it rebuilt a standby, after waiting up to
/// `timeout` for the first time.
std::size_t rebuilds(const instance_process& p, std::chrono::seconds timeout) {
    const auto count = [&] {
        std::size_t n = 0;
        for (const auto& l : p.lines()) n += l.find("the copy is rebuilt") != std::string::npos ? 1 : 0;
        return n;
    };
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (count() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
    return count();
}

}  // namespace

TEST_CASE("runtime: a standby whose changelog ends below its store is rebuilt, counted, and takes over with every value",
          "[kafka][runtime][local-state][standby]") {
    // Instance two's copy of task 0 claims far more of the changelog than
    // the changelog holds, as an unclean leader election leaves it. Followed
    // from there it would read nothing, report lag 0, and on takeover run on
    // without what came in meanwhile: the output, compared record for record
    // with an uninterrupted run, shows it.
    standby_copy s([](std::int64_t offset) { return offset + 1'000'000; });
    // Not a structured binding: clang 15 cannot capture one in a lambda.
    auto both = s.start_both();
    auto& one = both.first;
    auto& two = both.second;
    {
        const std::size_t said = rebuilds(*two, 20s);
        INFO(two->output());
        CHECK(said == 1);
        CHECK(two->output().find("now ends at") != std::string::npos);
    }

    s.write(200);
    REQUIRE(await_committed(s.app, s.input, s.in.written(), 60s, [&] { return one->running() && two->running(); }));
    std::this_thread::sleep_for(1s);  // the standby reads the new changelog records
    one->kill(SIGKILL);
    (void)one->wait();
    s.write(100);
    REQUIRE(await_committed(s.app, s.input, s.in.written(), 60s, [&] { return two->running(); }));
    INFO(two->output());
    // Two took over from its rebuilt copy: little was left to restore.
    std::string started;
    for (const auto& l : two->lines())
        if (l.rfind("started task=0", 0) == 0) started = l;
    REQUIRE_FALSE(started.empty());
    CHECK(field(started, "restored") < 100);
    two->kill(SIGTERM);
    (void)two->wait();
    require_output_of_an_uninterrupted_run(s.output, s.in.written());
}

TEST_CASE("runtime: a standby whose changelog now starts above its store is rebuilt once, from the new start",
          "[kafka][runtime][local-state][standby]") {
    // Two's copy holds the changelog up to half of it; the records from there
    // to the end are deleted before two starts. Its copy missed what they
    // said, and cannot learn it: it is rebuilt from what the changelog holds.
    standby_copy s([](std::int64_t offset) { return offset / 2; });
    kafka_test::delete_records_before(strata::kafka::changelog_topic_name(s.app, "totals"), 0, s.checkpointed);
    // Not a structured binding: clang 15 cannot capture one in a lambda.
    auto both = s.start_both();
    auto& one = both.first;
    auto& two = both.second;
    const std::size_t said = rebuilds(*two, 20s);
    std::this_thread::sleep_for(2s);  // a rebuilt copy that were still stale would be rebuilt again
    INFO(two->output());
    CHECK(said == 1);
    CHECK(rebuilds(*two, 0s) == 1);
    const std::string out = two->output();
    CHECK(out.find("now starts at " + std::to_string(s.checkpointed)) != std::string::npos);
    CHECK(out.find("holds offsets below " + std::to_string(s.checkpointed / 2)) != std::string::npos);
    CHECK(two->running());
    CHECK(one->running());
}
