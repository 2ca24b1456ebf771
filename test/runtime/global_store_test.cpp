// Global stores against the real broker. The invariants: no task processes
// a record before the global store holds its whole topic (as of the start);
// while the application runs, the store follows the topic (updates and
// deletes); every processor, whatever its partition, reads any key; a
// record that does not decode stops the application naming it.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/kafka/producer.hpp>
#include <strata/runtime/application.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace runtime_test;

namespace {

/// Writes (key, value) records to a topic, each to the partition of its key; nullopt: a tombstone.
class table_writer {
public:
    table_writer(std::string topic, std::int32_t partitions)
        : topic_(std::move(topic)), partitions_(partitions),
          producer_(strata::kafka::producer_options{kafka_test::bootstrap(), std::nullopt, {{"linger.ms", "5"}}}),
          tracker_(&producer_.new_tracker()), rkt_(rd_kafka_topic_new(producer_.get(), topic_.c_str(), nullptr)) {}

    void put(const std::string& key, std::optional<std::int64_t> value) {
        const strata::byte_buffer v = value ? strata::encode(*value) : strata::byte_buffer{};
        producer_.produce(rkt_.get(), partition_of(key, partitions_), strata::as_bytes(key),
                          value ? std::optional<strata::bytes_view>(strata::bytes_view(v)) : std::nullopt, *tracker_);
    }
    void put_raw(const std::string& key, const std::string& bytes) {
        producer_.produce(rkt_.get(), partition_of(key, partitions_), strata::as_bytes(key),
                          std::optional<strata::bytes_view>(strata::as_bytes(bytes)), *tracker_);
    }
    void flush() {
        producer_.wait(*tracker_);
        REQUIRE_FALSE(tracker_->has_failed());
    }

private:
    std::string topic_;
    std::int32_t partitions_;
    strata::kafka::producer producer_;
    strata::kafka::delivery_tracker* tracker_;
    strata::kafka::unique_topic rkt_;
};

strata::runtime::application_options options(const std::string& app, const std::string& input,
                                             const test_support::temp_dir& dir) {
    strata::runtime::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {input};
    c.state_dir = dir / "state";
    c.instance_id = "in-process";
    c.commit_interval = std::chrono::milliseconds(200);
    c.session_timeout = std::chrono::milliseconds(6000);
    return c;
}

std::string item(std::int64_t i) { return "item-" + std::to_string(i % 500); }

}  // namespace

TEST_CASE("runtime: a global store is read whole before any task processes, then follows its topic",
          "[kafka][runtime][global]") {
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("global");
    const std::string prices_topic = kafka_test::make_topic("prices", 3);  // compacted, as reference data is
    const std::string orders = kafka_test::make_topic("orders", 2, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("priced", 2, {{"cleanup.policy", "delete"}});

    // Prices first: 5,000 writes over 500 items, the last of each wins.
    table_writer prices_in(prices_topic, 3);
    std::map<std::string, std::int64_t> price;
    for (std::int64_t i = 0; i < 5000; ++i) {
        prices_in.put(item(i), i);
        price[item(i)] = i;
    }
    prices_in.flush();

    std::vector<strata::runtime::global_store_progress> reports;
    auto prices = strata::runtime::make_global_store<std::string, std::int64_t>(
        {.topic = prices_topic,
         .on_progress = [&reports](const strata::runtime::global_store_progress& p) { reports.push_back(p); }},
        strata::hash_map_store<std::string, std::int64_t>("prices"));
    CHECK_FALSE(prices->bootstrapped());

    // Orders: key an order id, value an item number; each priced by the global store.
    input_writer orders_in(orders, 2);
    for (std::int64_t i = 0; i < 400; ++i) orders_in.write(i, 400);
    orders_in.flush();
    auto early = std::make_shared<std::atomic<int>>(0);      // processed before the bootstrap finished
    auto mispriced = std::make_shared<std::atomic<int>>(0);  // priced otherwise than the last price written
    auto app_ = strata::runtime::make_application<std::string, std::int64_t>(
        options(app, orders, dir),
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("orders-seen") | t.logged();
        },
        [prices, early, mispriced, price, output](auto& ctx, const auto& r) {
            if (!prices->bootstrapped()) ++*early;
            const auto p = prices->get(item(*r.value));
            if (p != price.at(item(*r.value))) ++*mispriced;
            ctx.stores().put(r.key, *r.value);
            ctx.emit(output, r.key, p.value_or(-1));
        });
    app_.add_global_store(prices);
    {
        running run(app_);
        REQUIRE(await_committed(app, orders, orders_in.written(), 60s));
        CHECK(early->load() == 0);
        CHECK(mispriced->load() == 0);
        CHECK(prices->records_applied() >= 5000);

        // While it runs the store follows the topic: new prices, and items withdrawn.
        for (std::int64_t i = 0; i < 500; ++i) prices_in.put(item(i), i % 7 == 0 ? std::nullopt : std::optional(-i));
        prices_in.flush();
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        const auto current = [&] {
            for (std::int64_t i = 0; i < 500; ++i)
                if (prices->get(item(i)) != (i % 7 == 0 ? std::nullopt : std::optional<std::int64_t>(-i))) return false;
            return true;
        };
        while (!current() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
        CHECK(current());
        // A query over the whole store, from this thread.
        CHECK(prices->query([](const auto& s) { return s.size(); }) == 500 - 72);
        run.stop();
    }
    // The bootstrap reported its progress, the last report whole.
    REQUIRE_FALSE(reports.empty());
    CHECK(reports.back().done);
    CHECK(reports.back().records >= 5000);
    CHECK(reports.back().to_read >= 5000);
    CHECK(prices->bootstrap_time().count() >= 0);
}

TEST_CASE("runtime: a global store record that does not decode stops the application, named",
          "[kafka][runtime][global]") {
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("global-bad");
    const std::string table = kafka_test::make_topic("bad-table", 1);
    const std::string input = kafka_test::make_topic("bad-in", 1, {{"cleanup.policy", "delete"}});
    table_writer w(table, 1);
    w.put("good", 1);
    w.put_raw("bad", "abc");  // 3 bytes: not a big-endian int64
    w.flush();
    auto g = strata::runtime::make_global_store<std::string, std::int64_t>(
        {.topic = table}, strata::hash_map_store<std::string, std::int64_t>("table"));
    auto a = strata::runtime::make_application<std::string, std::int64_t>(
        options(app, input, dir),
        [](strata::runtime::task_context&) { return strata::hash_map_store<std::string, std::int64_t>("s"); },
        [](auto&, const auto&) {});
    a.add_global_store(g);
    REQUIRE_THROWS_WITH(a.run(), Catch::Contains("global store over " + table) &&
                                     Catch::Contains("cannot decode the record at " + table + "[0]@1"));
    CHECK(g->get("good") == std::optional<std::int64_t>(1));
}

TEST_CASE("runtime: a global store's bootstrap alone reads every partition to the end it had", "[kafka][runtime][global]") {
    const std::string topic = kafka_test::make_topic("table", 4);
    table_writer w(topic, 4);
    std::map<std::string, std::optional<std::int64_t>> last;
    for (std::int64_t i = 0; i < 20'000; ++i) {
        const std::string key = "k" + std::to_string(i % 3000);
        const std::optional<std::int64_t> v = i % 11 == 0 ? std::nullopt : std::optional(i);
        w.put(key, v);
        last[key] = v;
    }
    w.flush();
    auto g = strata::runtime::make_global_store<std::string, std::int64_t>(
        {.topic = topic}, strata::hash_map_store<std::string, std::int64_t>("table"));
    REQUIRE(g->bootstrap(kafka_test::bootstrap(), {}));  // no follower: only what the bootstrap read
    CHECK(g->bootstrapped());
    CHECK(g->records_applied() == 20'000);
    std::size_t wrong = 0;
    for (const auto& [key, v] : last) wrong += g->get(key) == v ? 0 : 1;
    CHECK(wrong == 0);
    g->stop();
}
