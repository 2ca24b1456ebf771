// Topic admin against a real broker: a changelog topic is created compacted
// with the partition count asked for; an existing topic is accepted only if
// it fits (compacted, same partition count); an unreachable cluster fails
// within the timeout.

#include "kafka_test_support.hpp"

#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>

#include <chrono>

using namespace strata::kafka;

namespace {
topic_options options(std::int32_t partitions) {
    topic_options o;
    o.bootstrap_servers = kafka_test::bootstrap();
    o.partitions = partitions;
    return o;
}
}  // namespace

TEST_CASE("admin: changelog topics are named like Kafka Streams names them", "[kafka][admin]") {
    REQUIRE(changelog_topic_name("shared-state", "votes") == "shared-state-votes-changelog");
}

TEST_CASE("admin: a missing changelog topic is created compacted, then found as it is", "[kafka][admin]") {
    const std::string app = kafka_test::unique_name("app");
    const std::string topic = ensure_changelog_topic(app, "store", options(3));
    REQUIRE(topic == app + "-store-changelog");
    // Created with 3 partitions, each usable at once.
    for (std::int32_t p = 0; p < 3; ++p) {
        changelog log(kafka_test::log_options(topic, p));
        REQUIRE(log.end_offset() == 0);
    }
    REQUIRE_THROWS_WITH(changelog(kafka_test::log_options(topic, 3)), Catch::Contains("no partition 3"));
    // Ensuring again finds it and accepts it: it is compacted and the count matches.
    REQUIRE(ensure_topic(topic, options(3)) == topic_status::existed);
}

TEST_CASE("admin: an existing topic with another partition count is refused", "[kafka][admin]") {
    const std::string topic = kafka_test::make_topic("partitions", 2);
    REQUIRE_THROWS_WITH(ensure_topic(topic, options(4)),
                        Catch::Contains("has 2 partitions, expected 4") && Catch::Contains(topic));
}

TEST_CASE("admin: an existing topic that is not compacted is refused", "[kafka][admin]") {
    const std::string topic = kafka_test::unique_name("not-compacted");
    auto o = options(1);
    o.topic_configs = {{"cleanup.policy", "delete"}};
    REQUIRE(ensure_topic(topic, o) == topic_status::created);
    REQUIRE_THROWS_WITH(ensure_topic(topic, options(1)),
                        Catch::Contains("cleanup.policy=delete") && Catch::Contains("needs cleanup.policy=compact"));
    // Whoever knows better may opt out.
    auto lax = options(1);
    lax.require_compaction = false;
    REQUIRE(ensure_topic(topic, lax) == topic_status::existed);
}

TEST_CASE("admin: a windowed store's changelog is compact,delete with the store's retention plus a day",
          "[kafka][admin]") {
    const std::string topic = kafka_test::unique_name("windowed");
    auto o = options(1);
    o.topic_configs = strata::kafka::windowed_changelog_configs(std::chrono::hours(1));
    REQUIRE(ensure_topic(topic, o) == topic_status::created);
    REQUIRE(strata::kafka::describe_topic_config(topic, "cleanup.policy", o) == "compact,delete");
    REQUIRE(strata::kafka::describe_topic_config(topic, "retention.ms", o) == std::to_string(25 * 3600 * 1000));
    REQUIRE(ensure_topic(topic, o) == topic_status::existed);
    // Another store kind's changelog, compacted alone, may not reuse it, nor
    // a windowed store take a plain changelog.
    REQUIRE_THROWS_WITH(ensure_topic(topic, options(1)), Catch::Contains("needs cleanup.policy=compact"));
    const std::string plain = kafka_test::unique_name("plain");
    REQUIRE(ensure_topic(plain, options(1)) == topic_status::created);
    REQUIRE_THROWS_WITH(ensure_topic(plain, o),
                        Catch::Contains("has cleanup.policy=compact, expected compact,delete"));
}

TEST_CASE("admin: extra topic configs are passed through at creation", "[kafka][admin]") {
    // An invalid value makes the broker refuse the creation, naming the config.
    auto o = options(1);
    o.topic_configs = {{"min.cleanable.dirty.ratio", "7"}};
    REQUIRE_THROWS_WITH(ensure_topic(kafka_test::unique_name("bad-config"), o),
                        Catch::Contains("INVALID_CONFIG") || Catch::Contains("min.cleanable.dirty.ratio"));
}

TEST_CASE("admin: an unreachable cluster fails within the timeout", "[kafka][admin][bootstrap]") {
    topic_options o;
    o.bootstrap_servers = "127.0.0.1:1";  // nothing listens there
    o.timeout = std::chrono::milliseconds(3000);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_THROWS_AS(ensure_topic(kafka_test::unique_name("unreachable"), o), strata::changelog_error);
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("admin: a request a dying broker cut off is asked again, but not one that asking again cannot mend",
          "[kafka][admin]") {
    // A broker killed while it answers leaves a transport error: a store that
    // opens then must not stop its instance for it (the chaos campaign's
    // coordinator kills found one that did).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int calls = 0;
    const auto flaky = [&] {
        if (++calls < 3) throw strata::kafka::error("describe", RD_KAFKA_RESP_ERR__TRANSPORT);
        return calls;
    };
    REQUIRE(strata::kafka::detail::retry_while_transient(deadline, flaky) == 3);

    calls = 0;
    const auto refused = [&]() -> int {
        ++calls;
        throw strata::kafka::error("describe", RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    };
    REQUIRE_THROWS_AS(strata::kafka::detail::retry_while_transient(deadline, refused), strata::kafka::error);
    REQUIRE(calls == 1);

    // Past the deadline the last transient error is the caller's.
    calls = 0;
    const auto always = [&]() -> int {
        ++calls;
        throw strata::kafka::error("describe", RD_KAFKA_RESP_ERR__TRANSPORT);
    };
    REQUIRE_THROWS_AS(strata::kafka::detail::retry_while_transient(
                          std::chrono::steady_clock::now() + std::chrono::milliseconds(350), always),
                      strata::kafka::error);
    REQUIRE(calls >= 2);
    REQUIRE(calls <= 4);
}
