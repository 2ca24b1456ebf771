// Exactly-once with the RocksDB store, against a real broker, without
// wiping the store after a crash. A processor in a child process reads an
// input topic, adds each input's amount to a per-key counter in a
// rocksdb_store logged to Kafka, writes the new count to an output topic,
// and every few inputs commits changelog records, outputs and input offsets
// in one Kafka transaction; only then does the store commit its batch to
// RocksDB, with the changelog offset. The store also holds the next input
// offset (key "~next-input"), so that its contents say which inputs they
// count. The processor is SIGKILLed at random moments and started again on
// the same directory.
//
// After each kill, before anything else opens it, the directory must hold a
// committed state, whole: the counters of exactly the inputs below its
// "~next-input", and that offset never past the group's committed input
// offset (the database never holds an aborted transaction's updates). The
// store restored from there must equal the counters of the committed
// inputs, and the restarted processor must restore only the changelog past
// the store's committed offset. Kafka Streams, in the same situation, wipes
// its RocksDB store and restores the whole changelog.

#include "../kafka/exactly_once_support.hpp"
#include "../kafka/kafka_test_support.hpp"

#include <support/seed.hpp>
#include <support/temp_dir.hpp>

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/transaction.hpp>
#include <strata/stores/rocksdb_store.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace strata::kafka;

namespace {

using counters = strata::rocksdb_store<std::string, std::int64_t>;
using model = std::map<std::string, std::int64_t>;
const std::string next_input_key = "~next-input";

struct setup {
    std::string bootstrap;
    std::string input, changelog, output;
    std::string group, transactional_id;
    std::filesystem::path store_dir;     ///< the processor's RocksDB directory, kept across kills
    std::filesystem::path restores_file; ///< one line per processor start: from, records restored, changelog end
    std::int64_t inputs = 0;
    int commit_every = 0;
};

std::string input_key(std::int64_t i) { return "k" + std::to_string(i % 37); }
std::int64_t input_amount(std::int64_t i) { return i % 11 + 1; }

/// The store's contents after the inputs below `next`.
model expected(std::int64_t next) {
    model m;
    for (std::int64_t i = 0; i < next; ++i) m[input_key(i)] += input_amount(i);
    if (next > 0) m[next_input_key] = next;
    return m;
}

template <class S>
model contents(const S& s) {
    model m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
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
std::int64_t committed_input(rd_kafka_t* consumer, const setup& s) {
    return kafka_test::committed_input_offset(consumer, s.input);
}

/// The processor; runs in the child and never returns.
[[noreturn]] void run_processor(const setup& s) {
    try {
        exactly_once eos(producer_options{s.bootstrap, s.transactional_id, {{"transaction.timeout.ms", "10000"}}});
        client consumer = group_consumer(s);
        const std::int64_t start = committed_input(consumer.get(), s);
        check(rd_kafka_assign(consumer.get(), one_partition(s.input, 0, start).get()), "assign the input");

        changelog log(log_options(s, s.changelog), eos.shared_producer());
        // The store commits only when the transaction has: save_checkpoint below.
        auto store = counters("counters", s.store_dir) | strata::logged(log, {.checkpoint_on_flush = false}) |
                     strata::cached();
        const strata::restore_progress p = store.restore();
        {
            std::ofstream restores(s.restores_file, std::ios::app);
            restores << p.from << ' ' << p.records_done << ' ' << p.to << '\n';
        }
        if (store.get(next_input_key).value_or(0) != start) {
            std::fprintf(stderr, "processor: the restored store counts %lld inputs, the group committed %lld\n",
                         static_cast<long long>(store.get(next_input_key).value_or(0)), static_cast<long long>(start));
            std::_Exit(3);
        }

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
                next = m->offset + 1;
                store.put(next_input_key, next);
                const std::string out = std::to_string(count);
                eos.send(s.output, 0, strata::as_bytes(key), strata::as_bytes(out));
                ++pending;
            } else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                check(m->err, "consume the input");
            }
            if (pending == s.commit_every || (pending > 0 && next == s.inputs)) {
                const strata::offset_t durable = store.flush();  // into the open transaction
                eos.commit(consumer.get());
                strata::layer<strata::logged_store>(store).save_checkpoint(durable);  // now the store's commit
                eos.begin();
                pending = 0;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "processor failed: %s\n", e.what());
        std::_Exit(2);
    }
}

struct round_view {
    std::int64_t committed = 0;           ///< the group's committed input offset
    std::int64_t in_store = 0;            ///< the inputs the store's database counts, as the crash left it
    model before_restore;                 ///< its contents then
    std::optional<strata::offset_t> store_offset;  ///< its committed changelog offset
    model restored;                       ///< its contents after restoring the changelog's tail
    strata::restore_progress restore;
    std::uint64_t outputs = 0;
};

/// What a restart would see: fences the killed processor (aborting its open
/// transaction), reads the committed input offset, and opens a copy of the
/// store's directory as the crash left it (so that this look changes
/// nothing the next processor reads), then restores the copy.
round_view look(const setup& s, const std::filesystem::path& scratch) {
    { exactly_once fence(producer_options{s.bootstrap, s.transactional_id, {}}); }
    round_view v;
    {
        const client consumer = group_consumer(s);
        v.committed = committed_input(consumer.get(), s);
    }
    std::filesystem::remove_all(scratch);
    // A processor killed before it opened its store left no directory: an empty store.
    if (std::filesystem::exists(s.store_dir))
        std::filesystem::copy(s.store_dir, scratch, std::filesystem::copy_options::recursive);
    counters db("counters", scratch);
    v.before_restore = contents(db);
    v.in_store = db.get(next_input_key).value_or(0);
    v.store_offset = db.committed_offset();
    changelog log(log_options(s, s.changelog));
    auto store = std::move(db) | strata::logged(log);
    v.restore = store.restore();
    v.restored = contents(store);
    changelog out(log_options(s, s.output));
    for ([[maybe_unused]] const strata::record_view r : out.replay(0)) ++v.outputs;
    return v;
}

std::vector<strata::restore_progress> read_restores(const setup& s) {
    std::vector<strata::restore_progress> r;
    std::ifstream in(s.restores_file);
    strata::restore_progress p;
    while (in >> p.from >> p.records_done >> p.to) r.push_back(p);
    return r;
}

}  // namespace

TEST_CASE("rocksdb exactly-once: a processor killed at random moments reopens its store, never wiped, "
          "and restores only the tail",
          "[kafka][rocksdb][exactly-once]") {
    test_support::temp_dir dir;
    setup s;
    s.bootstrap = kafka_test::bootstrap();
    s.input = kafka_test::make_topic("rocks-eos-input", 1, {{"cleanup.policy", "delete"}});
    s.changelog = kafka_test::make_topic("rocks-eos-changelog");
    s.output = kafka_test::make_topic("rocks-eos-output", 1, {{"cleanup.policy", "delete"}});
    s.group = kafka_test::unique_name("rocks-eos-group");
    s.transactional_id = kafka_test::unique_name("rocks-eos-task-0");
    s.store_dir = dir / "store";
    s.restores_file = dir / "restores.txt";
    const char* inputs_env = std::getenv("STRATA_ROCKSDB_EOS_INPUTS");
    s.inputs = inputs_env != nullptr && *inputs_env != '\0' ? std::atoll(inputs_env) : 6000;
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

    // Kill delays from this seed (STRATA_TEST_SEED reruns them); the number
    // of kills from STRATA_ROCKSDB_EOS_KILLS (default 4), of inputs from
    // STRATA_ROCKSDB_EOS_INPUTS (default 6000).
    const std::uint64_t seed = test_support::seed(20261201);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> delay_ms(800, 2500);
    const char* kills_env = std::getenv("STRATA_ROCKSDB_EOS_KILLS");
    const int kills = kills_env != nullptr && *kills_env != '\0' ? std::atoi(kills_env) : 4;
    INFO("seed " << seed << " (rerun with STRATA_TEST_SEED=" << seed << ")");

    std::int64_t last_committed = 0;
    int killed_mid_run = 0, reopened_ahead_of_zero = 0;
    for (int round = 0; round <= kills; ++round) {
        // Killed at a random moment, but for the last round, which runs to its end.
        const auto kill_after =
            round < kills ? std::optional(std::chrono::milliseconds(delay_ms(rng))) : std::nullopt;
        const bool killed = kafka_test::run_processor_round([&] { run_processor(s); }, kill_after);
        if (killed) ++killed_mid_run;

        const round_view v = look(s, dir / "look");
        std::printf("rocksdb exactly-once round %d: committed input %lld, store as left counts %lld, "
                    "restored %llu of the changelog's %llu records\n",
                    round, static_cast<long long>(v.committed), static_cast<long long>(v.in_store),
                    static_cast<unsigned long long>(v.restore.records_done),
                    static_cast<unsigned long long>(v.restore.to));
        INFO("round " << round << ", committed input " << v.committed << ", store counts " << v.in_store);
        REQUIRE(v.committed >= last_committed);
        // As the crash left it: a committed state, whole, never ahead of the commit.
        REQUIRE(v.in_store <= v.committed);
        REQUIRE(v.before_restore == expected(v.in_store));
        if (v.in_store > 0) {
            REQUIRE(v.store_offset.has_value());
            ++reopened_ahead_of_zero;
        }
        // Restored from its own offset: exactly the committed inputs.
        REQUIRE(v.restore.from == v.store_offset.value_or(0));
        REQUIRE(v.restored == expected(v.committed));
        REQUIRE(v.outputs == static_cast<std::uint64_t>(v.committed));
        last_committed = v.committed;
    }
    REQUIRE(last_committed == s.inputs);
    REQUIRE(killed_mid_run >= 1);          // the crash path was exercised, not only clean runs
    REQUIRE(reopened_ahead_of_zero >= 1);  // and the store kept its state across a kill

    // Every processor after the first restored from its store's offset, not
    // from the changelog's start (the first found an empty store).
    const auto restores = read_restores(s);
    REQUIRE(restores.size() == static_cast<std::size_t>(kills + 1));
    std::uint64_t read = 0, whole = 0;
    int tail_only = 0;
    for (std::size_t i = 1; i < restores.size(); ++i) {
        read += restores[i].records_done;
        whole += restores[i].to;
        tail_only += restores[i].from > 0 ? 1 : 0;
    }
    std::printf("rocksdb exactly-once: %d kills, %d restarts restored the tail only; they read %llu records "
                "where full restores would have read %llu\n",
                killed_mid_run, tail_only, static_cast<unsigned long long>(read),
                static_cast<unsigned long long>(whole));
    CHECK(tail_only >= 1);
    CHECK(read < whole);
}
