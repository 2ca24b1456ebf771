// Store kinds inside the runtime's tasks, against the real broker: a
// windowed count and a versioned store, logged under `t.logged()`. Their
// changelogs get the configs of their kind (window: compact,delete with the
// retention plus a day; versioned: min.compaction.lag.ms of the history
// plus a day), and another instance on an empty state directory restores
// both and answers windowed and as-of queries as the first did.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/versioned_store.hpp>
#include <strata/stores/window_store.hpp>
#include <strata/stores/windowed_aggregation.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace runtime_test;

namespace {

// Every record's time: base + 1 s per record. Recent: the input topic
// deletes by time, and records older than its retention (a week) vanish
// at the broker's next retention check, before the application reads them.
// A multiple of the window size: the first window starts at base.
constexpr std::int64_t window_ms = 10'000;
const std::int64_t base_ms =
    (std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count() -
     3'600'000) / window_ms * window_ms;

strata::runtime::application_options options(const std::string& app, const std::string& input,
                                             const std::filesystem::path& state, const std::string& instance) {
    strata::runtime::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {input};
    c.state_dir = state;
    c.instance_id = instance;
    c.commit_interval = std::chrono::milliseconds(200);
    c.session_timeout = std::chrono::milliseconds(6000);
    return c;
}

/// Counts records per key and 10 s window, and keeps each key's amounts as versions at their times.
struct kinds_processor {
    strata::window_aggregator counts{strata::time_windows::tumbling(std::chrono::milliseconds(window_ms))};

    void operator()(auto& ctx, const auto& r) {
        counts.aggregate(ctx.template store<0>(), r.key, r.timestamp, std::int64_t{0},
                         [](std::int64_t n) { return n + 1; });
        ctx.template store<1>().apply(strata::versioned_put<std::string, std::int64_t>{r.key, *r.value, r.timestamp});
    }
};

auto kinds_stores() {
    return [](strata::runtime::task_context& t) {
        return std::tuple(strata::window_store<std::string, std::int64_t>(
                              "per-10s", {.window_size = std::chrono::milliseconds(window_ms),
                                          .retention = std::chrono::hours(1)}) |
                              t.logged(),
                          strata::versioned_store<std::string, std::int64_t>(
                              "amounts", {.history_retention = std::chrono::hours(1)}) |
                              t.logged());
    };
}

}  // namespace

TEST_CASE("runtime: window and versioned stores in tasks: changelogs of their kind, restored elsewhere, queried",
          "[kafka][runtime][kinds]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 10, records = 600;
    const std::string app = kafka_test::unique_name("kinds");
    const std::string input = kafka_test::make_topic("kinds-in", partitions, {{"cleanup.policy", "delete"}});

    // Records at known times: key k<i % 10>, amount i, time base + i s.
    strata::kafka::producer p({kafka_test::bootstrap(), std::nullopt, {{"linger.ms", "5"}}});
    auto& tracker = p.new_tracker();
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get(), input.c_str(), nullptr));
    partitioned_input written(partitions);
    std::map<std::pair<std::string, std::int64_t>, std::int64_t> windows;  // (key, start) -> count
    std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> versions;  // key -> (time, amount)
    for (std::int64_t i = 0; i < records; ++i) {
        const std::string key = key_of(i, keys);
        const std::int64_t time = base_ms + i * 1000;
        const strata::byte_buffer v = strata::encode(i);
        const std::int32_t part = partition_of(key, partitions);
        p.produce(t.get(), part, strata::as_bytes(key), strata::bytes_view(v), tracker, time);
        written[static_cast<std::size_t>(part)].push_back({key, i});
        ++windows[{key, time - time % window_ms}];
        versions[key].emplace_back(time, i);
    }
    p.wait(tracker);
    REQUIRE_FALSE(tracker.has_failed());

    // The first instance processes everything.
    {
        auto first = strata::runtime::make_application<std::string, std::int64_t>(
            options(app, input, dir / "first", "first"), kinds_stores(), kinds_processor{});
        running run(first);
        REQUIRE(await_committed(app, input, written, 60s));
        run.stop();
    }

    // The changelogs are made as Kafka Streams makes them for these kinds.
    strata::kafka::topic_options o;
    o.bootstrap_servers = kafka_test::bootstrap();
    const std::string window_log = strata::kafka::changelog_topic_name(app, "per-10s");
    const std::string versioned_log = strata::kafka::changelog_topic_name(app, "amounts");
    CHECK(strata::kafka::describe_topic_config(window_log, "cleanup.policy", o) == "compact,delete");
    CHECK(strata::kafka::describe_topic_config(window_log, "retention.ms", o) == std::to_string(3600'000 + 86'400'000));
    CHECK(strata::kafka::describe_topic_config(versioned_log, "cleanup.policy", o) == "compact");
    CHECK(strata::kafka::describe_topic_config(versioned_log, "min.compaction.lag.ms", o) ==
          std::to_string(3600'000 + 86'400'000));

    // A second instance on an empty state directory restores both stores and answers.
    auto second = strata::runtime::make_application<std::string, std::int64_t>(
        options(app, input, dir / "second", "second"), kinds_stores(), kinds_processor{});
    running run(second);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    std::size_t answered = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        answered = 0;
        for (std::int32_t part = 0; part < partitions; ++part)
            answered += second.query<0>(part, [](const auto& s) { return strata::query(s, [](const auto& w) { return w.size(); }); }).ok() ? 1 : 0;
        if (answered == partitions) break;
        std::this_thread::sleep_for(50ms);
    }
    REQUIRE(answered == partitions);
    for (int k = 0; k < keys; ++k) {
        const std::string key = key_of(k, keys);
        INFO(key);
        const std::int32_t part = partition_of(key, partitions);
        // Every window of the key, by a range fetch over the whole time.
        const auto got = second.query<0>(part, [&](const auto& s) {
            return strata::query(s, [&](const auto& w) { return w.fetch(key, base_ms, base_ms + records * 1000); });
        });
        REQUIRE(got.ok());
        std::vector<std::pair<std::int64_t, std::int64_t>> expected;
        for (const auto& [kw, n] : windows)
            if (kw.first == key) expected.emplace_back(kw.second, n);
        CHECK(*got == expected);
        // As of the time of each of its versions, and just before the first.
        for (const auto& [time, amount] : versions[key]) {
            const auto as_of = second.query<1>(part, [&](const auto& s) {
                return strata::query(s, [&](const auto& v) { return v.get_as_of(key, time + 500); });
            });
            REQUIRE(as_of.ok());
            REQUIRE(as_of->has_value());
            CHECK((*as_of)->value == amount);
            CHECK((*as_of)->valid_from == time);
        }
        const auto before = second.query<1>(part, [&](const auto& s) {
            return strata::query(s, [&](const auto& v) { return v.get_as_of(key, versions[key].front().first - 1); });
        });
        REQUIRE(before.ok());
        CHECK_FALSE(before->has_value());
    }
    run.stop();
}
