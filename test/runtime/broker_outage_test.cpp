// The broker goes away under a running instance: the instance retries for
// its broker_timeout, then stops with an error that says what it could not
// reach, and nothing is lost: started again once the broker is back, it
// resumes from its last commit and every input has its output.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

using namespace runtime_test;


TEST_CASE("runtime: a broker that goes away stops the instance after broker_timeout, and nothing is lost",
          "[kafka][runtime][broker-outage]") {
    const bool exactly_once = GENERATE(false, true);
    INFO("exactly-once: " << exactly_once);
    const std::string script = kafka_test::broker_script();
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    const std::string app = kafka_test::unique_name("outage");
    const std::string input = kafka_test::make_topic("outage-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("outage-out", partitions, {{"cleanup.policy", "delete"}});
    std::vector<std::string> args{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input,
                                  "--output", output, "--state", (dir / "state").string(), "--instance", "one",
                                  "--commit-ms", "200", "--broker-timeout-ms", "5000"};
    if (exactly_once) args.push_back("--exactly-once");
    input_writer in(input, partitions);
    for (std::int64_t i = 0; i < 2000; ++i) in.write(i, 40);
    in.flush();
    {
        instance_process one(args, dir / "one.log");
        REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return one.running(); }));
        const kafka_test::broker_comes_back guard{script};
        const auto killed = std::chrono::steady_clock::now();
        REQUIRE(kafka_test::run_broker_script(script, "kill") == 0);
        const int status = one.wait(90s);
        const auto took = std::chrono::steady_clock::now() - killed;
        INFO(one.output());
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);  // stopped with an error, not a crash and not a hang
        CHECK_THAT(one.output(), Catch::Contains("aggregate_app failed: strata::kafka:"));
        std::printf("broker outage: the instance stopped %lld ms after the broker died\n",
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
        CHECK(took > 4s);  // it retried for its broker_timeout first
        REQUIRE(kafka_test::run_broker_script(script, "start --keep-data") == 0);
    }
    // Back: more input, the instance again, everything processed.
    for (std::int64_t i = 2000; i < 3000; ++i) in.write(i, 40);
    in.flush();
    instance_process again(args, dir / "again.log");
    REQUIRE(await_committed(app, input, in.written(), 90s, [&] { return again.running(); }));
    again.kill(SIGTERM);
    const int status = again.wait();
    INFO(again.output());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    (void)require_every_input_has_output(output, in.written());
}
