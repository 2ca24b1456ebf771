// Restore of one million records from a real broker, with progress: the
// listener sees every batch, the final count is exact, and the store equals
// what was written. Prints the write and restore rates measured.

#include "kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace kafka = strata::kafka;

namespace {

using store = strata::hash_map_store<std::int64_t, std::string>;

struct progress_listener {
    std::uint64_t batches = 0;
    std::uint64_t last_done = 0;
    bool monotonic = true;
    strata::restore_progress end;
    void on_restore_start(const strata::restore_progress& p) { end = p; }
    void on_batch_restored(const strata::restore_progress& p) {
        ++batches;
        monotonic = monotonic && p.records_done > last_done;
        last_done = p.records_done;
    }
    void on_restore_end(const strata::restore_progress& p) { end = p; }
};

strata::logged_options batch_options() {
    strata::logged_options o;
    o.restore_progress_every = 50'000;
    return o;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("restore: one million records, with progress", "[kafka][restore]") {
    constexpr std::int64_t n = 1'000'000;
    const std::string topic = kafka_test::make_topic("restore-1m");
    const std::string value(40, 'v');
    {
        auto o = kafka_test::log_options(topic);
        o.producer_settings = {{"linger.ms", "20"}, {"batch.size", "1000000"}, {"compression.type", "lz4"}};
        kafka::changelog log(o);
        auto s = store("big") | strata::logged(log);
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t k = 0; k < n; ++k) s.put(k, value);
        REQUIRE(s.flush() == static_cast<strata::offset_t>(n));
        const double took = seconds_since(start);
        std::printf("kafka write: %lld records (8-byte key, 40-byte value, lz4) in %.2f s = %.0f records/s\n",
                    static_cast<long long>(n), took, static_cast<double>(n) / took);
    }
    kafka::changelog log(kafka_test::log_options(topic));
    auto fresh = store("big") | strata::logged(log, batch_options());
    progress_listener l;
    const auto start = std::chrono::steady_clock::now();
    const auto p = fresh.restore(l);
    const double took = seconds_since(start);
    std::printf("kafka restore: %llu records in %.2f s = %.0f records/s\n",
                static_cast<unsigned long long>(p.records_done), took, static_cast<double>(p.records_done) / took);

    REQUIRE(p.records_done == static_cast<std::uint64_t>(n));
    REQUIRE(p.to == static_cast<strata::offset_t>(n));
    REQUIRE(l.end.records_done == static_cast<std::uint64_t>(n));
    REQUIRE(l.batches == static_cast<std::uint64_t>(n) / 50'000);
    REQUIRE(l.monotonic);
    REQUIRE(fresh.base().size() == static_cast<std::size_t>(n));
    REQUIRE(fresh.get(0) == value);
    REQUIRE(fresh.get(n - 1) == value);
    REQUIRE_FALSE(fresh.get(n).has_value());
}
