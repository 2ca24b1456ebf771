// A record too large for the Kafka producer: the error names the store, the
// key and the record's size against the limit; the stack fails rather than
// report durable a state its changelog lacks, and what was flushed restores.

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <catch2/catch.hpp>

#include "kafka/kafka_test_support.hpp"

#include <string>

TEST_CASE("a record over the producer's message.max.bytes names the store, the key and the size",
          "[kafka][limits]") {
    using store_t = strata::ordered_map_store<std::string, std::string>;
    const std::string topic = kafka_test::make_topic("limits");
    auto o = kafka_test::log_options(topic);
    o.producer_settings = {{"message.max.bytes", "100000"}};
    strata::kafka::kafka_changelog log(o);
    auto s = store_t("profiles") | strata::logged(log);
    s.put("small", "fits");
    REQUIRE(s.flush() == 1);

    try {
        s.put("huge-profile", std::string(200'000, 'x'));
        FAIL("a record over message.max.bytes was accepted");
    } catch (const strata::changelog_error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("'profiles'") != std::string::npos);       // the store
        CHECK(what.find("'huge-profile'") != std::string::npos);   // the key
        CHECK(what.find("200012 bytes") != std::string::npos);     // key and value as encoded (12 + 200,000)
        CHECK(what.find("message.max.bytes (100000)") != std::string::npos);  // the limit it broke
    }
    CHECK(s.failed());
    CHECK_THROWS_AS(s.flush(), strata::changelog_error);  // nothing more is called durable

    strata::kafka::kafka_changelog reread(kafka_test::log_options(topic));
    auto rebuilt = store_t("profiles") | strata::logged(reread);
    rebuilt.restore();
    CHECK(rebuilt.get("small") == std::optional<std::string>("fits"));
    CHECK_FALSE(rebuilt.get("huge-profile").has_value());
}

TEST_CASE("a full producer queue pushes back on append instead of failing or growing", "[kafka][limits]") {
    const std::string topic = kafka_test::make_topic("pushback");
    auto o = kafka_test::log_options(topic);
    // Room for 500 records in librdkafka's queue; 20,000 are appended
    // without a flush in between.
    o.producer_settings = {{"queue.buffering.max.messages", "500"}, {"linger.ms", "50"}};
    strata::kafka::kafka_changelog log(o);
    constexpr int n = 20'000;
    for (int i = 0; i < n; ++i) {
        const std::string k = "k" + std::to_string(i);
        log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
    }
    REQUIRE(log.flush() == static_cast<strata::offset_t>(n));
    strata::kafka::kafka_changelog reread(kafka_test::log_options(topic));
    int seen = 0;
    for (const strata::record_view r : reread.replay(0)) {
        REQUIRE(std::string(strata::as_chars(r.key)) == "k" + std::to_string(seen));
        ++seen;
    }
    CHECK(seen == n);
}
