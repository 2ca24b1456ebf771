// Session stores: reads, retention, Kafka Streams' changelog bytes, restore,
// and session aggregation that merges sessions and drops late records.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/session_store.hpp>
#include <strata/stores/windowed_aggregation.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using store_t = strata::session_store<std::string, std::int64_t>;
using put = strata::session_put<std::string, std::int64_t>;
using erase = strata::session_erase<std::string>;
using entry = strata::session_entry<std::string, std::int64_t>;

strata::byte_buffer hex(std::initializer_list<int> bytes) {
    strata::byte_buffer out;
    for (int b : bytes) out.push_back(static_cast<std::byte>(b));
    return out;
}

}  // namespace

TEST_CASE("a session store finds a key's sessions that overlap a span", "[session_store]") {
    store_t s("s", {.retention = 1000ms});
    s.apply(put{{"a", 0, 5}, 1});
    s.apply(put{{"a", 20, 30}, 2});
    s.apply(put{{"a", 40, 40}, 3});
    s.apply(put{{"b", 0, 50}, 4});

    REQUIRE(s.fetch_session({"a", 20, 30}) == 2);
    REQUIRE_FALSE(s.fetch_session({"a", 20, 31}));
    // Sessions ending at or after 5 and starting at or before 20.
    REQUIRE(s.find_sessions("a", 5, 20) == std::vector<entry>{{{"a", 0, 5}, 1}, {{"a", 20, 30}, 2}});
    REQUIRE(s.find_sessions("a", 6, 39) == std::vector<entry>{{{"a", 20, 30}, 2}});
    REQUIRE(s.fetch("b") == std::vector<entry>{{{"b", 0, 50}, 4}});
    REQUIRE(s.size() == 4);

    s.apply(erase{{"a", 20, 30}});
    REQUIRE(s.fetch("a") == std::vector<entry>{{{"a", 0, 5}, 1}, {{"a", 40, 40}, 3}});
    REQUIRE_THROWS_WITH(s.apply(put{{"a", 9, 8}, 1}), Catch::Contains("ends (8) before it starts (9)"));
}

TEST_CASE("a session store drops sessions that ended past retention", "[session_store]") {
    store_t s("s", {.retention = 30ms});
    s.apply(put{{"k", 0, 10}, 1});
    s.apply(put{{"k", 15, 20}, 2});
    s.apply(put{{"other", 35, 40}, 3});  // stream time 40: ends at or before 10 expired
    REQUIRE(s.expired(10));
    REQUIRE(s.fetch("k") == std::vector<entry>{{{"k", 15, 20}, 2}});
    s.apply(put{{"k", 0, 10}, 9});  // ignored
    REQUIRE(s.fetch("k").size() == 1);
    REQUIRE_THROWS_WITH((store_t("s", {.retention = 0ms})), Catch::Contains("retention must be positive"));
}

TEST_CASE("a logged session store writes Kafka Streams' session store records and restores them", "[session_store]") {
    strata::memory_log log;
    {
        auto s = store_t("s", {.retention = 100ms}) | strata::logged(log);
        s.apply(put{{"k", 0x10, 0x0200}, 7});
        s.apply(erase{{"k", 0x10, 0x0200}});
        s.apply(put{{"k", 1, 2}, 3});  // ended 510 before stream time: ignored, not logged
        s.flush();
    }
    const auto& r = log.records();
    REQUIRE(r.size() == 2);
    // key bytes, end (8), start (8), big-endian
    REQUIRE(r[0].key == hex({'k', 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x10}));
    REQUIRE(r[0].value == hex({0, 0, 0, 0, 0, 0, 0, 7}));
    REQUIRE(r[1].is_tombstone());

    auto s = store_t("s", {.retention = 100ms}) | strata::logged(log);
    s.restore();
    REQUIRE(strata::innermost(s).all().empty());
    REQUIRE(strata::innermost(s).stream_time() == 0x200);

    strata::memory_log corrupt;
    const auto backwards = hex({'k', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2});  // ends at 1, starts at 2
    const auto value = hex({0, 0, 0, 0, 0, 0, 0, 1});
    corrupt.append(strata::record_view{backwards, strata::bytes_view(value)});
    corrupt.flush();
    auto bad = store_t("s", {.retention = 100ms}) | strata::logged(corrupt);
    REQUIRE_THROWS_WITH(bad.restore(), Catch::Contains("ends (1) before it starts (2)"));
}

TEST_CASE("a session count merges the sessions a record bridges, and logs the merge", "[session_store]") {
    strata::memory_log log;
    const auto windows = strata::session_windows::with_gap(10ms);
    // Kept longer than gap + grace (store_options()), which would drop the
    // session [0, 5] once stream time reaches 15, as Kafka Streams' would.
    auto s = store_t("sessions", {.retention = 1000ms}) | strata::logged(log);
    strata::session_aggregator counter(windows);
    const auto add_one = [](std::int64_t n) { return n + 1; };
    const auto sum = [](std::int64_t a, std::int64_t b) { return a + b; };

    REQUIRE(counter.aggregate(s, "k", 0, 0, add_one, sum) == strata::session_window<std::string>{"k", 0, 0});
    REQUIRE(counter.aggregate(s, "k", 5, 0, add_one, sum) == strata::session_window<std::string>{"k", 0, 5});
    REQUIRE(counter.aggregate(s, "k", 25, 0, add_one, sum) == strata::session_window<std::string>{"k", 25, 25});
    REQUIRE(strata::innermost(s).fetch("k") == std::vector<entry>{{{"k", 0, 5}, 2}, {{"k", 25, 25}, 1}});
    // 15 is within 10 of both: one session from 0 to 25 holding all four.
    REQUIRE(counter.aggregate(s, "k", 15, 0, add_one, sum) == strata::session_window<std::string>{"k", 0, 25});
    REQUIRE(strata::innermost(s).fetch("k") == std::vector<entry>{{{"k", 0, 25}, 4}});
    s.flush();

    // The changelog replays to the same sessions: the merged ones are tombstoned.
    auto restored = store_t("sessions", {.retention = 1000ms}) | strata::logged(log);
    restored.restore();
    REQUIRE(strata::innermost(restored).all() == std::vector<entry>{{{"k", 0, 25}, 4}});
}

TEST_CASE("a session aggregation drops a record whose session has closed", "[session_store]") {
    const auto windows = strata::session_windows::with_gap(10ms, 5ms);
    store_t s("sessions", {.retention = 1000ms});
    strata::session_aggregator counter(windows);
    const auto add_one = [](std::int64_t n) { return n + 1; };
    const auto sum = [](std::int64_t a, std::int64_t b) { return a + b; };
    REQUIRE(counter.aggregate(s, "k", 100, 0, add_one, sum));
    // Closed: sessions that end before stream time - grace - gap = 85.
    REQUIRE(counter.aggregate(s, "j", 85, 0, add_one, sum));
    REQUIRE_FALSE(counter.aggregate(s, "x", 84, 0, add_one, sum));
    REQUIRE(counter.late_records() == 1);
    REQUIRE(strata::innermost(s).fetch("x").empty());
    // A late record that joins a live session is not late: the merged session ends at 85.
    REQUIRE(counter.aggregate(s, "j", 80, 0, add_one, sum) == strata::session_window<std::string>{"j", 80, 85});
    REQUIRE_THROWS_WITH(strata::session_windows::with_gap(0ms), Catch::Contains("gap must be positive"));
}
