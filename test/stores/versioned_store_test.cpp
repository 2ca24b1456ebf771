// Versioned key-value stores: versions, reads as of a time (one key and a
// range of keys), history retention, Kafka Streams' changelog records (the
// version's time as the record's timestamp) and restore.

#include <catch2/catch.hpp>

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/versioned_store.hpp>

#include <support/temp_dir.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using store_t = strata::versioned_store<std::string, std::int64_t>;
using put = strata::versioned_put<std::string, std::int64_t>;
using erase = strata::versioned_erase<std::string>;
using version = strata::versioned_value<std::int64_t>;

}  // namespace

TEST_CASE("a versioned store answers the latest value and the value as of a time", "[versioned_store]") {
    store_t s("v", {.history_retention = 100ms});
    s.apply(put{"k", 1, 10});
    s.apply(put{"k", 3, 30});
    s.apply(put{"k", 2, 20});  // out of order: goes into the history
    s.apply(erase{"k", 40});
    s.apply(put{"k", 5, 50});

    REQUIRE(s.get("k") == version{5, 50, std::nullopt});
    REQUIRE(s.get_as_of("k", 9) == std::nullopt);  // before the first version
    REQUIRE(s.get_as_of("k", 10) == version{1, 10, 20});
    REQUIRE(s.get_as_of("k", 25) == version{2, 20, 30});
    REQUIRE(s.get_as_of("k", 39) == version{3, 30, 40});
    REQUIRE(s.get_as_of("k", 45) == std::nullopt);  // deleted at 40
    REQUIRE(s.get_as_of("k", 1000) == version{5, 50, std::nullopt});
    REQUIRE(s.history("k") == std::vector<version>{{1, 10, 20}, {2, 20, 30}, {3, 30, 40}, {5, 50, std::nullopt}});

    s.apply(put{"k", 6, 50});  // the same time: replaces that version
    REQUIRE(s.get("k") == version{6, 50, std::nullopt});
    s.apply(erase{"k", 60});
    REQUIRE_FALSE(s.get("k"));
    REQUIRE(s.get_as_of("k", 55) == version{6, 50, 60});
}

TEST_CASE("a versioned store answers a range of keys as of a time", "[versioned_store]") {
    store_t s("v", {.history_retention = 1000ms});
    s.apply(put{"a", 1, 10});
    s.apply(put{"b", 2, 20});
    s.apply(put{"c", 3, 5});
    s.apply(put{"a", 4, 30});
    s.apply(erase{"c", 25});
    s.apply(put{"d", 9, 10});

    using row = std::pair<std::string, version>;
    REQUIRE(s.range_as_of("a", "c", 22) ==
            std::vector<row>{{"a", {1, 10, 30}}, {"b", {2, 20, std::nullopt}}, {"c", {3, 5, 25}}});
    REQUIRE(s.range_as_of("a", "c", 30) == std::vector<row>{{"a", {4, 30, std::nullopt}}, {"b", {2, 20, std::nullopt}}});
    REQUIRE(s.range_as_of("b", "d", 12) == std::vector<row>{{"c", {3, 5, 25}}, {"d", {9, 10, std::nullopt}}});
    REQUIRE(s.range_as_of("c", "a", 12).empty());
}

TEST_CASE("a versioned store keeps its history for the retention, and the latest version always",
          "[versioned_store]") {
    store_t s("v", {.history_retention = 100ms});
    s.apply(put{"k", 1, 0});
    s.apply(put{"k", 2, 50});
    s.apply(put{"old", 7, 10});
    s.apply(put{"k", 3, 200});  // stream time 200: reads back to 100 are answered
    REQUIRE(s.expired(99));
    REQUIRE_FALSE(s.expired(100));
    REQUIRE(s.get_as_of("k", 99) == std::nullopt);  // too far back to answer
    REQUIRE(s.get_as_of("k", 100) == version{2, 50, 200});
    // Version 0 can serve no version any more: dropped when k was written.
    REQUIRE(s.find_version("k", 0) == nullptr);
    REQUIRE(s.history("k") == std::vector<version>{{2, 50, 200}, {3, 200, std::nullopt}});
    // The latest version stays however old.
    REQUIRE(s.get("old") == version{7, 10, std::nullopt});
    REQUIRE(s.get_as_of("old", 150) == version{7, 10, std::nullopt});

    s.apply(put{"k", 9, 90});  // older than the history kept: ignored
    REQUIRE(s.find_version("k", 90) == nullptr);
    s.apply(erase{"gone", 150});
    REQUIRE_FALSE(s.get("gone"));
    REQUIRE_THROWS_WITH((store_t("v", {.history_retention = -1ms})), Catch::Contains("must not be negative"));
}

TEST_CASE("a logged versioned store writes each version with its time as the record's timestamp",
          "[versioned_store]") {
    strata::memory_log log;
    auto s = store_t("v", {.history_retention = 100ms}) | strata::logged(log);
    s.apply(put{"k", 1, 10});
    s.apply(erase{"k", 20});
    s.apply(put{"k", 3, 200});
    s.apply(put{"k", 4, 50});  // older than the history kept: not stored, not logged
    s.flush();

    const auto& r = log.records();
    REQUIRE(r.size() == 3);
    REQUIRE(r[0].key == strata::encode(std::string("k")));
    REQUIRE(r[0].value == strata::encode(std::int64_t{1}));
    REQUIRE(r[0].timestamp == 10);
    REQUIRE(r[1].is_tombstone());
    REQUIRE(r[1].timestamp == 20);
    REQUIRE(r[2].timestamp == 200);

    auto restored = store_t("v", {.history_retention = 100ms}) | strata::logged(log);
    restored.restore();
    const auto& v = strata::innermost(restored);
    REQUIRE(v.get("k") == version{3, 200, std::nullopt});
    REQUIRE(v.get_as_of("k", 150) == std::nullopt);  // before 200 there was the tombstone at 20
    REQUIRE(v.stream_time() == 200);
}

TEST_CASE("a versioned store restores its versions from a file changelog, and refuses a record without a time",
          "[versioned_store]") {
    test_support::temp_dir dir;
    {
        strata::file_log log(dir.path() / "log");
        auto s = store_t("v", {.history_retention = 1000ms}) | strata::logged(log) | strata::cached();
        for (std::int64_t t = 0; t < 100; ++t) s.apply(put{"k" + std::to_string(t % 7), t, t});
        s.flush();
    }
    strata::file_log log(dir.path() / "log");
    auto s = store_t("v", {.history_retention = 1000ms}) | strata::logged(log);
    s.restore();
    const auto& v = strata::innermost(s);
    REQUIRE(v.size() == 100);
    REQUIRE(v.get_as_of("k3", 50) == version{45, 45, 52});

    strata::memory_log untimed;
    const auto key = strata::encode(std::string("k"));
    const auto value = strata::encode(std::int64_t{1});
    untimed.append(strata::record_view{key, strata::bytes_view(value)});
    auto bad = store_t("v", {.history_retention = 1000ms}) | strata::logged(untimed);
    REQUIRE_THROWS_WITH(bad.restore(), Catch::Contains("has no timestamp"));
}
