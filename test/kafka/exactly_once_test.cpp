// Exactly-once against a real broker. A processor in a child process reads
// an input topic, adds each input's amount to a per-key counter in a store
// logged to Kafka, writes the new count to an output topic, and commits
// changelog records, outputs and input offsets in one transaction every few
// inputs. It is SIGKILLed at random moments and started again. After each
// kill, the store restored from the changelog must equal the counters implied
// by the committed input offsets alone (no update lost, none applied twice),
// and the output must hold exactly one record per committed input. Counters
// are not idempotent, so an input applied twice would show.

#include "exactly_once_support.hpp"
#include "kafka_test_support.hpp"

#include <support/seed.hpp>

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace strata::kafka;

namespace {

using counters = strata::ordered_map_store<std::string, std::int64_t>;
using model = std::map<std::string, std::int64_t>;

struct setup {
    std::string bootstrap;
    std::string input, changelog, output;
    std::string group, transactional_id;
    std::int64_t inputs = 0;
    int commit_every = 0;
};

std::string input_key(std::int64_t i) { return "k" + std::to_string(i % 37); }
std::int64_t input_amount(std::int64_t i) { return i % 11 + 1; }

model expected(std::int64_t committed) {
    model m;
    for (std::int64_t i = 0; i < committed; ++i) m[input_key(i)] += input_amount(i);
    return m;
}

changelog_options log_options(const setup& s, const std::string& topic) {
    changelog_options o;
    o.bootstrap_servers = s.bootstrap;
    o.topic = topic;
    return o;
}

client group_consumer(const setup& s) { return kafka_test::eos_input_consumer(s.bootstrap, s.group); }

/// The group's committed input offset (0 when nothing was committed).
std::int64_t committed_offset(rd_kafka_t* consumer, const setup& s) {
    return kafka_test::committed_input_offset(consumer, s.input);
}

/// The processor; runs in the child and never returns.
[[noreturn]] void run_processor(const setup& s) {
    try {
        exactly_once eos(producer_options{s.bootstrap, s.transactional_id, {{"transaction.timeout.ms", "10000"}}});
        client consumer = group_consumer(s);
        const std::int64_t start = committed_offset(consumer.get(), s);
        check(rd_kafka_assign(consumer.get(), one_partition(s.input, 0, start).get()), "assign the input");

        changelog log(log_options(s, s.changelog), eos.shared_producer());
        auto store = counters("counters") | strata::logged(log) | strata::cached();
        store.restore();

        eos.begin();
        std::int64_t next = start;
        int pending = 0;
        for (;;) {
            if (next == s.inputs && pending == 0) std::_Exit(0);
            const unique_message m(rd_kafka_consumer_poll(consumer.get(), 100));
            if (m && m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const std::string key(static_cast<const char*>(m->key), m->key_len);
                const std::int64_t amount = std::stoll(std::string(static_cast<const char*>(m->payload), m->len));
                const std::int64_t count = store.get(key).value_or(0) + amount;
                store.put(key, count);
                const std::string out = std::to_string(count);
                eos.send(s.output, 0, strata::as_bytes(key), strata::as_bytes(out));
                next = m->offset + 1;
                ++pending;
            } else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                check(m->err, "consume the input");
            }
            if (pending == s.commit_every || (pending > 0 && next == s.inputs)) {
                store.flush();
                eos.commit(consumer.get());
                eos.begin();
                pending = 0;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "processor failed: %s\n", e.what());
        std::_Exit(2);
    }
}

/// What a restart would see: fences the killed processor (aborting its open
/// transaction), then reads the committed offset, restores the counters and
/// counts the committed outputs.
struct committed_view {
    std::int64_t offset = 0;
    model restored;
    std::uint64_t outputs = 0;
};

committed_view look(const setup& s) {
    { exactly_once fence(producer_options{s.bootstrap, s.transactional_id, {}}); }
    committed_view v;
    {
        const client consumer = group_consumer(s);
        v.offset = committed_offset(consumer.get(), s);
    }
    changelog log(log_options(s, s.changelog));
    auto store = counters("counters") | strata::logged(log);
    store.restore();
    for (const auto& [k, c] : store.all()) v.restored.emplace(k, c);
    changelog out(log_options(s, s.output));
    for ([[maybe_unused]] const strata::record_view r : out.replay(0)) ++v.outputs;
    return v;
}

}  // namespace

TEST_CASE("exactly-once: a processor killed at random moments loses and repeats no update",
          "[kafka][exactly-once]") {
    setup s;
    s.bootstrap = kafka_test::bootstrap();
    s.input = kafka_test::make_topic("eos-input", 1, {{"cleanup.policy", "delete"}});
    s.changelog = kafka_test::make_topic("eos-changelog");
    s.output = kafka_test::make_topic("eos-output", 1, {{"cleanup.policy", "delete"}});
    s.group = kafka_test::unique_name("eos-group");
    s.transactional_id = kafka_test::unique_name("eos-task-0");
    s.inputs = 6000;
    s.commit_every = 20;
    {
        changelog in(log_options(s, s.input));
        for (std::int64_t i = 0; i < s.inputs; ++i) {
            const std::string k = input_key(i), v = std::to_string(input_amount(i));
            in.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(v)});
        }
        REQUIRE(in.flush() == static_cast<strata::offset_t>(s.inputs));
    }
    // No librdkafka handle (and so no thread) is alive here: fork is safe.

    // The kill delays come from this seed. To rerun a failing run's delays,
    // set the seed it reports: STRATA_TEST_SEED=<seed> ctest -R exactly_once
    // (the broker's timing still varies, so the moments are close, not exact).
    const std::uint64_t seed = test_support::seed(20240611);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> delay_ms(1000, 3000);
    INFO("seed " << seed << " (rerun with STRATA_TEST_SEED=" << seed << ")");

    constexpr int kills = 4;
    std::int64_t last_committed = 0;
    int killed_mid_run = 0;
    for (int round = 0; round <= kills; ++round) {
        // Killed at a random moment, but for the last round, which runs to its end.
        const auto kill_after =
            round < kills ? std::optional(std::chrono::milliseconds(delay_ms(rng))) : std::nullopt;
        const bool killed = kafka_test::run_processor_round([&] { run_processor(s); }, kill_after);
        if (killed) ++killed_mid_run;

        const committed_view v = look(s);
        std::printf("exactly-once round %d: committed input offset %lld, %llu outputs\n", round,
                    static_cast<long long>(v.offset), static_cast<unsigned long long>(v.outputs));
        INFO("round " << round << ", committed offset " << v.offset);
        REQUIRE(v.offset >= last_committed);
        REQUIRE(v.restored == expected(v.offset));
        REQUIRE(v.outputs == static_cast<std::uint64_t>(v.offset));
        last_committed = v.offset;
    }
    REQUIRE(last_committed == s.inputs);
    REQUIRE(killed_mid_run >= 1);  // the crash path was exercised, not only clean runs
}
