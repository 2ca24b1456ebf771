// The meter: operation counts and latencies, records written, cache hit
// ratio and restore progress, as Prometheus text.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <string>

namespace {

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

bool has_line(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("every operation is counted by store and operation", "[metered]") {
    strata::metrics::registry reg;
    auto s = store_t("orders") | strata::metered(reg);
    s.put(1, "a");
    s.put(2, "b");
    s.put(3, "c");
    REQUIRE(s.get(1).has_value());
    REQUIRE_FALSE(s.get(9).has_value());
    REQUIRE(s.erase(2));
    s.apply(strata::put_op<std::int64_t, std::string>{4, "d"});
    REQUIRE(ranges::distance(s.range(1, 3)) == 2);
    REQUIRE(ranges::distance(s.all()) == 3);

    const std::string text = strata::metrics::to_prometheus(reg);
    CHECK(has_line(text, R"(strata_store_operations_total{op="put",store="orders"} 3)"));
    CHECK(has_line(text, R"(strata_store_operations_total{op="get",store="orders"} 2)"));
    CHECK(has_line(text, R"(strata_store_operations_total{op="erase",store="orders"} 1)"));
    CHECK(has_line(text, R"(strata_store_operations_total{op="apply",store="orders"} 1)"));
    CHECK(has_line(text, R"(strata_store_operations_total{op="range",store="orders"} 1)"));
    CHECK(has_line(text, R"(strata_store_operations_total{op="all",store="orders"} 1)"));
    CHECK(has_line(text, "# TYPE strata_store_operation_seconds histogram"));
}

TEST_CASE("one point operation in time_one_in is timed, every flush and restore", "[metered]") {
    strata::metrics::registry reg;
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::metered(reg, {.time_one_in = 4});
    for (std::int64_t k = 0; k < 10; ++k) s.put(k, "v");
    s.flush();
    s.flush();
    const auto& puts = reg.histogram_for("strata_store_operation_seconds", "", {{"store", "s"}, {"op", "put"}});
    REQUIRE(puts.count() == 3);  // the 1st, 5th and 9th
    REQUIRE(puts.sum() > 0.0);   // real latencies
    REQUIRE(reg.counter_for("strata_store_operations_total", "", {{"store", "s"}, {"op", "put"}}).value() == 10);
    REQUIRE(reg.histogram_for("strata_store_operation_seconds", "", {{"store", "s"}, {"op", "flush"}}).count() == 2);

    strata::metrics::registry every;
    auto t = store_t("t") | strata::metered(every, {.time_one_in = 1});
    for (std::int64_t k = 0; k < 5; ++k) t.put(k, "v");
    REQUIRE(every.histogram_for("strata_store_operation_seconds", "", {{"store", "t"}, {"op", "put"}}).count() == 5);

    strata::metrics::registry other;
    REQUIRE_THROWS_AS(store_t("u") | strata::metered(other, {.time_one_in = 0}), strata::usage_error);
}

TEST_CASE("records written and the cache hit ratio are published", "[metered][cached]") {
    strata::metrics::registry reg;
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached({.reads = strata::read_caching::on}) |
             strata::metered(reg);
    for (int i = 0; i < 10; ++i) s.put(1, std::to_string(i));
    s.put(2, "x");
    REQUIRE(s.get(1).has_value());  // hit
    REQUIRE(*s.find(2) == "x");  // hit: find is a read like get
    REQUIRE_FALSE(s.get(3).has_value());  // miss
    s.flush();

    const std::string text = strata::metrics::to_prometheus(reg);
    CHECK(has_line(text, R"(strata_changelog_records_total{store="s"} 2)"));
    CHECK(has_line(text, R"(strata_cache_hits_total{store="s"} 2)"));
    CHECK(has_line(text, R"(strata_cache_misses_total{store="s"} 1)"));
    CHECK(text.find(R"(strata_cache_hit_ratio{store="s"} 0.6666)") != std::string::npos);
    CHECK(log.records().size() == 2);
}

TEST_CASE("restore progress and rate are published and passed on", "[metered][restore]") {
    strata::memory_log log;
    {
        auto s = store_t("s") | strata::logged(log);
        for (std::int64_t k = 0; k < 25'000; ++k) s.put(k, "v");
    }
    strata::metrics::registry reg;
    auto s = store_t("s") | strata::logged(log) | strata::cached() | strata::metered(reg);
    struct counting_listener {
        int starts = 0, batches = 0, ends = 0;
        void on_restore_start(const strata::restore_progress&) { ++starts; }
        void on_batch_restored(const strata::restore_progress&) { ++batches; }
        void on_restore_end(const strata::restore_progress&) { ++ends; }
    } l;
    const auto p = s.restore(l);
    REQUIRE(p.records_done == 25'000);
    REQUIRE(l.starts == 1);
    REQUIRE(l.batches == 3);  // 10'000 per batch by default
    REQUIRE(l.ends == 1);
    REQUIRE(reg.gauge_for("strata_restore_records_restored", "", {{"store", "s"}}).value() == 25'000);
    REQUIRE(reg.gauge_for("strata_restore_records_total", "", {{"store", "s"}}).value() == 25'000);
    REQUIRE(reg.gauge_for("strata_restore_records_per_second", "", {{"store", "s"}}).value() > 0);
    REQUIRE(reg.histogram_for("strata_store_operation_seconds", "", {{"store", "s"}, {"op", "restore"}}).count() == 1);
}

TEST_CASE("records written by an eviction during a read are counted", "[metered][cached]") {
    strata::metrics::registry reg;
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached({.max_bytes = 2000, .reads = strata::read_caching::on}) |
             strata::metered(reg);
    for (std::int64_t k = 0; k < 10; ++k) s.put(k, std::string(100, 'x'));
    for (std::int64_t k = 100; k < 140; ++k) REQUIRE_FALSE(s.get(k).has_value());  // misses evict dirty puts
    REQUIRE(log.records().size() > 0);
    const auto written = strata::layer<strata::logged_store>(s).records_written();
    REQUIRE(reg.counter_for("strata_changelog_records_total", "", {{"store", "s"}}).value() == written);
}

TEST_CASE("reads the cache does not answer count as neither hits nor misses", "[metered][cached]") {
    strata::metrics::registry reg;
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached() | strata::metered(reg);  // in memory: reads bypass
    s.put(1, "x");
    REQUIRE(s.get(1).has_value());
    REQUIRE_FALSE(s.get(2).has_value());
    REQUIRE(reg.counter_for("strata_cache_hits_total", "", {{"store", "s"}}).value() == 0);
    REQUIRE(reg.counter_for("strata_cache_misses_total", "", {{"store", "s"}}).value() == 0);
    REQUIRE(reg.counter_for("strata_store_operations_total", "", {{"store", "s"}, {"op", "get"}}).value() == 2);
}
