// Window stores: reads, retention, Kafka Streams' changelog bytes, restore,
// the decorators over them, and windowed aggregation with grace.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/window_store.hpp>
#include <strata/stores/windowed_aggregation.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using store_t = strata::window_store<std::string, std::int64_t>;
using put = strata::window_put<std::string, std::int64_t>;
using erase = strata::window_erase<std::string>;
using entry = strata::window_entry<std::string, std::int64_t>;

strata::byte_buffer hex(std::initializer_list<int> bytes) {
    strata::byte_buffer out;
    for (int b : bytes) out.push_back(static_cast<std::byte>(b));
    return out;
}

std::vector<entry> contents(const store_t& s) { return s.all(); }

}  // namespace

TEST_CASE("a window store keeps values per key and window, read by key and time range", "[window_store]") {
    store_t s("w", {.window_size = 10ms, .retention = 100ms});
    s.apply(put{{"b", 10}, 2});
    s.apply(put{{"a", 10}, 1});
    s.apply(put{{"a", 0}, 3});
    s.apply(put{{"a", 20}, 4});
    s.apply(put{{"a", 10}, 5});  // overwrites

    REQUIRE(s.fetch("a", 10) == 5);
    REQUIRE_FALSE(s.fetch("a", 30));
    REQUIRE_FALSE(s.fetch("c", 10));
    REQUIRE(s.fetch("a", 0, 10) == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 3}, {10, 5}});
    REQUIRE(s.fetch("a", 5, 25) == std::vector<std::pair<std::int64_t, std::int64_t>>{{10, 5}, {20, 4}});
    REQUIRE(s.fetch("a", 25, 5).empty());
    REQUIRE(s.fetch_all(10, 10) == std::vector<entry>{{{"a", 10}, 5}, {{"b", 10}, 2}});
    REQUIRE(s.size() == 4);

    s.apply(erase{{"a", 10}});
    s.apply(erase{{"b", 10}});
    s.apply(erase{{"z", 10}});  // absent: nothing happens
    REQUIRE(contents(s) == std::vector<entry>{{{"a", 0}, 3}, {{"a", 20}, 4}});
}

TEST_CASE("a window store drops windows past retention and ignores puts into them", "[window_store]") {
    store_t s("w", {.window_size = 10ms, .retention = 30ms});
    REQUIRE_FALSE(s.stream_time());
    s.apply(put{{"k", 0}, 1});
    s.apply(put{{"k", 10}, 2});
    s.apply(put{{"k", 20}, 3});
    REQUIRE(s.size() == 3);
    REQUIRE(s.stream_time() == 20);
    // Kafka Streams' rule: a window starting at or before stream time -
    // retention has expired. At 30, that is the window at 0.
    s.apply(put{{"other", 30}, 4});
    REQUIRE_FALSE(s.fetch("k", 0));
    REQUIRE(s.expired(0));
    REQUIRE_FALSE(s.expired(1));
    s.apply(put{{"k", 0}, 9});  // too late: ignored
    REQUIRE_FALSE(s.fetch("k", 0));
    // An erase moves stream time too, as Kafka Streams' put of null does.
    s.apply(erase{{"nobody", 45}});
    REQUIRE(s.stream_time() == 45);
    REQUIRE(contents(s) == std::vector<entry>{{{"k", 20}, 3}, {{"other", 30}, 4}});
}

TEST_CASE("a window store refuses a window size or retention that cannot work", "[window_store]") {
    REQUIRE_THROWS_WITH((store_t("w", {.window_size = 0ms, .retention = 10ms})),
                        Catch::Contains("window_size must be positive"));
    REQUIRE_THROWS_WITH((store_t("w", {.window_size = 10ms, .retention = 5ms})),
                        Catch::Contains("must be at least the window size"));
}

TEST_CASE("a logged window store writes Kafka Streams' window store records", "[window_store]") {
    strata::memory_log log;
    auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
    s.apply(put{{"k", 0x0102}, 7});
    s.apply(erase{{"k", 0x0102}});
    s.apply(put{{"k", 0x0200}, 1});
    s.apply(put{{"k", 0}, 5});  // expired: the store ignores it, and nothing is logged
    s.flush();

    const auto& r = log.records();
    REQUIRE(r.size() == 3);
    // key bytes, start (8, big-endian), sequence number 0 (4)
    REQUIRE(r[0].key == hex({'k', 0, 0, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0}));
    REQUIRE(r[0].value == hex({0, 0, 0, 0, 0, 0, 0, 7}));
    REQUIRE(r[1].key == r[0].key);
    REQUIRE(r[1].is_tombstone());
    REQUIRE(r[2].key == hex({'k', 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0}));
}

TEST_CASE("a window store restores from its changelog, without what has expired", "[window_store]") {
    strata::memory_log log;
    {
        auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
        s.apply(put{{"a", 0}, 1});
        s.apply(put{{"b", 10}, 2});
        s.apply(put{{"a", 20}, 3});
        s.apply(erase{{"b", 10}});
        s.apply(put{{"c", 20}, 4});
        s.flush();
    }
    {
        auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
        s.restore();
        REQUIRE(strata::innermost(s).all() ==
                std::vector<entry>{{{"a", 0}, 1}, {{"a", 20}, 3}, {{"c", 20}, 4}});
    }
    // A later window in the log: the window at 0 has expired by then, and
    // the restored store does not hold it (nor would Kafka Streams').
    {
        auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
        s.apply(put{{"a", 40}, 5});
        s.flush();
    }
    auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
    s.restore();
    REQUIRE(strata::innermost(s).all() == std::vector<entry>{{{"a", 20}, 3}, {{"c", 20}, 4}, {{"a", 40}, 5}});
}

TEST_CASE("a window store restore refuses a record key shorter than the window suffix", "[window_store]") {
    strata::memory_log log;
    const auto short_key = hex({'k', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});  // 11 bytes: no room for 12 of suffix
    const auto value = hex({0, 0, 0, 0, 0, 0, 0, 1});
    log.append(strata::record_view{short_key, strata::bytes_view(value)});
    log.flush();
    auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
    REQUIRE_THROWS_WITH(s.restore(), Catch::Contains("window store key"));
}

TEST_CASE("cached and metered over a logged window store: one record per window per flush", "[window_store]") {
    strata::memory_log log;
    strata::metrics::registry reg;
    auto s = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log) | strata::cached() |
             strata::metered(reg);
    for (std::int64_t i = 1; i <= 100; ++i) s.apply(put{{"hot", 10}, i});
    s.apply(put{{"cold", 0}, 1});
    REQUIRE(strata::query(s, [](const store_t& w) { return w.fetch("hot", 10); }) == 100);  // written through
    REQUIRE(log.records().empty());
    s.flush();
    REQUIRE(log.records().size() == 2);
    REQUIRE(reg.counter_for("strata_store_operations_total", "", {{"store", "w"}, {"op", "apply"}}).value() == 101);

    auto restored = store_t("w", {.window_size = 10ms, .retention = 30ms}) | strata::logged(log);
    restored.restore();
    REQUIRE(strata::innermost(restored).all() == std::vector<entry>{{{"cold", 0}, 1}, {{"hot", 10}, 100}});
}

TEST_CASE("time windows: tumbling puts a record in one window, hopping in size / advance", "[window_store]") {
    const auto tumbling = strata::time_windows::tumbling(10ms);
    REQUIRE(tumbling.starts_for(0) == std::vector<std::int64_t>{0});
    REQUIRE(tumbling.starts_for(19) == std::vector<std::int64_t>{10});
    REQUIRE(tumbling.starts_for(-1).empty());
    const auto hopping = strata::time_windows::hopping(10ms, 5ms);
    REQUIRE(hopping.starts_for(12) == std::vector<std::int64_t>{5, 10});
    REQUIRE(hopping.starts_for(3) == std::vector<std::int64_t>{0});  // no window starts before 0
    REQUIRE(strata::time_windows::hopping(9ms, 3ms).starts_for(10) == std::vector<std::int64_t>{3, 6, 9});
    REQUIRE_THROWS_WITH(strata::time_windows::hopping(10ms, 11ms), Catch::Contains("at most the window size"));
    REQUIRE_THROWS_WITH(strata::time_windows::hopping(10ms, 0ms), Catch::Contains("advance must be positive"));
    REQUIRE_THROWS_WITH(strata::time_windows::tumbling(10ms, -1ms), Catch::Contains("grace"));
}

TEST_CASE("a windowed count drops records for windows closed past their grace", "[window_store]") {
    strata::memory_log log;
    const auto windows = strata::time_windows::hopping(10ms, 5ms, 5ms);
    auto s = store_t("counts", windows.store_options()) | strata::logged(log);
    strata::window_aggregator counter(windows);
    const auto add_one = [](std::int64_t n) { return n + 1; };

    REQUIRE(counter.aggregate(s, "k", 12, 0, add_one).updated == 2);  // windows 5 and 10
    REQUIRE(counter.aggregate(s, "k", 14, 0, add_one).updated == 2);
    REQUIRE(counter.aggregate(s, "k", 21, 0, add_one).updated == 2);  // windows 15 and 20; stream time 21
    // At stream time 21 the windows that end at or before 21 - grace = 16
    // have closed: window 5 (ends at 15), not window 10 (ends at 20).
    auto late = counter.aggregate(s, "k", 13, 0, add_one);
    REQUIRE(late.updated == 1);
    REQUIRE(late.late == 1);
    REQUIRE(counter.late_records() == 1);
    const auto& w = strata::innermost(s);
    // Window 5 has left the store too: its start is 15 (the retention, size
    // + grace) behind the latest start, 20.
    REQUIRE_FALSE(w.fetch("k", 5));
    REQUIRE(w.fetch("k", 10) == 3);
    REQUIRE(w.fetch("k", 15) == 1);
    REQUIRE(w.fetch("k", 20) == 1);

    // A new aggregator over the restored store starts from the store's
    // stream time, so what had closed stays closed.
    s.flush();
    auto restored = store_t("counts", windows.store_options()) | strata::logged(log);
    restored.restore();
    strata::window_aggregator again(windows);
    REQUIRE(again.aggregate(restored, "k", 4, 0, add_one).late == 1);
    REQUIRE(strata::innermost(restored).fetch("k", 0) == std::nullopt);
}

TEST_CASE("a windowed aggregation refuses a store that would expire open windows", "[window_store]") {
    const auto windows = strata::time_windows::tumbling(10ms, 20ms);
    store_t s("w", {.window_size = 10ms, .retention = 10ms});
    strata::window_aggregator counter(windows);
    REQUIRE_THROWS_WITH(counter.aggregate(s, "k", 1, 0, [](std::int64_t n) { return n + 1; }),
                        Catch::Contains("less than window size + grace"));
}
