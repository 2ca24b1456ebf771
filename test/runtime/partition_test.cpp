// One of three instances cut off from the cluster by a network partition,
// while input arrives: it runs in a network namespace of its own and reaches
// the broker only through a TCP proxy on loopback (test/support/own_network.hpp),
// which stalls both ways. Its connections stay open and nothing it sends
// arrives, so no error tells it: its heartbeats go unanswered, the others
// take its tasks over after liveness_timeout, and when the partition heals,
// what it sent meanwhile reaches the broker late. It is cut off twice, the
// second time once it runs tasks again. Exactly-once: the output still
// equals, record for record, what one uninterrupted run produces (each
// takeover fenced its producer, so its late writes are refused), and it
// rejoins and runs tasks again.

#include "runtime_test_support.hpp"

#include "support/own_network.hpp"
#include "support/temp_dir.hpp"

#include <strata/runtime/task.hpp>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

using namespace runtime_test;

namespace {

/// The newest `started` line of each task over the instances, as of `until_ms`: task -> instance.
std::map<std::string, std::size_t> owners(std::vector<std::unique_ptr<instance_process>>& instances,
                                          std::int64_t until_ms) {
    std::map<std::string, std::pair<std::int64_t, std::size_t>> newest;
    for (std::size_t i = 0; i < instances.size(); ++i)
        for (const auto& l : instances[i]->lines())
            if (l.rfind("started task=", 0) == 0 && field(l, "first_record_ms") <= until_ms) {
                auto& n = newest[text_field(l, "task")];
                if (field(l, "first_record_ms") >= n.first) n = {field(l, "first_record_ms"), i};
            }
    std::map<std::string, std::size_t> out;
    for (const auto& [task, n] : newest) out[task] = n.second;
    return out;
}

/// The tasks instance-1 ran at `cut_ms` that another instance started since.
std::size_t taken_from_instance_1(std::vector<std::unique_ptr<instance_process>>& instances, std::int64_t cut_ms) {
    const auto before = owners(instances, cut_ms);
    const auto now = owners(instances, std::numeric_limits<std::int64_t>::max());
    std::size_t n = 0;
    for (const auto& [task, owner] : before)
        if (owner == 1 && now.at(task) != 1) ++n;
    return n;
}

}  // namespace

TEST_CASE("runtime: exactly-once, an instance cut off by a network partition twice: its tasks go on elsewhere, its "
          "late writes are refused, it rejoins once healed, and the output is that of an uninterrupted run",
          "[kafka][runtime][failover][partition]") {
    REQUIRE(test_support::own_network::available());  // root and iproute2 (scripts/setup.sh installs it)
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 6;
    const std::string app = kafka_test::unique_name("partition");
    const std::string input = kafka_test::make_topic("partition-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("partition-out", partitions, {{"cleanup.policy", "delete"}});
    test_support::own_network net("strata-" + std::to_string(::getpid()) + "-p", kafka_test::bootstrap(),
                                  test_support::fault_proxy_script(), dir / "proxy.log");

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

    // Input at about 1,000 records/s while instance-1 is cut off twice: once
    // it runs tasks (5 s), and again once it runs tasks again after the
    // first cut healed. The same process, with the same incarnation, is
    // fenced twice: the second time too (handoff.hpp, fence_target).
    input_writer in(input, partitions);
    // Whether instance-1 has run a task, started after `since_ms`, for a
    // second at least (it committed it since).
    const auto runs_a_task_since = [&](std::int64_t since_ms) {
        const std::int64_t now = strata::runtime::wall_clock_ms();
        for (const auto& l : instances[1]->lines())
            if (l.rfind("started task=", 0) == 0 && field(l, "first_record_ms") > since_ms &&
                field(l, "first_record_ms") < now - 1'000)
                return true;
        return false;
    };
    constexpr int cuts = 2;
    std::vector<std::int64_t> cut_ms, healed_ms;
    std::vector<std::size_t> moved;
    const auto start = std::chrono::steady_clock::now();
    std::int64_t i = 0;
    for (; std::chrono::steady_clock::now() - start < 120s; ++i) {
        in.write(i, 200);
        std::this_thread::sleep_for(1ms);
        if (i % 100 != 0) continue;
        const std::int64_t now = strata::runtime::wall_clock_ms();
        const bool cut_off = cut_ms.size() > healed_ms.size();
        if (!cut_off && static_cast<int>(cut_ms.size()) < cuts &&
            std::chrono::steady_clock::now() - start > 5s &&
            runs_a_task_since(healed_ms.empty() ? 0 : healed_ms.back())) {
            net.cut();
            cut_ms.push_back(now);
            std::printf("cut instance-1 off after %lld records\n", static_cast<long long>(i + 1));
        } else if (cut_off) {
            // Healed once its tasks run elsewhere and three more seconds
            // passed (more than the liveness timeout), or after 20 s.
            const std::size_t n = taken_from_instance_1(instances, cut_ms.back());
            const std::int64_t cut_for = now - cut_ms.back();
            if ((n > 0 && cut_for > 3'000) || cut_for > 20'000) {
                net.heal();
                healed_ms.push_back(now);
                moved.push_back(n);
                std::printf("healed after %lld ms, %zu task(s) taken over meanwhile\n", static_cast<long long>(cut_for), n);
            }
        } else if (static_cast<int>(healed_ms.size()) == cuts && now - healed_ms.back() > 3'000) {
            break;  // input goes on for three seconds after the last heal
        }
    }
    in.flush();
    REQUIRE(static_cast<int>(healed_ms.size()) == cuts);
    for (const std::size_t n : moved) CHECK(n >= 1);  // its tasks went on elsewhere during each partition
    const bool done = await_committed(app, input, in.written(), 120s, [&] {
        return instances[0]->running() && instances[1]->running() && instances[2]->running();
    });
    // Cut off and healed, instance-1 is still running (nothing failed it)
    // and runs tasks again: the leader gives it tasks back once its warm-up
    // copies caught up.
    bool rejoined = false;
    for (const auto until = std::chrono::steady_clock::now() + 30s;
         done && !rejoined && std::chrono::steady_clock::now() < until && instances[1]->running();
         std::this_thread::sleep_for(200ms))
        rejoined = runs_a_task_since(healed_ms.back());
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
