// A record too large for the Kafka producer: the error names the store, the
// key and the record's size against the limit; the stack fails rather than
// report durable a state its changelog lacks, and what was flushed restores.

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <catch2/catch.hpp>

#include "kafka/kafka_test_support.hpp"

#include <memory>
#include <string>

TEST_CASE("a record over the producer's message.max.bytes names the store, the key and the size",
          "[kafka][limits]") {
    using store_t = strata::ordered_map_store<std::string, std::string>;
    const std::string topic = kafka_test::make_topic("limits");
    auto o = kafka_test::log_options(topic);
    o.producer_settings = {{"message.max.bytes", "100000"}};
    strata::kafka::changelog log(o);
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

    strata::kafka::changelog reread(kafka_test::log_options(topic));
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
    strata::kafka::changelog log(o);
    constexpr int n = 20'000;
    for (int i = 0; i < n; ++i) {
        const std::string k = "k" + std::to_string(i);
        log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
    }
    REQUIRE(log.flush() == static_cast<strata::offset_t>(n));
    strata::kafka::changelog reread(kafka_test::log_options(topic));
    int seen = 0;
    for (const strata::record_view r : reread.replay(0)) {
        REQUIRE(std::string(strata::as_chars(r.key)) == "k" + std::to_string(seen));
        ++seen;
    }
    CHECK(seen == n);
}

// The runtime's at-least-once lease asks the producer before each record
// (producer_options::may_write): a refused record is not enqueued, the
// error says why, and the store fails rather than call its state durable.
TEST_CASE("a producer whose owner may not write refuses the record with the owner's reason and enqueues nothing",
          "[kafka][limits]") {
    using store_t = strata::ordered_map_store<std::string, std::string>;
    const std::string topic = kafka_test::make_topic("permit");
    bool may_write = true;
    strata::kafka::producer_options po;
    po.bootstrap_servers = kafka_test::bootstrap();
    po.may_write = [&] { return may_write; };
    po.refusal = "the lease ran out";
    auto producer = std::make_shared<strata::kafka::producer>(po);
    strata::kafka::changelog log(kafka_test::log_options(topic), producer);
    auto s = store_t("counts") | strata::logged(log);
    s.put("before", "1");
    REQUIRE(s.flush() == 1);

    may_write = false;
    try {
        s.put("after", "2");
        FAIL("a record was accepted though its owner may not write");
    } catch (const strata::changelog_error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find("the lease ran out") != std::string::npos);
    }
    CHECK(rd_kafka_outq_len(producer->get()) == 0);  // nothing was handed to librdkafka
    CHECK(s.failed());

    strata::kafka::changelog reread(kafka_test::log_options(topic));
    auto rebuilt = store_t("counts") | strata::logged(reread);
    rebuilt.restore();
    CHECK(rebuilt.get("before") == std::optional<std::string>("1"));
    CHECK_FALSE(rebuilt.get("after").has_value());
}
