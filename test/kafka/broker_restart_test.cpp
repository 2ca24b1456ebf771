// The broker crashes (SIGKILL) in the middle of writes and comes back with
// its data. flush() either succeeds once it has reconnected or throws; no
// record acknowledged by a successful flush is lost, and the idempotent
// producer writes none twice. The broker is restarted on every path, so the
// tests that run after this one find it up.

#include "kafka_test_support.hpp"

#include <strata/kafka/changelog.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

using strata::kafka::kafka_changelog;

namespace {

std::string key_of(int i) { return "r" + std::to_string(i); }

}  // namespace

TEST_CASE("broker restart: no acknowledged record is lost, none written twice", "[kafka][broker-restart]") {
    const std::string script = kafka_test::broker_script();
    const std::string topic = kafka_test::make_topic("broker-restart");
    auto o = kafka_test::log_options(topic);
    o.producer_settings = {{"message.timeout.ms", "120000"}, {"linger.ms", "5"}};
    o.request_timeout = std::chrono::milliseconds(60'000);

    int appended = 0;
    std::uint64_t acknowledged_end = 0;
    bool flush_failed = false;
    {
        kafka_test::broker_comes_back guard{script};
        kafka_changelog log(o);
        for (; appended < 2000; ++appended) {
            const std::string k = key_of(appended);
            log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
        }
        acknowledged_end = log.flush();
        REQUIRE(acknowledged_end == 2000);

        REQUIRE(kafka_test::run_broker_script(script, "kill") == 0);
        REQUIRE(kafka_test::run_broker_script(script, "status") != 0);
        // The broker comes back while the writer keeps appending and flushes.
        std::thread restarter([&] { (void)kafka_test::run_broker_script(script, "start --keep-data"); });
        try {
            for (; appended < 4000; ++appended) {
                const std::string k = key_of(appended);
                log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
                if (appended % 500 == 499) acknowledged_end = log.flush();
            }
            acknowledged_end = log.flush();
        } catch (const strata::changelog_error& e) {
            // Allowed: the failure is reported, never swallowed.
            flush_failed = true;
            UNSCOPED_INFO("flush threw: " << e.what());
        }
        restarter.join();
    }
    REQUIRE(kafka_test::run_broker_script(script, "status") == 0);

    // Read back with a fresh changelog object.
    kafka_changelog reader(o);
    std::map<std::string, int> seen;
    strata::offset_t next = 0;
    for (const strata::record_view r : reader.replay(0)) {
        REQUIRE(r.offset >= next);
        next = r.offset + 1;
        const std::string k(strata::as_chars(r.key));
        ++seen[k];
        REQUIRE(strata::as_chars(*r.value) == k);
    }
    // Everything acknowledged is there, in order and once each.
    for (int i = 0; i < static_cast<int>(acknowledged_end); ++i) {
        INFO("record " << key_of(i));
        REQUIRE(seen[key_of(i)] == 1);
    }
    for (const auto& [k, count] : seen) REQUIRE(count == 1);
    if (!flush_failed) {
        REQUIRE(acknowledged_end == 4000);
        REQUIRE(seen.size() == 4000);
    }
}
