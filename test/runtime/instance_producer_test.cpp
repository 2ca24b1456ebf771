// The producer of an instance (include/strata/runtime/detail/instance_producer.hpp)
// alone, against the broker: the delivery bound it sets under at-least-once,
// the lease it asks before each record, settling, and renewal after fencing;
// and the output that sends through it, counting each task's records apart.

#include "../kafka/kafka_test_support.hpp"

#include <strata/kafka/error.hpp>
#include <strata/runtime/detail/instance_producer.hpp>
#include <strata/runtime/detail/output.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
namespace rt = strata::runtime;

rt::application_options config(rt::processing_guarantee g, const std::string& instance = "p1") {
    rt::application_options c;
    c.application_id = kafka_test::unique_name("producer-app");
    c.bootstrap_servers = kafka_test::bootstrap();
    c.instance_id = instance;
    c.guarantee = g;
    c.session_timeout = 10s;
    c.broker_timeout = 20s;
    return c;
}

/// librdkafka's value of a producer setting.
std::string setting(rd_kafka_t* rk, const char* name) {
    std::array<char, 64> buf{};
    std::size_t size = buf.size();
    REQUIRE(rd_kafka_conf_get(rd_kafka_conf(rk), name, buf.data(), &size) == RD_KAFKA_CONF_OK);
    return buf.data();
}

/// Hands `n` records to the producer (not waiting for them).
void produce(rt::detail::instance_producer& p, const std::string& topic, int n,
             strata::kafka::delivery_tracker& tracker) {
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get()->get(), topic.c_str(), nullptr));
    for (int i = 0; i < n; ++i) {
        const std::string k = "k" + std::to_string(i);
        p.get()->produce(t.get(), 0, strata::as_bytes(k), strata::as_bytes(k), tracker);
    }
}

}  // namespace

TEST_CASE("instance producer: at-least-once, records land or fail within the lease's margin, and a user's longer "
          "timeout is warned of",
          "[runtime][producer]") {
    rt::application_options c = config(rt::processing_guarantee::at_least_once);
    std::vector<std::string> warnings;
    c.on_warning = [&](const std::string& w) { warnings.push_back(w); };
    {
        rt::detail::instance_producer p(c);
        CHECK_FALSE(p.exactly_once());
        CHECK(p.transactional_id().empty());
        // A third of the 600 ms liveness timeout (liveness::margin), under a
        // fifth of the 10 s session (lease::delivery_bound).
        CHECK(setting(p.get()->get(), "message.timeout.ms") == "200");
        CHECK(warnings.empty());
    }
    {
        rt::application_options longer = c;
        longer.liveness_timeout = std::chrono::milliseconds(10'000);
        rt::detail::instance_producer p(longer);
        CHECK(setting(p.get()->get(), "message.timeout.ms") == "2000");  // the session's bound is the smaller now
    }
    c.producer_settings["message.timeout.ms"] = "30000";
    rt::detail::instance_producer p(c);
    CHECK(setting(p.get()->get(), "message.timeout.ms") == "30000");
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings.front(), Catch::Contains("message.timeout.ms=30000 is over 200 ms"));
}

TEST_CASE("instance producer: at-least-once, a record is refused once the lease says no, and settle waits for "
          "what was handed over",
          "[runtime][producer]") {
    const std::string topic = kafka_test::make_topic("instance-producer");
    const rt::application_options c = config(rt::processing_guarantee::at_least_once);
    std::atomic<bool> lease{true};
    rt::detail::instance_producer p(c, [&] { return lease.load(); });
    strata::kafka::delivery_tracker tracker;
    produce(p, topic, 5'000, tracker);
    p.settle();
    CHECK(rd_kafka_outq_len(p.get()->get()) == 0);
    p.get()->poll();  // serves the delivery reports
    CHECK(tracker.acked == 5'000);
    CHECK(tracker.failed == 0);

    lease = false;
    try {
        produce(p, topic, 1, tracker);
        FAIL("a record was taken after the lease ran out");
    } catch (const strata::kafka::error& e) {
        CHECK(e.code() == RD_KAFKA_RESP_ERR__STATE);
        CHECK_THAT(std::string(e.what()), Catch::Contains("at-least-once lease ran out"));
    }
    // Nothing more was handed over.
    CHECK(tracker.in_flight == 0);
    CHECK(rd_kafka_outq_len(p.get()->get()) == 0);
}

TEST_CASE("instance producer: exactly-once, a second producer of the instance id fences the first, and a renewed "
          "one writes again",
          "[runtime][producer]") {
    const std::string topic = kafka_test::make_topic("instance-producer-eos");
    const rt::application_options c = config(rt::processing_guarantee::exactly_once);
    rt::detail::instance_producer first(c);
    CHECK(first.exactly_once());
    CHECK(first.transactional_id() == c.application_id + "-p1");
    CHECK_FALSE(first.fenced());

    rt::detail::instance_producer second(c);  // a process started with the same instance id
    strata::kafka::delivery_tracker tracker;
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (!first.fenced() && std::chrono::steady_clock::now() < until) {
        try {
            produce(first, topic, 1, tracker);
            (void)rd_kafka_flush(first.get()->get(), 500);
        } catch (const strata::kafka::error&) {
            // a fenced producer refuses records
        }
    }
    REQUIRE(first.fenced());
    CHECK(first.needs_renewal());
    CHECK_FALSE(second.fenced());

    first.renew();  // takes the transactional id back: now the second is the zombie
    CHECK_FALSE(first.fenced());
    strata::kafka::delivery_tracker after;
    produce(first, topic, 10, after);
    const strata::kafka::unique_partition_list none(rd_kafka_topic_partition_list_new(0));
    const strata::kafka::unique_group_metadata group(rd_kafka_consumer_group_metadata_new("instance-producer-test"));
    first.transaction().commit(none.get(), group.get());
    first.get()->poll();
    CHECK(after.acked == 10);
}

TEST_CASE("instance producer: exactly-once, a renewal that cannot reach the broker throws, and the instance's stop "
          "after it finds nothing to abandon or settle",
          "[runtime][producer]") {
    rt::application_options c = config(rt::processing_guarantee::exactly_once, "renewed-offline");
    rt::detail::instance_producer p(c);
    // The broker goes away (the producer reads the instance's options, where
    // its bootstrap now names a loopback port nothing listens on).
    c.bootstrap_servers = "127.0.0.1:1";
    c.broker_timeout = 2s;
    CHECK_THROWS_AS(p.renew(), strata::kafka::error);
    // What the instance's run() does after a failure: this read the producer
    // that was gone, and a scale run's instance died of SIGSEGV here.
    CHECK_NOTHROW(p.abandon());
    CHECK_NOTHROW(p.settle());
    CHECK(p.exactly_once());
    CHECK(p.transactional_id() == c.application_id + "-renewed-offline");
    CHECK_FALSE(p.fenced());
}

TEST_CASE("instance producer: renewed more than 10 times within a minute, it gives up and names the instance id",
          "[runtime][producer]") {
    const rt::application_options c = config(rt::processing_guarantee::at_least_once, "busy-id");
    rt::detail::instance_producer p(c);
    const auto t0 = rt::detail::instance_producer::clock::now();
    for (int i = 0; i < 10; ++i) p.renew(t0 + std::chrono::seconds(i));
    CHECK_THROWS_WITH(p.renew(t0 + 10s), Catch::Contains("is another process running with instance id busy-id"));
    // Renewals older than a minute no longer count.
    rt::detail::instance_producer q(c);
    for (int i = 0; i < 10; ++i) q.renew(t0 + std::chrono::seconds(i));
    CHECK_NOTHROW(q.renew(t0 + 61s));
}

TEST_CASE("output: a record the broker refuses counts against the task that sent it, and a record of no task "
          "against the instance",
          "[runtime][producer]") {
    const std::string topic = kafka_test::make_topic("output-tasks", 4);
    // librdkafka lets a 2 MB record through; the broker refuses it (its
    // max.message.bytes is 1 MB), in the delivery report.
    auto producer = std::make_shared<strata::kafka::producer>(strata::kafka::producer_options{
        kafka_test::bootstrap(), std::nullopt, {{"message.max.bytes", "10000000"}, {"message.timeout.ms", "10000"}}});
    rt::detail::output out(producer);
    const std::string small = "v", large(2'000'000, 'x');
    out.send(topic, strata::as_bytes(std::string("a")), strata::as_bytes(small), 1, 1);
    out.send(topic, strata::as_bytes(std::string("b")), strata::as_bytes(large), 3, 3);
    out.send(topic, strata::as_bytes(std::string("c")), strata::as_bytes(small), 3, 2);
    const rt::detail::output_failures f = out.flush();
    CHECK(f.tasks == std::vector<std::int32_t>{3});
    CHECK_THAT(f.message, Catch::Contains("of task 3") && Catch::Contains("not acknowledged"));

    // Forgotten once settled: the next flush finds nothing failed.
    out.forget_failures();
    out.send(topic, strata::as_bytes(std::string("d")), strata::as_bytes(small), 3, 3);
    CHECK(out.flush().tasks.empty());

    // A record of no task (a dead letter) that fails fails the flush.
    out.send(topic, strata::as_bytes(std::string("e")), strata::as_bytes(large), 0);
    CHECK_THROWS_WITH(out.flush(), Catch::Contains("output record(s) were not acknowledged"));
}
