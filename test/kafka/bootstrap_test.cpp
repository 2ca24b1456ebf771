// A wrong bootstrap address gives a clear error within a bounded time, both
// where nothing listens (connection refused) and where nothing answers at all
// (a blackholed address), instead of a delivery timeout minutes later.

#include "kafka_test_support.hpp"

#include <strata/kafka/changelog.hpp>

#include <chrono>

using strata::kafka::kafka_changelog;

namespace {
void check_refused_in_time(const std::string& address) {
    strata::kafka::kafka_changelog_options o;
    o.bootstrap_servers = address;
    o.topic = kafka_test::unique_name("wrong-bootstrap");
    o.connect_timeout = std::chrono::milliseconds(2000);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_THROWS_WITH(kafka_changelog(o), Catch::Contains("no answer from the Kafka cluster at '" + address + "'") &&
                                                Catch::Contains("within 2000 ms"));
    const auto took = std::chrono::steady_clock::now() - start;
    INFO("took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    REQUIRE(took < std::chrono::seconds(8));
}
}  // namespace

TEST_CASE("bootstrap: nothing listening at the address", "[kafka][bootstrap]") {
    kafka_test::bootstrap();  // the suite runs with a broker: this address is wrong on purpose
    check_refused_in_time("127.0.0.1:1");
}

TEST_CASE("bootstrap: an address that never answers", "[kafka][bootstrap]") {
    check_refused_in_time("10.255.255.1:9092");
}

TEST_CASE("bootstrap: a host name that does not resolve", "[kafka][bootstrap]") {
    check_refused_in_time("no-such-host.invalid:9092");
}
