// A group held by another application: a Kafka Streams instance runs with
// the application id, and strata started with the same id must not run
// tasks without being a member of the group (it used to: 30,000 outputs for
// 20,000 inputs). It stops at once with an error that says why.
//
// The Kafka Streams side is the runtime peer of the benchmarks, run through
// scripts/peer-kafka-streams.sh (STRATA_PEER_KAFKA_STREAMS, exported by the
// test command).

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

using namespace runtime_test;

TEST_CASE("runtime: a group held by a Kafka Streams application stops strata with an error, before any task runs",
          "[kafka][runtime][interop]") {
    const std::string peer = kafka_test::required_env(
        "STRATA_PEER_KAFKA_STREAMS", "run the project's test command, which builds the Kafka Streams peer and exports it");
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("foreign");
    const std::string input = kafka_test::make_topic("foreign-in", 2, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("foreign-out", 2, {{"cleanup.policy", "delete"}});
    instance_process streams(peer,
                             {"runtime", "--application-id", app, "--input", input, "--output", output, "--state-dir",
                              (dir / "streams").string(), "--bootstrap", kafka_test::bootstrap()},
                             dir / "streams.log");
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (streams.output().find("to=RUNNING") == std::string::npos && std::chrono::steady_clock::now() < deadline &&
           streams.running())
        std::this_thread::sleep_for(200ms);
    INFO("Kafka Streams:\n" << streams.output());
    REQUIRE(streams.output().find("to=RUNNING") != std::string::npos);

    instance_process strata(STRATA_AGGREGATE_APP,
                            {"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output",
                             output, "--state", (dir / "strata").string(), "--instance", "s", "--session-ms", "6000"},
                            dir / "strata.log");
    const int status = strata.wait(60s);
    INFO("strata:\n" << strata.output());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 2));
    CHECK_THAT(strata.output(), Catch::Contains("held by members of another protocol"));
    CHECK(strata.output().find("started task=") == std::string::npos);
    streams.kill(SIGTERM);
    (void)streams.wait();
}

namespace {

/// When `p` printed its first `started task=` line with a first record, in
/// wall-clock ms (-1 while none).
std::int64_t first_record_ms(const instance_process& p) {
    std::int64_t first = -1;
    for (const auto& l : p.lines())
        if (l.rfind("started task=", 0) == 0)
            if (const std::int64_t ms = field(l, "first_record_ms"); ms > 0 && (first < 0 || ms < first)) first = ms;
    return first;
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

TEST_CASE("runtime: exactly-once handover from Kafka Streams to strata and back, without waiting for a session: "
          "the output of an uninterrupted run",
          "[kafka][runtime][interop]") {
    // Kafka Streams does not leave its group on close: its members stay for
    // their session (45 s by default) and strata refuses a group held by
    // them. Removing them (the peer's remove-members, Admin#
    // removeMembersFromConsumerGroup) lets strata take over at once, from
    // Kafka Streams' committed offsets and its changelog; strata leaves on
    // stop, so Kafka Streams takes back from strata's commits at once too.
    const std::string peer = kafka_test::required_env(
        "STRATA_PEER_KAFKA_STREAMS", "run the project's test command, which builds the Kafka Streams peer and exports it");
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("handover");
    const std::string input = kafka_test::make_topic("handover-in", 2, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("handover-out", 2, {{"cleanup.policy", "delete"}});
    input_writer in(input, 2);
    const auto feed = [&](std::int64_t from, std::int64_t to) {
        for (std::int64_t i = from; i < to; ++i) in.write(i, 50);
        in.flush();
    };
    const auto run_streams = [&](const std::string& name) {
        return std::make_unique<instance_process>(
            peer,
            std::vector<std::string>{"runtime", "--application-id", app, "--input", input, "--output", output,
                                     "--state-dir", (dir / name).string(), "--guarantee", "exactly_once_v2",
                                     "--session-ms", "45000", "--bootstrap", kafka_test::bootstrap()},
            dir / (name + ".log"));
    };
    const auto stop = [](instance_process& p) {
        p.kill(SIGTERM);
        const int status = p.wait(90s);
        INFO(p.output());
        REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    };

    feed(0, 1'000);
    auto streams = run_streams("streams-1");
    REQUIRE(await_committed(app, input, in.written(), 120s, [&] { return streams->running(); }));
    stop(*streams);
    const std::int64_t streams_stopped_ms = now_ms();

    // The group still holds Kafka Streams' member until its session ends.
    instance_process removal(peer, {"remove-members", "--application-id", app, "--bootstrap", kafka_test::bootstrap()},
                             dir / "remove.log");
    REQUIRE(removal.wait(60s) == 0);
    INFO(removal.output());
    CHECK_THAT(removal.output(), Catch::Contains("\"removed\":1"));

    feed(1'000, 2'000);
    instance_process strata(STRATA_AGGREGATE_APP,
                            {"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output",
                             output, "--state", (dir / "strata").string(), "--instance", "s", "--exactly-once",
                             "--session-ms", "6000"},
                            dir / "strata.log");
    REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return strata.running(); }));
    INFO("strata:\n" << strata.output());
    const std::int64_t taken_ms = first_record_ms(strata);
    REQUIRE(taken_ms > 0);
    // Far below Kafka Streams' 45 s session, startup of the process included.
    CHECK(taken_ms - streams_stopped_ms < 20'000);
    std::printf("handover Kafka Streams -> strata: stop to first record %lld ms (remove-members %s)\n",
                static_cast<long long>(taken_ms - streams_stopped_ms), removal.output().c_str());
    stop(strata);

    // And back: strata left the group on stop.
    feed(2'000, 3'000);
    auto again = run_streams("streams-2");
    REQUIRE(await_committed(app, input, in.written(), 120s, [&] { return again->running(); }));
    stop(*again);
    require_output_of_an_uninterrupted_run(output, in.written());
}
