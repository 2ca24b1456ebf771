// The law suite with Kafka as the changelog: the generated product of
// test/laws/stacks.hpp (every store times every choice of the other layer
// slots) with the changelog slot set to a Kafka topic on the real broker.
// A stack's history goes to a topic of its own, and a fresh stack restores
// from it through a new kafka::changelog.
//
// The crash law is not run here: a changelog object that goes away without a
// flush purges what librdkafka still queues, but records already sent may be
// written anyway, so after a crash a topic holds the last flush and possibly
// more. Exactly-once (test/kafka/exactly_once_test.cpp) is what makes a crash
// restore the last commit exactly.

#include "kafka_test_support.hpp"

#include <laws/kv_history.hpp>
#include <laws/stacks.hpp>
#include <laws/table_history.hpp>

#include <strata/kafka/changelog.hpp>

#include <optional>
#include <string>
#include <tuple>

namespace {

/// laws::env plus a Kafka changelog on a topic made for this env.
struct kafka_env : laws::env {
    std::optional<std::string> topic;
    std::optional<strata::kafka::changelog> kafka;

    strata::kafka::changelog& kafka_log() {
        if (!topic) topic = kafka_test::make_topic("laws");
        if (!kafka) kafka.emplace(kafka_test::log_options(*topic));
        return *kafka;
    }

    /// A clean stop: the next kafka_log() connects anew.
    void reopen() {
        env::reopen();
        kafka.reset();
    }
    // compact(): the broker compacts a topic on its own schedule, not on
    // demand, so the restore law's second restore reads the whole topic
    // again; restoring from a compacted topic is test/kafka/compaction_test.cpp.
};

struct log_to_kafka {
    static constexpr bool logs = true, caches = false;
    template <class Store, class S>
    static auto wrap(S&& s, kafka_env& e) {
        return std::forward<S>(s) | Store::logged(e.kafka_log());
    }
};

using kafka_slots = laws::slots_over<log_to_kafka>;
using kafka_kv_stacks = laws::generated_stacks_over<kafka_env, kafka_slots, laws::ordered_store, laws::hashed_store>;
using kafka_table_stacks = laws::generated_stacks_over<kafka_env, kafka_slots, laws::table_store>;
static_assert(std::tuple_size_v<kafka_kv_stacks> == 8);
static_assert(std::tuple_size_v<kafka_table_stacks> == 4);

}  // namespace

TEMPLATE_LIST_TEST_CASE("kafka law: a kv stack logged to Kafka behaves as the bare store", "[kafka][laws]",
                        kafka_kv_stacks) {
    laws::kv_model_law<TestType>(1, 2, 400);
}

TEMPLATE_LIST_TEST_CASE("kafka law: a kv stack restores from its Kafka changelog", "[kafka][laws][restore]",
                        kafka_kv_stacks) {
    laws::kv_restore_law<TestType>(100, 102, 500);
}

TEMPLATE_LIST_TEST_CASE("kafka law: a table logged to Kafka behaves as the bare table", "[kafka][laws]",
                        kafka_table_stacks) {
    laws::table_model_law<TestType>(1, 2, 300);
}

TEMPLATE_LIST_TEST_CASE("kafka law: a table restores from its Kafka changelog", "[kafka][laws][restore]",
                        kafka_table_stacks) {
    laws::table_restore_law<TestType>(50, 52, 400);
}
