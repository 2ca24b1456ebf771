// The stream runtime with RocksDB stores under exactly-once: an instance
// killed by SIGKILL restarts on the same state directory without wiping its
// stores (they keep uncommitted updates out of their databases and their
// committed offset inside), restores only the changelog past that offset,
// and its output equals an uninterrupted run's.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <cstdio>

using namespace runtime_test;

TEST_CASE("runtime: exactly-once with RocksDB stores: a killed instance keeps its stores and restores the tail",
          "[kafka][runtime][local-state][rocksdb]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 50;
    const std::string app = kafka_test::unique_name("rocks-eos");
    const std::string input = kafka_test::make_topic("rocks-eos-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("rocks-eos-out", partitions, {{"cleanup.policy", "delete"}});
    const std::vector<std::string> args{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                        "--output", output, "--state", (dir / "state").string(), "--instance", "one",
                                        "--commit-ms", "200", "--exactly-once", "--transaction-ms", "5000",
                                        "--rocksdb"};
    input_writer in(input, partitions);
    std::int64_t next = 0;
    const auto write = [&](std::int64_t n) {
        for (const std::int64_t end = next + n; next < end; ++next) {
            in.write(next, keys);
            std::this_thread::sleep_for(1ms);
        }
        in.flush();
    };

    // A run that processes and commits, then is killed in the middle of more input.
    {
        instance_process first(args, dir / "first.log");
        write(2000);
        REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return first.running(); }));
        INFO(first.output());
        write(1500);
        first.kill(SIGKILL);
        (void)first.wait();
    }
    // The stores' directories are still there: nothing wiped them.
    for (std::int32_t p = 0; p < partitions; ++p)
        CHECK(std::filesystem::exists(dir / "state" / app / ("task-" + std::to_string(p)) / "totals" / "CURRENT"));

    {
        instance_process second(args, dir / "second.log");
        const bool caught_up = await_committed(app, input, in.written(), 90s, [&] { return second.running(); });
        INFO(second.output());
        REQUIRE(caught_up);
        // Every restore, the restart's and those after a transaction the
        // group refused while it rebalanced (the task is then rebuilt from
        // its changelog), starts at the store's own committed offset: the
        // store was never wiped.
        const auto r = restores(second);
        REQUIRE(r.size() >= partitions);
        std::int64_t tail = 0, whole = 0;
        for (const auto& each : r) {
            INFO("task " << each.task);
            CHECK(each.from > 0);
            CHECK(each.records <= each.to - each.from);
            tail += each.records;
            whole += each.to;
        }
        std::printf("rocksdb, exactly-once, restart after kill: %zu restores read %lld of %lld changelog records\n",
                    r.size(), static_cast<long long>(tail), static_cast<long long>(whole));
        CHECK(tail < whole / 4);
        second.kill(SIGTERM);
        const int status = second.wait();
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }

    // Exactly-once: the output of an uninterrupted run, no update lost or repeated.
    for (std::int32_t p = 0; p < partitions; ++p) {
        INFO("partition " << p);
        await_stable(output, p);
        const auto expected = expected_output(in.written()[static_cast<std::size_t>(p)]);
        const auto actual = read_output(output, p);
        REQUIRE(actual.size() == expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
            INFO("output record " << i);
            REQUIRE(actual[i].first == expected[i].first);
            REQUIRE(actual[i].second == expected[i].second);
        }
    }
}
