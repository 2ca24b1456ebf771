// One of three instances cut off from the cluster by a network partition,
// while input arrives: it runs in a network namespace of its own and reaches
// the broker only through a TCP proxy on loopback (test/support/own_network.hpp),
// which stalls both ways. Its connections stay open and nothing it sends
// arrives, so no error tells it: its heartbeats go unanswered, the others
// take its tasks over after liveness_timeout, and when the partition heals,
// what it sent meanwhile reaches the broker late. Exactly-once: the output
// still equals, record for record, what one uninterrupted run produces (the
// takeover fenced its producer, so its late writes are refused), and it
// rejoins and runs tasks again.

#include "runtime_test_support.hpp"

#include "support/own_network.hpp"
#include "support/temp_dir.hpp"

#include <strata/runtime/task.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

using namespace runtime_test;

namespace {

/// test/support/tcp_proxy.py, found next to this source file.
std::string proxy_script() {
    return (std::filesystem::path(__FILE__).parent_path().parent_path() / "support" / "tcp_proxy.py").string();
}

/// The tasks other instances started after `since_ms` that instance-1 ran before.
std::set<std::string> taken_from_instance_1(std::vector<std::unique_ptr<instance_process>>& instances,
                                            std::int64_t since_ms) {
    std::set<std::string> out;
    for (std::size_t i : {0u, 2u})
        for (const auto& l : instances[i]->lines())
            if (l.rfind("started task=", 0) == 0 && text_field(l, "previous_owner") == "instance-1" &&
                field(l, "assigned_ms") >= since_ms)
                out.insert(text_field(l, "task"));
    return out;
}

}  // namespace

TEST_CASE("runtime: exactly-once, an instance cut off by a network partition: its tasks go on elsewhere, its late "
          "writes are refused, it rejoins once healed, and the output is that of an uninterrupted run",
          "[kafka][runtime][failover][partition]") {
    REQUIRE(test_support::own_network::available());  // root and iproute2 (scripts/setup.sh installs it)
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 6;
    const std::string app = kafka_test::unique_name("partition");
    const std::string input = kafka_test::make_topic("partition-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("partition-out", partitions, {{"cleanup.policy", "delete"}});
    test_support::own_network net("strata-" + std::to_string(::getpid()) + "-p", kafka_test::bootstrap(),
                                  proxy_script(), dir / "proxy.log");

    const auto args = [&](int i) {
        return std::vector<std::string>{aggregate_app(), "--bootstrap", kafka_test::bootstrap(), "--app", app,
                                        "--input", input, "--output", output, "--state",
                                        (dir / ("state-" + std::to_string(i))).string(), "--instance",
                                        "instance-" + std::to_string(i), "--commit-ms", "200", "--session-ms", "6000",
                                        "--exactly-once", "--transaction-ms", "5000", "--standbys", "1"};
    };
    std::vector<std::unique_ptr<instance_process>> instances;
    for (int i = 0; i < 3; ++i) {
        std::vector<std::string> a = args(i);
        if (i == 1) a = net.wrap(std::move(a));  // instance-1 lives behind the proxy
        const std::string program = a.front();
        a.erase(a.begin());
        instances.push_back(
            std::make_unique<instance_process>(program, std::move(a), dir / ("instance-" + std::to_string(i) + ".log")));
    }

    input_writer in(input, partitions);
    const auto start = std::chrono::steady_clock::now();
    std::int64_t cut_ms = 0, healed_ms = 0;
    std::size_t moved = 0;
    for (std::int64_t i = 0; i < 12'000; ++i) {
        in.write(i, 200);
        std::this_thread::sleep_for(1ms);
        const auto now = std::chrono::steady_clock::now();
        if (cut_ms == 0 && now - start > 5s) {
            net.cut();
            cut_ms = strata::runtime::wall_clock_ms();
            std::printf("cut instance-1 off after %lld records\n", static_cast<long long>(i + 1));
        }
        // Healed once its tasks run elsewhere and two more seconds passed
        // (more than the liveness timeout and its lease), or after 20 s.
        if (cut_ms != 0 && healed_ms == 0 && i % 100 == 0) {
            moved = taken_from_instance_1(instances, cut_ms).size();
            const std::int64_t cut_for = strata::runtime::wall_clock_ms() - cut_ms;
            if ((moved > 0 && cut_for > 3'000) || cut_for > 20'000) {
                net.heal();
                healed_ms = strata::runtime::wall_clock_ms();
                std::printf("healed after %lld ms, %zu task(s) taken over meanwhile\n",
                            static_cast<long long>(cut_for), moved);
            }
        }
    }
    in.flush();
    REQUIRE(cut_ms > 0);
    REQUIRE(healed_ms > 0);
    CHECK(moved >= 1);  // its tasks went on elsewhere during the partition
    const bool done = await_committed(app, input, in.written(), 120s, [&] {
        return instances[0]->running() && instances[1]->running() && instances[2]->running();
    });
    // Cut off and healed, instance-1 is still running (its lease ended its
    // writes, nothing failed it) and runs tasks again.
    // (The leader gives it tasks back once its warm-up copies caught up.)
    bool rejoined = false;
    for (const auto until = std::chrono::steady_clock::now() + 30s;
         done && !rejoined && std::chrono::steady_clock::now() < until && instances[1]->running();
         std::this_thread::sleep_for(200ms))
        for (const auto& l : instances[1]->lines())
            if (l.rfind("started task=", 0) == 0 && field(l, "assigned_ms") > healed_ms) rejoined = true;
    for (auto& instance : instances) {
        if (instance->running()) instance->kill(SIGTERM);
        const int status = instance->wait();
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!done || !clean) std::printf("wait status %d:\n%s\n", status, instance->output().c_str());
        CHECK(clean);
    }
    REQUIRE(done);
    CHECK(rejoined);
    require_output_of_an_uninterrupted_run(output, in.written());
}
