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
