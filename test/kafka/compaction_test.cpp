// Compaction on a real broker: after Kafka's log cleaner has run, the
// superseded records and the tombstoned keys are gone from the topic, and a
// store restored from what is left is still exactly the written state.

#include "kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace kafka = strata::kafka;

namespace {

using store = strata::ordered_map_store<std::string, std::string>;

struct replay_census {
    std::size_t records = 0;
    std::map<std::string, std::size_t> per_key;
};

replay_census census(const kafka::changelog& log) {
    replay_census c;
    strata::offset_t last = 0;
    bool first = true;
    for (const strata::record_view r : log.replay(0)) {
        REQUIRE((first || r.offset > last));
        first = false;
        last = r.offset;
        ++c.records;
        ++c.per_key[std::string(strata::as_chars(r.key))];
    }
    return c;
}

}  // namespace

TEST_CASE("compaction: the cleaner drops superseded records and tombstones, restore stays exact",
          "[kafka][compaction]") {
    const std::string topic = kafka_test::make_topic("compaction", 1,
                                                     {{"segment.ms", "100"},
                                                      {"min.cleanable.dirty.ratio", "0.01"},
                                                      {"delete.retention.ms", "100"},
                                                      {"min.compaction.lag.ms", "0"}});
    kafka::changelog log(kafka_test::log_options(topic));
    std::map<std::string, std::string> model;
    std::set<std::string> deleted;
    {
        auto s = store("compacted") | strata::logged(log);
        for (int round = 0; round < 10; ++round)
            for (int k = 0; k < 100; ++k) {
                const std::string key = "key-" + std::to_string(k);
                s.put(key, "v" + std::to_string(round));
                model[key] = "v" + std::to_string(round);
            }
        for (int k = 0; k < 100; k += 5) {
            const std::string key = "key-" + std::to_string(k);
            REQUIRE(s.erase(key));
            model.erase(key);
            deleted.insert(key);
        }
        REQUIRE(s.flush() == 1020);
    }
    REQUIRE(census(log).records == 1020);

    // The active segment is never cleaned: keep appending a record to one
    // extra key so that segments roll, until the cleaner has removed every
    // superseded record and every tombstone from the closed segments.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    std::size_t polls = 0;
    for (;;) {
        log.append(strata::record_view{strata::as_bytes("roll"), strata::as_bytes("x")});
        log.flush();
        const replay_census c = census(log);
        bool clean = true;
        for (const auto& [key, count] : c.per_key) {
            if (key == "roll") continue;
            if (deleted.contains(key) || count != 1) clean = false;
        }
        if (clean && c.per_key.size() == model.size() + 1) break;
        INFO("records left: " << c.records << " after " << polls << " polls");
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        ++polls;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the cleaner runs on its own clock
    }

    // Only the latest record of each live key is left, offsets have gaps,
    // and restore from what is left equals the model.
    auto fresh = store("compacted") | strata::logged(log);
    const auto p = fresh.restore();
    std::map<std::string, std::string> restored;
    for (const auto& [k, v] : fresh.all())
        if (k != "roll") restored.emplace(k, v);
    REQUIRE(restored == model);
    REQUIRE(p.records_done < p.records_total);  // gaps: fewer records than offsets
    REQUIRE(p.position == p.to);
}
