// A full store stack logged to Kafka: ordered_map_store | logged | cached |
// metered runs a random history checked against a model map, and a fresh
// stack restored from the topic equals the model.

#include "kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <map>
#include <random>
#include <string>

using strata::kafka::kafka_changelog;

namespace {

using store = strata::ordered_map_store<std::int64_t, std::string>;
using model = std::map<std::int64_t, std::string>;

template <class S>
model contents(const S& s) {
    model m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

auto make_stack(kafka_changelog& log, strata::metrics::registry& r) {
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
        kafka_changelog log(kafka_test::log_options(topic));
        strata::metrics::registry r;
        auto s = make_stack(log, r);
        std::mt19937_64 rng(42);
        std::uniform_int_distribution<std::int64_t> key(-50, 150);
        std::uniform_int_distribution<int> op(0, 9), len(0, 60);
        for (int i = 0; i < 5000; ++i) {
            const std::int64_t k = key(rng);
            switch (op(rng)) {
                case 0:
                case 1: {
                    const bool existed = m.erase(k) != 0;
                    REQUIRE(s.erase(k) == existed);
                    break;
                }
                case 2:
                    m.erase(k);
                    s.apply(strata::erase_op<std::int64_t>{k});
                    break;
                case 3: {
                    std::string v(static_cast<std::size_t>(len(rng)), static_cast<char>('a' + i % 26));
                    m[k] = v;
                    s.apply(strata::put_op<std::int64_t, std::string>{k, v});
                    break;
                }
                case 4:
                case 5:
                    REQUIRE(s.get(k) == (m.contains(k) ? std::optional(m[k]) : std::nullopt));
                    break;
                case 6:
                    if (i % 10 == 0) durable = s.flush();
                    break;
                default: {
                    std::string v = std::to_string(i) + std::string(static_cast<std::size_t>(len(rng)), 'x');
                    m[k] = v;
                    s.put(k, v);
                }
            }
        }
        durable = s.flush();
        REQUIRE(contents(s) == m);
        REQUIRE(durable == log.end_offset());
        REQUIRE(durable == log.appended());  // one writer from offset 0: every record acknowledged
    }
    kafka_changelog log(kafka_test::log_options(topic));
    strata::metrics::registry r;
    auto fresh = make_stack(log, r);
    counting_listener l;
    const auto p = fresh.restore(l);
    REQUIRE(contents(fresh) == m);
    REQUIRE(p.records_done == durable);
    REQUIRE(p.position == durable);
    REQUIRE(l.last.records_done == durable);
    REQUIRE(l.batches >= 1);
}
