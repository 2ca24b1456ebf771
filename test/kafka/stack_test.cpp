// A full store stack logged to Kafka: ordered_map_store | logged | cached |
// metered runs a random history checked against a model map, and a fresh
// stack restored from the topic equals the model.

#include "kafka_test_support.hpp"

#include <laws/kv_history.hpp>

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <map>
#include <random>
#include <string>

namespace kafka = strata::kafka;

namespace {

using store = strata::ordered_map_store<std::int64_t, std::string>;
using model = laws::kv_model;
using laws::contents_of;

auto make_stack(kafka::changelog& log, strata::metrics::registry& r) {
    return store("votes") | strata::logged(log) | strata::cached({.max_bytes = 2000}) | strata::metered(r);
}

struct counting_listener {
    std::uint64_t batches = 0;
    strata::restore_progress last;
    void on_restore_start(const strata::restore_progress& p) { last = p; }
    void on_batch_restored(const strata::restore_progress& p) {
        ++batches;
        last = p;
    }
    void on_restore_end(const strata::restore_progress& p) { last = p; }
};

}  // namespace

TEST_CASE("stack: a history logged to Kafka restores to the model", "[kafka][stack]") {
    const std::string topic = kafka_test::make_topic("stack");
    model m;
    std::uint64_t durable = 0;
    {
        kafka::changelog log(kafka_test::log_options(topic));
        strata::metrics::registry r;
        auto s = make_stack(log, r);
        // Flushes one step in ten of those that may: many records per round trip.
        laws::run_kv_history(s, m, 42, 5000, {.key_lo = -50, .key_hi = 150, .flush_one_in = 10});
        durable = s.flush();
        REQUIRE(contents_of(s) == m);
        REQUIRE(durable == log.end_offset());
        REQUIRE(durable == log.appended());  // one writer from offset 0: every record acknowledged
    }
    kafka::changelog log(kafka_test::log_options(topic));
    strata::metrics::registry r;
    auto fresh = make_stack(log, r);
    counting_listener l;
    const auto p = fresh.restore(l);
    REQUIRE(contents_of(fresh) == m);
    REQUIRE(p.records_done == durable);
    REQUIRE(p.position == durable);
    REQUIRE(l.last.records_done == durable);
    REQUIRE(l.batches >= 1);
}
