// kafka::changelog against a real broker: records come back exactly as
// appended (tombstones, empty values, binary bytes), flush reports the
// durable end, replay starts anywhere and ends at the end offset taken
// when it began.

#include "kafka_test_support.hpp"

#include <strata/kafka/changelog.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace kafka = strata::kafka;

namespace {

std::vector<strata::record> replay_all(const kafka::changelog& log, strata::offset_t from = 0) {
    std::vector<strata::record> out;
    for (const strata::record_view r : log.replay(from)) out.emplace_back(r);
    return out;
}

/// The same replay read a batch at a time (next_batch), as restore_from reads it.
std::vector<strata::record> replay_batches(const kafka::changelog& log, strata::offset_t from = 0,
                                           std::size_t* batches = nullptr) {
    std::vector<strata::record> out;
    auto range = log.replay(from);
    for (;;) {
        const std::span<const strata::record_view> batch = range.next_batch();
        if (batch.empty()) break;
        if (batches != nullptr) ++*batches;
        for (const strata::record_view& r : batch) out.emplace_back(r);
    }
    REQUIRE(range.next_batch().empty());  // the end stays the end
    return out;
}

strata::record make(std::string_view k, std::optional<std::string_view> v) {
    strata::record r;
    r.key.assign(strata::as_bytes(k).begin(), strata::as_bytes(k).end());
    if (v) r.value.emplace(strata::as_bytes(*v).begin(), strata::as_bytes(*v).end());
    return r;
}

}  // namespace

TEST_CASE("kafka::changelog: round trip of values, empty values and tombstones", "[kafka][changelog]") {
    const std::string topic = kafka_test::make_topic("round-trip", 2);
    kafka::changelog log(kafka_test::log_options(topic, 1));
    REQUIRE(log.end_offset() == 0);
    REQUIRE(log.flush() == 0);
    REQUIRE(replay_all(log).empty());

    std::vector<strata::record> expected;
    expected.push_back(make("a", "1"));
    expected.push_back(make("b", ""));            // empty value: not a tombstone
    expected.push_back(make("a", std::nullopt));  // tombstone
    expected.push_back(make("", "empty key"));
    std::string binary;
    for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
    expected.push_back(make(binary, binary));
    for (int i = 0; i < 1000; ++i) expected.push_back(make("k" + std::to_string(i % 37), std::to_string(i)));
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i].offset = i;
        // A time of its own on most records, the earliest possible among
        // them (none in the future: Kafka 4 refuses records over an hour
        // ahead); the others get the time they were produced.
        if (i % 5 == 1) expected[i].timestamp = 1;
        else if (i % 5 == 2) expected[i].timestamp = 2;
        else if (i % 5 == 3) expected[i].timestamp = 1'700'000'000'000 + static_cast<std::int64_t>(i);
    }

    // librdkafka reads time 0 as "the time of sending": refused, not changed.
    auto at_zero = make("z", "0");
    at_zero.timestamp = 0;
    REQUIRE_THROWS_WITH(log.append(at_zero.view()), Catch::Contains("librdkafka takes 0"));

    const auto before = std::chrono::system_clock::now();
    for (const auto& r : expected) log.append(r.view());
    REQUIRE(log.flush() == expected.size());
    REQUIRE(log.end_offset() == expected.size());
    REQUIRE(log.acknowledged() == expected.size());

    const auto as_replayed = replay_all(log);
    auto all = as_replayed;
    REQUIRE(all.size() == expected.size());
    const auto ms = [](auto t) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    };
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (expected[i].timestamp != strata::no_timestamp) continue;
        // Kafka gives every record a time: the producer's clock when sent.
        REQUIRE(all[i].timestamp >= ms(before) - 1000);
        REQUIRE(all[i].timestamp <= ms(std::chrono::system_clock::now()) + 1000);
        all[i].timestamp = strata::no_timestamp;
    }
    REQUIRE(all == expected);
    REQUIRE(all[1].value.has_value());
    REQUIRE(all[1].value->empty());
    REQUIRE(all[2].is_tombstone());

    // From the middle, and from the end.
    const auto tail = replay_all(log, 600);
    REQUIRE(tail == std::vector<strata::record>(as_replayed.begin() + 600, as_replayed.end()));
    REQUIRE(replay_all(log, expected.size()).empty());

    // The other partition is untouched: append wrote to the explicit partition.
    kafka::changelog other(kafka_test::log_options(topic, 0));
    REQUIRE(other.end_offset() == 0);

    // A second writer continues the same partition.
    kafka::changelog again(kafka_test::log_options(topic, 1));
    REQUIRE(again.flush() == expected.size());
    auto last = make("z", "last");
    last.timestamp = 42;
    again.append(last.view());
    REQUIRE(again.flush() == expected.size() + 1);
    last.offset = expected.size();
    REQUIRE(replay_all(again, expected.size()).front() == last);
}

TEST_CASE("kafka::changelog: replay ends at the end offset taken when it began", "[kafka][changelog]") {
    const std::string topic = kafka_test::make_topic("replay-end");
    kafka::changelog log(kafka_test::log_options(topic));
    for (int i = 0; i < 100; ++i) log.append(make("k", std::to_string(i)).view());
    REQUIRE(log.flush() == 100);
    std::size_t seen = 0;
    auto range = log.replay(0);
    REQUIRE(range.end_offset() == 100);
    for (const strata::record_view r : range) {
        if (seen == 0) {  // appended while the replay runs: not part of it
            for (int i = 0; i < 50; ++i) log.append(make("late", std::to_string(i)).view());
            REQUIRE(log.flush() == 150);
        }
        REQUIRE(r.offset == seen);
        ++seen;
    }
    REQUIRE(seen == 100);
    REQUIRE(replay_all(log).size() == 150);
}

TEST_CASE("kafka::changelog: a missing topic or partition is refused at construction", "[kafka][changelog]") {
    auto o = kafka_test::log_options(kafka_test::unique_name("never-created"));
    o.connect_timeout = std::chrono::milliseconds(5000);
    REQUIRE_THROWS_WITH(kafka::changelog(o), Catch::Contains("is not available"));
    const std::string topic = kafka_test::make_topic("one-partition");
    REQUIRE_THROWS_WITH(kafka::changelog(kafka_test::log_options(topic, 3)), Catch::Contains("no partition 3"));
}

TEST_CASE("kafka::changelog: replays reuse the changelog's consumer, and may overlap", "[kafka][changelog]") {
    const std::string topic = kafka_test::make_topic("replays");
    kafka::changelog log(kafka_test::log_options(topic));
    for (int i = 0; i < 10; ++i) log.append(make("k" + std::to_string(i), "v").view());
    REQUIRE(log.flush() == 10);
    {
        auto first = log.replay(0);  // holds the changelog's consumer
        auto it = first.begin();
        REQUIRE((*it).offset == 0);
        REQUIRE(replay_all(log, 4).size() == 6);  // meanwhile: a consumer of its own
        REQUIRE(log.end_offset() == 10);          // offset lookups still work
        std::size_t n = 0;
        for (; it != first.end(); ++it) REQUIRE((*it).offset == n++);
        REQUIRE(n == 10);
    }
    // Released: the changelog's consumer replays again, from anywhere.
    REQUIRE(replay_all(log).size() == 10);
    REQUIRE(replay_all(log, 7).size() == 3);
    kafka::changelog moved(std::move(log));
    REQUIRE(replay_all(moved, 9).size() == 1);
}

TEST_CASE("kafka::changelog: changelogs of many partitions share one reader, and replay through it at once",
          "[kafka][changelog]") {
    constexpr std::int32_t partitions = 4;
    const std::string topic = kafka_test::make_topic("shared-reader", partitions);
    auto shared = std::make_shared<kafka::changelog_reader>(kafka_test::log_options(topic));
    std::vector<kafka::changelog> logs;
    for (std::int32_t p = 0; p < partitions; ++p) {
        auto o = kafka_test::log_options(topic, p);
        o.reader = shared;
        logs.emplace_back(std::move(o));
        for (int i = 0; i <= p; ++i) logs.back().append(make("p" + std::to_string(p) + "-" + std::to_string(i), "v").view());
        REQUIRE(logs.back().flush() == static_cast<strata::offset_t>(p + 1));
    }
    {
        // One replay of each partition open at once, read in turns: each
        // reads its own partition's records only.
        auto r0 = logs[0].replay(0), r1 = logs[1].replay(0), r2 = logs[2].replay(0), r3 = logs[3].replay(0);
        const std::array<kafka::changelog::replay_range*, partitions> open{&r0, &r1, &r2, &r3};
        REQUIRE(shared->open_replays() == partitions);
        std::vector<std::vector<std::string>> keys(partitions);
        for (bool more = true; more;) {
            more = false;
            for (std::int32_t p = 0; p < partitions; ++p) {
                for (const strata::record_view& r : open[static_cast<std::size_t>(p)]->next_batch()) {
                    keys[static_cast<std::size_t>(p)].emplace_back(reinterpret_cast<const char*>(r.key.data()), r.key.size());
                    more = true;
                }
            }
        }
        for (std::int32_t p = 0; p < partitions; ++p) {
            REQUIRE(keys[static_cast<std::size_t>(p)].size() == static_cast<std::size_t>(p + 1));
            for (const std::string& k : keys[static_cast<std::size_t>(p)]) REQUIRE(k.rfind("p" + std::to_string(p) + "-", 0) == 0);
        }
        // A second replay of a partition open already reads with a consumer of its own.
        REQUIRE(replay_all(logs[3]).size() == 4);
        REQUIRE(shared->open_replays() == partitions);
    }
    REQUIRE(shared->open_replays() == 0);
    REQUIRE(replay_all(logs[2], 1).size() == 2);
    REQUIRE(logs[1].end_offset() == 2);

    // The bounds of every partition asked at once, in the order asked: a
    // replay given them asks nothing and ends where they say.
    const std::vector<std::pair<std::string, std::int32_t>> asked{{topic, 3}, {topic, 0}, {topic, 2}};
    const std::vector<kafka::partition_bounds> b = shared->bounds(asked);
    REQUIRE(b.size() == 3);
    CHECK(b[0].start == 0);
    CHECK(b[0].end == 4);
    CHECK(b[1].end == 1);
    CHECK(b[2].end == 3);
    logs[2].append(make("late", "v").view());
    REQUIRE(logs[2].flush() == 4);
    std::size_t n = 0;
    for (const strata::record_view r : logs[2].replay(1, b[2])) n += r.offset < 3 ? 1 : 100;
    CHECK(n == 2);  // offsets 1 and 2: the late record is past the bounds it was given
    // The ends alone, asked at once, in the order asked.
    CHECK(kafka::list_end_offsets(shared->lookups(), asked, std::chrono::seconds(10)) ==
          std::vector<std::int64_t>{4, 1, 4});
    // A partition the topic does not have fails the lookup, naming it, once
    // the request timeout ran out (a new partition may take a moment to appear).
    auto brief = kafka_test::log_options(topic);
    brief.request_timeout = std::chrono::milliseconds(3000);  // [0] itself timed out at 1,500 ms in a loaded suite run
    kafka::changelog_reader impatient(brief);
    REQUIRE_THROWS_WITH(impatient.bounds({{topic, 0}, {topic, partitions}}), Catch::Contains("[4]"));

    // A reader made for read_committed serves no changelog that reads uncommitted.
    auto uncommitted = kafka_test::log_options(topic, 0);
    uncommitted.read_committed = !kafka_test::log_options(topic).read_committed;
    uncommitted.reader = shared;
    REQUIRE_THROWS_AS(kafka::changelog(uncommitted), strata::usage_error);
}

TEST_CASE("kafka::changelog: a follower reads records written after it began, as they come, and never waits",
          "[kafka][changelog]") {
    const std::string topic = kafka_test::make_topic("follow");
    kafka::changelog log(kafka_test::log_options(topic));
    for (int i = 0; i < 5; ++i) log.append(make("a" + std::to_string(i), "v").view());
    REQUIRE(log.flush() == 5);

    auto follower = log.follow(2);
    std::vector<strata::offset_t> seen;
    const auto take = [&](std::size_t until) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (seen.size() < until && std::chrono::steady_clock::now() < deadline) {
            const auto asked = std::chrono::steady_clock::now();
            if (!follower.poll()) {
                REQUIRE(std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(100));  // no wait
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            for (auto it = follower.begin(); it != follower.end(); ++it) seen.push_back((*it).offset);
        }
    };
    take(3);
    REQUIRE(seen == std::vector<strata::offset_t>{2, 3, 4});
    REQUIRE(follower.end_offset() >= 5);

    for (int i = 0; i < 3; ++i) log.append(make("b" + std::to_string(i), "v").view());
    REQUIRE(log.flush() == 8);
    take(6);
    REQUIRE(seen == std::vector<strata::offset_t>{2, 3, 4, 5, 6, 7});
    REQUIRE(follower.end_offset() == 8);
    REQUIRE_FALSE(follower.poll());  // nothing more: the sentinel, not the end
    REQUIRE(follower.end_offset() == 8);
}

TEST_CASE("kafka::changelog: a follower whose reader stops and resumes fetching reads every record once, in order",
          "[kafka][changelog]") {
    // The standbys' reader is paced this way (runtime/detail/follow_pacer.hpp):
    // a pause drops what was fetched and not yet read, and fetching resumes
    // from the offset each follower reads next.
    const std::string topic = kafka_test::make_topic("follow-paused");
    auto o = kafka_test::log_options(topic);
    auto shared = std::make_shared<kafka::changelog_reader>(o);
    o.reader = shared;
    kafka::changelog log(o);
    std::size_t written = 0;
    const auto write = [&](int n) {
        for (int i = 0; i < n; ++i) log.append(make("k" + std::to_string(written++ % 7), "v").view());
        REQUIRE(log.flush() == written);
    };
    const auto take = [](kafka::changelog::replay_range& follower, std::vector<strata::offset_t>& seen,
                         std::size_t until) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (seen.size() < until && std::chrono::steady_clock::now() < deadline) {
            if (!follower.poll()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            for (auto it = follower.begin(); it != follower.end(); ++it) seen.push_back((*it).offset);
        }
    };
    const auto at = [&](const kafka::changelog::replay_range& follower) {
        return std::vector<kafka::changelog_reader::position>{
            {topic, 0, static_cast<std::int64_t>(follower.next_offset())}};
    };
    const auto offsets = [](strata::offset_t from, strata::offset_t to) {
        std::vector<strata::offset_t> v;
        for (strata::offset_t i = from; i < to; ++i) v.push_back(i);
        return v;
    };
    {
        auto follower = log.follow(0);
        std::vector<strata::offset_t> seen;
        for (int round = 0; round < 4; ++round) {
            write(10);
            if (round % 2 == 0) {
                // Fetched but not read when the pause comes: dropped, and fetched again.
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
            } else {
                take(follower, seen, written);
            }
            shared->pause(at(follower));
            write(5);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            REQUIRE_FALSE(follower.poll());  // paused: nothing comes
            shared->resume_at(at(follower));
            take(follower, seen, written);
        }
        REQUIRE(seen == offsets(0, static_cast<strata::offset_t>(written)));
        shared->pause(at(follower));  // it ends paused, having read everything
    }
    // A new follower of the partition from an earlier offset (a standby
    // rebuilt from a checkpoint) and one from a later offset (a standby
    // that held more): each reads from its own offset on, not from where
    // the one before it stopped (librdkafka keeps that across the replays).
    for (const strata::offset_t from : {strata::offset_t{12}, static_cast<strata::offset_t>(written) - 3}) {
        auto follower = log.follow(from);
        std::vector<strata::offset_t> seen;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        REQUIRE_FALSE(follower.poll());  // still paused: the pause outlives a replay
        shared->pause(at(follower));
        shared->resume_at(at(follower));
        write(2);
        take(follower, seen, written - static_cast<std::size_t>(from));
        REQUIRE(seen == offsets(from, static_cast<strata::offset_t>(written)));
        shared->pause(at(follower));
    }
}

TEST_CASE("kafka::changelog: a replay read in batches hands over exactly the records of one read by iterator",
          "[kafka][changelog]") {
    const std::string topic = kafka_test::make_topic("replay-batches");
    auto o = kafka_test::log_options(topic);
    o.replay_batch = 64;  // many batches, so records cross batch boundaries
    kafka::changelog log(o);
    REQUIRE(replay_batches(log).empty());

    std::vector<strata::record> expected;
    for (int i = 0; i < 2000; ++i) {
        const std::string k = "k" + std::to_string(i % 101);
        if (i % 13 == 0) expected.push_back(make(k, std::nullopt));
        else if (i % 17 == 0) expected.push_back(make(k, ""));
        else expected.push_back(make(k, std::string(static_cast<std::size_t>(i % 50), 'x') + std::to_string(i)));
        expected.back().offset = static_cast<strata::offset_t>(i);
        expected.back().timestamp = 1'700'000'000'000 + i;  // each record's own time comes back
    }
    for (const auto& r : expected) log.append(r.view());
    REQUIRE(log.flush() == expected.size());

    std::size_t batches = 0;
    const auto all = replay_batches(log, 0, &batches);
    REQUIRE(all == expected);
    REQUIRE(all == replay_all(log));
    REQUIRE(batches >= expected.size() / 64);  // never more than replay_batch records at once
    REQUIRE(replay_batches(log, 1500) == std::vector<strata::record>(expected.begin() + 1500, expected.end()));
    REQUIRE(replay_batches(log, 1999).size() == 1);
    REQUIRE(replay_batches(log, expected.size()).empty());
}
