// The coordination partition goes away under running instances, on a
// cluster of three brokers (scripts/kafka-cluster.sh) where everything else
// stays available: its only replica's broker is killed. Invariant under
// exactly-once: the instances go on with the tasks they own for longer than
// broker_timeout, and lose nothing; once the partition is back they publish
// their statuses again, and the output is what it would be without the
// outage. Under at-least-once an instance writes only while its heartbeats
// land on that partition (detail/liveness.hpp): it cannot tell the
// partition down from itself cut off from it, when the leader may have
// moved its tasks. So its processing pauses for the outage, no instance
// stops, and everything is processed once the partition is back.
//
// That broker is never the group's coordinator. If it were, the members'
// sessions would end with it (librdkafka revokes after session_timeout
// without an answer from the coordinator), and a member that lost its
// membership runs nothing until a decision for its new one is published:
// on the coordination partition, down. Processing then waits for the
// partition to come back (docs/runtime.md, "Coordination"); that is another
// outage than the one this test is about.

#include "cluster_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/runtime/detail/coordination.hpp>

#include <cstdio>
#include <string>

using namespace runtime_test;

namespace {

/// The end of partition 0 of `topic`, or -1 while no broker serves it (a
/// broker that has just restarted answers for a moment that it has no
/// partitions).
std::int64_t end_of(const std::string& topic) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", kafka_test::bootstrap());
    const strata::kafka::client consumer(RD_KAFKA_CONSUMER, std::move(c));
    try {
        return strata::kafka::list_end_offset(consumer.get(), topic, 0, 5s);
    } catch (const strata::kafka::error&) {
        return -1;
    }
}

}  // namespace

TEST_CASE("runtime: with the coordination partition's broker down, instances go on with what they own past "
          "broker_timeout (at-least-once: pause, and go on once it is back), publish again once it is back, and "
          "the output is that of an uninterrupted run",
          "[kafka][runtime][cluster]") {
    const bool exactly_once = GENERATE(false, true);
    INFO((exactly_once ? "exactly-once" : "at-least-once"));
    const three_brokers& cluster = three_brokers::get();
    for (int n = 1; n <= 3; ++n) cluster.ensure_up(n);  // after a failed first run
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    const std::string app = kafka_test::unique_name("coordination-outage");
    const std::string input = replicated_topic("coordination-outage-in", partitions);
    const std::string output = replicated_topic("coordination-outage-out", partitions);
    // The group coordinator is the leader of __consumer_offsets' only
    // partition (scripts/kafka-broker.sh): asking for the group's offsets
    // creates that topic on a fresh cluster, and a preferred-replica election
    // first keeps the controller from moving its leader in the middle of
    // the test (auto.leader.rebalance.enable, every 300 s).
    (void)cluster.run("node 1 tool org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server " +
                      kafka_test::bootstrap() + " --election-type PREFERRED --all-topic-partitions");
    (void)committed(app, input, partitions);
    const int group_coordinator = cluster.leader_of("__consumer_offsets");
    REQUIRE(group_coordinator > 0);
    const int node = group_coordinator == 3 ? 2 : 3;
    INFO("group coordinator: broker " << group_coordinator << "; coordination partition on broker " << node);
    // The coordination topic with its only replica there (the runtime
    // accepts a topic that exists): killing that broker takes it away, and
    // leaves the group's coordinator.
    const std::string coordination = strata::runtime::detail::coordination_topic_name(app);
    REQUIRE(cluster.run("topics --create --topic " + coordination + " --replica-assignment " +
                        std::to_string(node) + " --config cleanup.policy=compact") == 0);

    // Above the time the cluster takes to move a dead broker's partitions
    // (its broker session, 4 s in the test cluster, and an election): an
    // instance may stop when a changelog has no leader for broker_timeout,
    // and the point here is the coordination partition alone.
    constexpr int broker_timeout_ms = 10'000;
    const auto args = [&](const std::string& name) {
        std::vector<std::string> a{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output",
                                   output, "--state", (dir / name).string(), "--instance", name, "--commit-ms", "200",
                                   "--session-ms", "6000", "--broker-timeout-ms", std::to_string(broker_timeout_ms)};
        if (exactly_once) a.emplace_back("--exactly-once");
        return a;
    };
    input_writer in(input, partitions);
    const auto feed = [&](std::int64_t from, std::int64_t to) {
        for (std::int64_t i = from; i < to; ++i) in.write(i, 50);
        in.flush();
    };

    feed(0, 2'000);
    instance_process a(args("a"), dir / "a.log");
    instance_process b(args("b"), dir / "b.log");
    const auto both = [&] { return a.running() && b.running(); };
    const auto require_committed = [&](const char* when, std::chrono::seconds timeout) {
        if (!await_committed(app, input, in.written(), timeout, both)) {
            a.dump_stacks();
            b.dump_stacks();
            FAIL(when << ": not every input committed in " << timeout.count() << " s, or an instance stopped\na:\n"
                      << a.output() << "b:\n" << b.output());
        }
    };
    require_committed("before the kill", 90s);
    const std::int64_t statuses_before = end_of(coordination);
    REQUIRE(statuses_before > 0);

    // The broker dies; for two broker timeouts the coordination partition
    // has no leader, and every other partition moves to the other two.
    REQUIRE(cluster.leader_of("__consumer_offsets") == group_coordinator);
    const auto killed = std::chrono::steady_clock::now();
    REQUIRE(cluster.run("kill " + std::to_string(node)) == 0);
    feed(2'000, 4'000);
    std::int64_t processed_ms = -1;
    if (exactly_once) {
        require_committed("after the kill", 60s);
        processed_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
    }
    std::this_thread::sleep_until(killed + std::chrono::milliseconds(2 * broker_timeout_ms));
    feed(4'000, 5'000);
    if (exactly_once) require_committed("past broker_timeout", 30s);
    CHECK(both());  // neither stopped after its broker_timeout

    // Back: statuses land on the coordination topic again.
    REQUIRE(cluster.run("start-node " + std::to_string(node)) == 0);
    const auto back = std::chrono::steady_clock::now();
    while (end_of(coordination) <= statuses_before) {
        REQUIRE(std::chrono::steady_clock::now() - back < 60s);
        std::this_thread::sleep_for(200ms);
    }
    const auto republished_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - back).count();
    feed(5'000, 6'000);
    require_committed("after the restart", 60s);
    const auto caught_up_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - back).count();
    std::printf("coordination outage (%s): inputs written after the kill committed %lld ms after it (-1: paused "
                "for the outage); statuses published again %lld ms after the broker's restart, every input "
                "committed %lld ms after it\n",
                exactly_once ? "exactly-once" : "at-least-once", static_cast<long long>(processed_ms),
                static_cast<long long>(republished_ms), static_cast<long long>(caught_up_ms));

    for (instance_process* p : {&a, &b}) p->kill(SIGTERM);
    for (instance_process* p : {&a, &b}) {
        const int status = p->wait(60s);
        INFO(p->output());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    if (exactly_once) require_output_of_an_uninterrupted_run(output, in.written());
    else (void)require_every_input_has_output(output, in.written());
}
