// Automatic compaction of a file_log: the latest record of each key stays at
// its offset, tombstones go only after delete_retention, replay(from) works
// from inside removed ranges, and a crash at any step of sealing a segment
// or compacting leaves a log that opens to the same state.

#include <strata/changelog/file_log.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"
#include <support/fault_file_system.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

using strata::file_log;
using strata::file_log_options;
using strata::offset_t;
using strata::record;
using strata::test::collect;
using strata::test::make_record;
using strata::test::str;
using strata::test::temp_dir;

namespace {

/// The wall clock the logs of these tests see; each test sets it.
std::chrono::system_clock::time_point fake_now{};
std::chrono::system_clock::time_point fake_clock() { return fake_now; }

/// The state a replay rebuilds: key -> (offset, value); a tombstone erases.
using state = std::map<std::string, std::pair<offset_t, std::string>>;

template <class Range>
state replayed_state(Range&& replay, std::optional<offset_t>& last_offset) {
    state s;
    for (const strata::record_view r : replay) {
        if (last_offset) REQUIRE(r.offset > *last_offset);
        last_offset = r.offset;
        const std::string key(strata::as_chars(r.key));
        if (r.value) s[key] = {r.offset, std::string(strata::as_chars(*r.value))};
        else s.erase(key);
    }
    return s;
}
template <class Range>
state replayed_state(Range&& replay) {
    std::optional<offset_t> last;
    return replayed_state(std::forward<Range>(replay), last);
}

/// Keys seen in a replay, tombstones included.
template <class Range>
std::map<std::string, int> key_counts(Range&& replay, int& tombstones) {
    std::map<std::string, int> out;
    tombstones = 0;
    for (const strata::record_view r : replay) {
        ++out[std::string(strata::as_chars(r.key))];
        if (!r.value) ++tombstones;
    }
    return out;
}

}  // namespace

TEST_CASE("automatic compaction keeps the latest record of each key at its offset", "[file_log][compaction]") {
    fake_now = std::chrono::system_clock::time_point{} + std::chrono::hours(1000);
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 2048, .index_interval_bytes = 256, .auto_compact = true,
                                .min_dirty_ratio = 0.5, .max_compaction_bytes = 8192,
                                .delete_retention = std::chrono::hours(1), .clock = &fake_clock};
    state model;
    std::vector<record> appended;
    std::set<std::string> deleted;
    {
        file_log log(dir.path(), opts);
        std::mt19937 rng(11);
        for (offset_t i = 0; i < 3000; ++i) {
            const std::string key = "key" + std::to_string(rng() % 40);
            const bool tomb = rng() % 8 == 0;
            const std::string value = "value " + std::to_string(i);
            appended.push_back(make_record(key, tomb ? std::nullopt : std::optional<std::string_view>(value), i));
            REQUIRE(log.append(appended.back().view()) == i);
            if (tomb) model.erase(key), deleted.insert(key);
            else model[key] = {i, value}, deleted.erase(key);
            if (rng() % 10 == 0) log.flush();
        }
        log.flush();
        REQUIRE_FALSE(log.compaction_failure());
        const auto& totals = log.compaction_totals();
        CHECK(totals.passes > 0);
        CHECK(totals.records_dropped > 0);
        CHECK(totals.bytes_after < totals.bytes_before);
        // The clock did not move: no segment is an hour old, so every
        // tombstone that is the latest of its key is still there.
        CHECK(totals.tombstones_dropped == 0);

        // Far fewer records than were appended, and the same state.
        std::size_t replayed = 0;
        for (const strata::record_view r : log.replay(0)) {
            ++replayed;
            CHECK(record(r) == appended[r.offset]);  // kept at its own offset, unchanged
        }
        CHECK(replayed < appended.size() / 2);
        CHECK(replayed_state(log.replay(0)) == model);
        int tombstones = 0;
        const auto counts = key_counts(log.replay(0), tombstones);
        CHECK(tombstones >= static_cast<int>(deleted.size()));
        for (const auto& k : deleted) CHECK(counts.contains(k));

        // replay(from) from anywhere, gaps included, is the tail of replay(0).
        const auto all = collect(log.replay(0));
        for (offset_t from = 0; from <= log.end_offset(); from += 7) {
            std::vector<record> want;
            for (const auto& r : all)
                if (r.offset >= from) want.push_back(r);
            INFO("from " << from);
            CHECK(collect(log.replay(from)) == want);
        }
    }
    // The same after reopening: compaction left indexes that agree.
    file_log log(dir.path(), opts);
    CHECK(replayed_state(log.replay(0)) == model);
    CHECK(file_log::verify(dir.path()).intact);
    CHECK(file_log::verify(dir.path()).unindexed_segments.empty());
}

TEST_CASE("tombstones leave the log only once delete_retention has passed since their segment was sealed",
          "[file_log][compaction]") {
    fake_now = std::chrono::system_clock::time_point{} + std::chrono::hours(2000);
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 512, .auto_compact = false,
                                .delete_retention = std::chrono::minutes(30), .clock = &fake_clock};
    file_log log(dir.path(), opts);
    for (int i = 0; i < 20; ++i) log.append(make_record("k" + std::to_string(i), "v").view());
    log.flush();
    for (int i = 0; i < 10; ++i) log.append(make_record("k" + std::to_string(i), std::nullopt).view());
    log.flush();
    // Later records, in later segments, so that the tombstones are sealed.
    for (int i = 0; i < 30; ++i) {
        log.append(make_record("other" + std::to_string(i), "x").view());
        log.flush();
    }
    REQUIRE(log.segment_count() > 3);
    const state before = replayed_state(log.replay(0));

    fake_now += std::chrono::minutes(29);
    auto stats = log.compact();
    CHECK(stats.records_dropped >= 10);  // the values the tombstones delete
    CHECK(stats.tombstones_dropped == 0);
    int tombstones = 0;
    auto counts = key_counts(log.replay(0), tombstones);
    CHECK(tombstones == 10);
    for (int i = 0; i < 10; ++i) CHECK(counts["k" + std::to_string(i)] == 1);
    CHECK(replayed_state(log.replay(0)) == before);

    fake_now += std::chrono::minutes(2);
    stats = log.compact();
    CHECK(stats.tombstones_dropped == 10);
    counts = key_counts(log.replay(0), tombstones);
    CHECK(tombstones == 0);
    for (int i = 0; i < 10; ++i) CHECK_FALSE(counts.contains("k" + std::to_string(i)));
    for (int i = 10; i < 20; ++i) CHECK(counts["k" + std::to_string(i)] == 1);
    CHECK(replayed_state(log.replay(0)) == before);
}

TEST_CASE("automatic compaction waits for the dirty ratio and bounds each pass", "[file_log][compaction]") {
    fake_now = std::chrono::system_clock::time_point{} + std::chrono::hours(3000);
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 1024, .auto_compact = true, .min_dirty_ratio = 0.5,
                                .max_compaction_bytes = 2048, .clock = &fake_clock};
    file_log log(dir.path(), opts);
    std::size_t last_passes = 0;
    std::uint64_t flushes_with_pass = 0, seals = 0;
    offset_t active_base = 0;
    for (int i = 0; i < 2000; ++i) {
        log.append(make_record("k" + std::to_string(i % 10), std::string(30, 'v')).view());
        if (i % 5 == 4) {
            log.flush();
            if (log.segment_base_offsets().back() != active_base) ++seals;
            active_base = log.segment_base_offsets().back();
            if (log.compaction_totals().passes > last_passes) ++flushes_with_pass;
            CHECK(log.compaction_totals().passes - last_passes <= 1);  // at most one pass per flush
            last_passes = log.compaction_totals().passes;
        }
    }
    REQUIRE_FALSE(log.compaction_failure());
    CHECK(flushes_with_pass > 0);
    // Only a seal makes bytes dirty: flushes that seal nothing never compact.
    CHECK(flushes_with_pass <= seals);
    CHECK(seals < 400 / 2);
    // Ten keys: after compaction a handful of small segments hold them.
    CHECK(log.segment_count() < 10);
    state model;
    for (int k = 0; k < 10; ++k) model["k" + std::to_string(k)] = {0, std::string(30, 'v')};
    state got = replayed_state(log.replay(0));
    for (auto& [k, v] : got) v.first = 0;
    CHECK(got == model);
}

// ------------------------------------------------------------------ crashes --

namespace {

using test_support::fault;
using test_support::fault_file_system;
using test_support::fault_kind;
using test_support::simulated_crash;
using fault_log = strata::basic_file_log<fault_file_system>;
const std::filesystem::path crash_dir = "/data/log";

file_log_options crash_options() {
    return {.segment_bytes = 700, .index_interval_bytes = 128, .auto_compact = true, .min_dirty_ratio = 0.3,
            .max_compaction_bytes = 1500, .delete_retention = std::chrono::milliseconds(0), .clock = &fake_clock};
}

/// A workload that rolls segments and compacts them, tombstones included:
/// the state after each flush that returned, in order.
struct crash_history {
    std::vector<state> returned{state{}};
    std::optional<state> in_flight;
};

void crash_workload(fault_log& log, crash_history& h) {
    state model = h.returned.back();
    for (int i = 0; i < 120; ++i) {
        const std::string key = "k" + std::to_string((i * 7) % 13);
        const bool tomb = i % 9 == 4;
        const std::string value = "v" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 17), '.');
        const offset_t at = log.append(make_record(key, tomb ? std::nullopt : std::optional<std::string_view>(value)).view());
        if (tomb) model.erase(key);
        else model[key] = {at, value};
        if (i % 4 == 3) {
            h.in_flight = model;
            log.flush();
            h.returned.push_back(model);
            h.in_flight.reset();
        }
    }
}

state values_only(state s) {
    for (auto& [k, v] : s) v.first = 0;
    return s;
}

}  // namespace

TEST_CASE("a crash at any step of sealing or compacting leaves a log that opens to the same state",
          "[file_log][compaction][crash]") {
    fake_now = std::chrono::system_clock::time_point{} + std::chrono::hours(4000);
    // The run without a fault: how many operations it makes, and that it
    // sealed segments and compacted them, tombstones included.
    std::uint64_t operations = 0;
    {
        fault_file_system dry(1);
        fault_log log(crash_dir, crash_options(), dry);
        crash_history h;
        crash_workload(log, h);
        REQUIRE_FALSE(log.compaction_failure());
        REQUIRE(log.compaction_totals().passes > 3);
        REQUIRE(log.compaction_totals().segments_rewritten + log.compaction_totals().segments_removed > 3);
        REQUIRE(log.compaction_totals().tombstones_dropped > 0);
        REQUIRE(log.segment_count() >= 2);  // at least one sealed segment at the end
        operations = dry.operations();
    }
    std::mt19937_64 rng(99);
    std::uint64_t crashes_in_compaction = 0;
    for (std::uint64_t at = 1; at <= operations; ++at) {
        for (const fault_kind kind : {fault_kind::crash, fault_kind::torn_crash}) {
            INFO("crash (" << to_string(kind) << ") at operation " << at << " of " << operations);
            fault_file_system fs(at);
            fs.arm(fault{kind, at});
            crash_history h;
            std::optional<fault_log> writer;
            try {
                writer.emplace(crash_dir, crash_options(), fs);
                crash_workload(*writer, h);
            } catch (const simulated_crash&) {
            }
            if (writer && writer->compaction_failure()) ++crashes_in_compaction;
            writer.reset();
            REQUIRE(fs.fired());
            // Power lost: what was not synced may or may not be there.
            fs.reboot(rng);
            fs.disarm();
            std::optional<fault_log> log;
            REQUIRE_NOTHROW(log.emplace(crash_dir, crash_options(), fs));
            const state got = values_only(replayed_state(log->replay(0)));
            const bool last = got == values_only(h.returned.back());
            const bool in_flight = h.in_flight && got == values_only(*h.in_flight);
            CHECK((last || in_flight));
            CHECK(fault_log::verify(crash_dir, fs).intact);
            // And it goes on: more flushes, a clean restart, the same state.
            log->append(make_record("after", "crash").view());
            log->flush();
            state expected = got;
            expected["after"] = {0, "crash"};
            log.reset();
            fs.restart();
            fault_log again(crash_dir, crash_options(), fs);
            CHECK(values_only(replayed_state(again.replay(0))) == expected);
        }
    }
    // The faults reached compaction too (a crash there is absorbed by the flush that ran it).
    CHECK(crashes_in_compaction > 0);
}
