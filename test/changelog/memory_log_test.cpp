#include <strata/changelog/memory_log.hpp>
#include <strata/core/concepts.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <ranges>
#include <string>
#include <vector>

using strata::memory_log;
using strata::record;
using strata::test::collect;
using strata::test::make_record;
using strata::test::str;

static_assert(strata::changelog<memory_log>);
static_assert(std::ranges::input_range<decltype(std::declval<memory_log&>().replay(0))>);

TEST_CASE("memory_log assigns consecutive offsets and replays records as appended") {
    memory_log log;
    CHECK(log.end_offset() == 0);
    CHECK(log.flush() == 0);

    const std::vector<record> in{make_record("a", "1"), make_record("b", std::nullopt),
                                 make_record("", ""), make_record("a", "2")};
    for (std::size_t i = 0; i < in.size(); ++i) {
        auto v = in[i].view();
        v.offset = 99;  // ignored: the log decides
        CHECK(log.append(v) == i);
    }
    CHECK(log.end_offset() == 4);
    CHECK(log.durable_offset() == 0);
    CHECK(log.flush() == 4);
    CHECK(log.durable_offset() == 4);

    const auto out = collect(log.replay(0));
    REQUIRE(out.size() == 4);
    for (std::size_t i = 0; i < out.size(); ++i) {
        CHECK(out[i].offset == i);
        CHECK(out[i].key == in[i].key);
        CHECK(out[i].value == in[i].value);
    }
    CHECK(out[1].is_tombstone());
    CHECK_FALSE(out[2].is_tombstone());
    CHECK(out[2].value->empty());
    CHECK(log.append_count() == 4);
    CHECK(log.flush_count() == 2);
    CHECK(log.records().size() == 4);
}

TEST_CASE("memory_log keeps each record's time") {
    memory_log log;
    auto r = make_record("a", "1");
    r.timestamp = 1'700'000'000'000;
    log.append(r.view());
    log.append(make_record("b", std::nullopt).view());
    const auto out = collect(log.replay(0));
    REQUIRE(out.size() == 2);
    CHECK(out[0].timestamp == 1'700'000'000'000);
    CHECK(out[1].timestamp == strata::no_timestamp);
}

TEST_CASE("memory_log replays from any offset, including unflushed records") {
    memory_log log;
    for (int i = 0; i < 10; ++i) log.append(make_record("k" + std::to_string(i), "v").view());
    for (strata::offset_t from = 0; from <= 12; ++from) {
        const auto out = collect(log.replay(from));
        CHECK(out.size() == (from < 10 ? 10 - from : 0));
        if (!out.empty()) CHECK(out.front().offset == from);
    }
}

TEST_CASE("memory_log compaction keeps the latest record of each key at its offset") {
    memory_log log;
    log.append(make_record("a", "1").view());             // 0
    log.append(make_record("b", "1").view());             // 1
    log.append(make_record("a", "2").view());             // 2
    log.append(make_record("c", "1").view());             // 3
    log.append(make_record("b", std::nullopt).view());    // 4
    log.append(make_record("a", "3").view());             // 5
    CHECK(log.compact() == 3);
    CHECK(log.append_count() == 6);
    CHECK(log.end_offset() == 6);

    const auto out = collect(log.replay(0));
    REQUIRE(out.size() == 3);
    CHECK(out[0].offset == 3);
    CHECK(str(out[0].key) == "c");
    CHECK(out[1].offset == 4);
    CHECK(out[1].is_tombstone());
    CHECK(out[2].offset == 5);
    CHECK(str(*out[2].value) == "3");

    // A start offset inside a gap begins at the next surviving record.
    const auto tail = collect(log.replay(1));
    REQUIRE(tail.size() == 3);
    CHECK(tail.front().offset == 3);
    CHECK(collect(log.replay(5)).size() == 1);

    // Appends continue after the highest offset ever given out.
    CHECK(log.append(make_record("d", "1").view()) == 6);
}

TEST_CASE("memory_log can fail a flush and forget what was never flushed") {
    memory_log log;
    log.append(make_record("a", "1").view());
    CHECK(log.flush() == 1);
    log.append(make_record("b", "1").view());
    log.fail_next_flush();
    CHECK_THROWS_AS(log.flush(), strata::changelog_error);
    CHECK(log.durable_offset() == 1);

    log.drop_unflushed();
    CHECK(log.end_offset() == 1);
    const auto out = collect(log.replay(0));
    REQUIRE(out.size() == 1);
    CHECK(str(out[0].key) == "a");

    CHECK(log.append(make_record("c", "1").view()) == 1);
    CHECK(log.flush() == 2);  // the failure was one-shot
}

TEST_CASE("memory_log replay works with std::ranges algorithms and views") {
    memory_log log;
    for (int i = 0; i < 5; ++i) log.append(make_record(std::to_string(i), std::to_string(i * i)).view());
    auto offsets = log.replay(1) |
                   std::views::transform([](strata::record_view r) { return r.offset; });
    std::vector<strata::offset_t> got(offsets.begin(), offsets.end());
    CHECK(got == std::vector<strata::offset_t>{1, 2, 3, 4});
    CHECK(std::ranges::count_if(log.replay(0), [](strata::record_view r) {
              return strata::as_chars(*r.value).size() == 2;
          }) == 1);  // "16"
}
