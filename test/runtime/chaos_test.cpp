// A campaign of faults against three instances of the runtime tests'
// application on three brokers (scripts/kafka-cluster.sh), one fault after
// another, chosen by a seeded random generator:
//
//   kill      SIGKILL an instance; it restarts on its state (with history)
//   handoff   SIGTERM an instance (a clean handoff); it restarts
//   latency   the same handoff while every broker's proxy holds each chunk
//             20 to 100 ms (both ways, replication too)
//   zombie    SIGSTOP an instance past its session (replaced), then SIGCONT
//   pause     SIGSTOP an instance for less than its session, then SIGCONT
//   broker    SIGKILL a broker; it comes back on its data
//   coordinator  SIGKILL the broker that leads the coordination partition
//   duplicate a second process with an instance id in use (refused)
//
// Inputs are written between faults and each fault ends when the group has
// committed all of them. The invariants, checked at the end:
//   both:          no two copies of a task wrote in one interval: each input
//                  also writes an audit record naming the copy that
//                  processed it (instance, process, build; see
//                  aggregate_app.cpp), and in each partition of the audit
//                  topic every copy's records form one unbroken run (read
//                  committed: under exactly-once, what a fenced zombie
//                  wrote is aborted and does not count; under
//                  at-least-once the lease and the producer's delivery
//                  bound keep a zombie's records from landing after its
//                  successor's, docs/runtime.md). Each record carries when
//                  it was processed, so a run sent late (processed before
//                  the other copy began) is told from a second copy at work;
//   exactly-once:  the output equals that of an uninterrupted run;
//   at-least-once: every input has its output, and no key's count goes
//                  backwards in its changelog (two writers of one task, a
//                  zombie's write after its successor's, would show so).
// The runs of each partition (which copy ran the task, over which inputs)
// are printed at the end.
// A failing run prints its seed; STRATA_CHAOS_SEED=<seed> runs it again
// (the same faults in the same order; the timing is the machine's; the
// exactly-once half draws from seed + 1).
// STRATA_CHAOS_FAULTS sets the faults per guarantee (3 by default: the
// short run, ctest -L '^runtime_campaign$'; scripts/chaos-runtime.sh runs
// the long campaign).

#include "audit_support.hpp"
#include "cluster_support.hpp"

#include "app/aggregate.hpp"
#include "support/temp_dir.hpp"

#include <strata/runtime/detail/coordination.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace runtime_test;

namespace {

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

constexpr std::array<const char*, 8> fault_names{"kill",   "handoff",     "latency",  "zombie",
                                                 "pause",  "broker",      "coordinator", "duplicate"};

/// The instances a, b, c, each restarted on its own state directory.
class fleet {
public:
    fleet(const test_support::temp_dir& dir, std::vector<std::string> base_args) : dir_(&dir), base_(std::move(base_args)) {
        for (const char* id : {"a", "b", "c"}) start(id);
    }

    void start(const std::string& id) {
        const int n = ++incarnations_[id];
        std::vector<std::string> args = base_;
        args.insert(args.end(), {"--state", (*dir_ / ("state-" + id)).string(), "--instance", id});
        procs_[id] = std::make_unique<instance_process>(args, *dir_ / (id + "-" + std::to_string(n) + ".log"));
    }

    instance_process& at(const std::string& id) { return *procs_.at(id); }

    /// Whether every instance is still a process (a paused one counts).
    bool alive() {
        for (auto& [id, p] : procs_)
            if (!p->running()) return false;
        return true;
    }

    void dump_stacks() {
        for (auto& [id, p] : procs_) p->dump_stacks();
    }

    /// Asks every running instance for its metrics (aggregate_app prints
    /// them into its log on SIGUSR1) and gives them a second to answer.
    void dump_metrics() {
        for (auto& [id, p] : procs_)
            if (p->running()) p->kill(SIGUSR1);
        std::this_thread::sleep_for(1s);
    }

    [[nodiscard]] std::string outputs() const {
        std::string s;
        for (const auto& [id, p] : procs_)
            s += id + " (incarnation " + std::to_string(incarnations_.at(id)) + ", " + p->how_it_ended() + "):\n" +
                 p->output();
        return s;
    }

    [[nodiscard]] std::vector<std::string> args_of(const std::string& id, const std::string& state) const {
        std::vector<std::string> args = base_;
        args.insert(args.end(), {"--state", state, "--instance", id});
        return args;
    }

private:
    const test_support::temp_dir* dir_;
    std::vector<std::string> base_;
    std::map<std::string, std::unique_ptr<instance_process>> procs_;
    std::map<std::string, int> incarnations_;
};

}  // namespace

TEST_CASE("runtime: a campaign of faults on three brokers (kills, handoffs, zombies, pauses, broker and "
          "coordinator deaths, duplicate ids) keeps every guarantee",
          "[kafka][runtime][cluster][chaos]") {
    const bool exactly_once = GENERATE(false, true);
    // The short run has one seed, always the same, so that what it checks
    // does not change from run to run; scripts/chaos-runtime.sh draws a new
    // seed for each round.
    const std::uint64_t seed = env_number("STRATA_CHAOS_SEED", 20261204);
    const std::uint64_t faults = env_number("STRATA_CHAOS_FAULTS", 3);
    const char* guarantee = exactly_once ? "exactly-once" : "at-least-once";
    INFO(guarantee << ", STRATA_CHAOS_SEED=" << seed);
    std::printf("chaos %s: seed %llu, %llu faults\n", guarantee, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(faults));
    std::mt19937_64 rng(seed + (exactly_once ? 1 : 0));
    const auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng); };

    const three_brokers& cluster = three_brokers::get();
    for (int n = 1; n <= 3; ++n) cluster.ensure_up(n);
    REQUIRE(cluster.run("pass") == 0);  // after a run that failed while delayed
    test_support::temp_dir dir;
    std::printf("chaos %s: instance logs in %s\n", guarantee, dir.path().c_str());  // kept with STRATA_KEEP_TEST_DIRS=1
    constexpr std::int32_t partitions = 6;
    constexpr int keys = 200;
    constexpr int session_ms = 6000;
    const std::string app = kafka_test::unique_name("chaos");
    const std::string input = replicated_topic("chaos-in", partitions);
    const std::string output = replicated_topic("chaos-out", partitions);
    const std::string audit = replicated_topic("chaos-audit", partitions);
    std::vector<std::string> base{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                  "--output", output, "--commit-ms", "200", "--session-ms", std::to_string(session_ms),
                                  "--standbys", "1", "--audit", audit};
    if (exactly_once) base.emplace_back("--exactly-once");
    // STRATA_CHAOS_DEBUG=cgrp: the group consumers' librdkafka debug log, in
    // the instances' logs (scripts/chaos-runtime.sh keeps those of a failed round).
    if (const char* debug = std::getenv("STRATA_CHAOS_DEBUG"); debug != nullptr && *debug != '\0')
        base.insert(base.end(), {"--consumer-debug", debug});
    input_writer in(input, partitions);
    std::int64_t next = 0;
    const auto feed = [&](int n) {
        for (int i = 0; i < n; ++i) in.write(next++, keys);
        in.flush();
    };

    fleet f(dir, base);
    const auto require_committed = [&](const std::string& after) {
        if (!await_committed(app, input, in.written(), 120s, [&] { return f.alive(); })) {
            f.dump_metrics();
            f.dump_stacks();
            const std::vector<std::int64_t> c = committed(app, input, partitions);
            for (std::int32_t p = 0; p < partitions; ++p)
                std::printf("chaos %s: stalled: partition %d: %zu written, %lld committed\n", guarantee, p,
                            in.written()[static_cast<std::size_t>(p)].size(),
                            static_cast<long long>(c[static_cast<std::size_t>(p)]));
            // The group as its coordinator sees it: state, members, assignments.
            for (const char* what : {"--state", "--members --verbose"})
                (void)cluster.run(std::string("node 1 tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "
                                              "--bootstrap-server ") +
                                  kafka_test::bootstrap() + " --describe --group " + app + " " + what);
            FAIL("after " << after << ": not every input committed in 120 s, or an instance stopped (seed " << seed
                          << ")\n" << f.outputs());
        }
    };
    feed(1'000);
    require_committed("the start");

    const std::array<std::string, 3> ids{"a", "b", "c"};
    // STRATA_CHAOS_KINDS=broker,coordinator: only those faults (a campaign
    // after one kind of stall). A seed replays with the same kinds only.
    std::set<std::string> kinds;
    if (const char* k = std::getenv("STRATA_CHAOS_KINDS"); k != nullptr && *k != '\0') {
        std::stringstream list(k);
        for (std::string name; std::getline(list, name, ',');) {
            REQUIRE(std::find(fault_names.begin(), fault_names.end(), name) != fault_names.end());
            kinds.insert(name);
        }
    }
    std::map<std::string, int> done;
    for (std::uint64_t k = 0; k < faults; ++k) {
        std::string fault = fault_names[pick(fault_names.size())];
        while (!kinds.empty() && kinds.count(fault) == 0) fault = fault_names[pick(fault_names.size())];
        const std::string& id = ids[pick(ids.size())];
        const auto started = std::chrono::steady_clock::now();
        feed(200);
        if (fault == "kill") {
            f.at(id).kill(SIGKILL);
            (void)f.at(id).wait();
            feed(200);
            std::this_thread::sleep_for(std::chrono::milliseconds(pick(2000)));
            f.start(id);
        } else if (fault == "handoff" || fault == "latency") {
            if (fault == "latency") REQUIRE(cluster.run("delay " + std::to_string(20 + pick(81))) == 0);
            f.at(id).kill(SIGTERM);
            const int status = f.at(id).wait(60s);
            INFO(f.outputs());
            REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
            feed(200);
            f.start(id);
            if (fault == "latency") {
                feed(200);
                require_committed(fault + " of " + id + ", still delayed");
                REQUIRE(cluster.run("pass") == 0);
            }
        } else if (fault == "zombie" || fault == "pause") {
            f.at(id).kill(SIGSTOP);
            feed(200);
            std::this_thread::sleep_for(fault == "zombie" ? std::chrono::milliseconds(session_ms + 3000)
                                                          : std::chrono::milliseconds(500 + pick(2500)));
            f.at(id).kill(SIGCONT);
        } else if (fault == "broker" || fault == "coordinator") {
            const int node = fault == "broker"
                                 ? static_cast<int>(pick(3)) + 1
                                 : cluster.leader_of(strata::runtime::detail::coordination_topic_name(app));
            REQUIRE(node >= 1);
            REQUIRE(cluster.run("kill " + std::to_string(node)) == 0);
            std::this_thread::sleep_for(std::chrono::milliseconds(2000 + pick(3000)));
            REQUIRE(cluster.run("start-node " + std::to_string(node)) == 0);
            feed(200);
        } else {  // duplicate
            instance_process second(f.args_of(id, (dir / ("duplicate-" + std::to_string(k))).string()),
                                    dir / ("duplicate-" + std::to_string(k) + ".log"));
            const int status = second.wait(60s);
            INFO("duplicate of " << id << ":\n" << second.output());
            CHECK((WIFEXITED(status) && WEXITSTATUS(status) != 0));
            CHECK(second.output().find("another process runs with instance id " + id) != std::string::npos);
        }
        feed(200);
        require_committed(fault + " of " + id);
        ++done[fault];
        std::printf("chaos %s: fault %llu %s of %s, all committed after %lld ms\n", guarantee,
                    static_cast<unsigned long long>(k + 1), fault.c_str(), id.c_str(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - started)
                                               .count()));
        std::fflush(stdout);  // a campaign's log shows its progress as it goes
    }

    for (const std::string& id : ids) f.at(id).kill(SIGTERM);
    for (const std::string& id : ids) {
        const int status = f.at(id).wait(60s);
        INFO(f.outputs());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    INFO("seed " << seed);
    // Which copy ran each task over which inputs; no copy writes again
    // once another has written after it.
    for (std::int32_t p = 0; p < partitions; ++p) {
        const task_audit t = audit_task(audit, p);
        std::printf("chaos %s: task %d ran on%s\n", guarantee, p, t.history.c_str());
        INFO("task " << p << ":" << t.history);
        for (const std::string& late : t.late) FAIL_CHECK("task " << p << ": " << late);
        for (const std::string& overlap : t.overlaps) FAIL("task " << p << ": " << overlap);
    }
    if (exactly_once) {
        require_output_of_an_uninterrupted_run(output, in.written());
    } else {
        (void)require_every_input_has_output(output, in.written());
        REQUIRE(check_changelog_counts_never_go_back(app, partitions).went_back == 0);
    }
    std::printf("chaos %s: seed %llu, %llu faults, every invariant held:", guarantee,
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(faults));
    for (const auto& [fault, n] : done) std::printf(" %s=%d", fault.c_str(), n);
    std::printf("\n");
}
