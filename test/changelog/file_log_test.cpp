#include <strata/detail/crc32c.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/changelog/file_log.hpp>
#include <strata/core/concepts.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <ranges>
#include <string>
#include <vector>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using strata::file_log;
using strata::file_log_options;
using strata::offset_t;
using strata::record;
using strata::test::collect;
using strata::test::make_record;
using strata::test::read_bytes;
using strata::test::str;
using strata::test::temp_dir;
using strata::test::write_bytes;

static_assert(strata::changelog<file_log>);
static_assert(std::ranges::input_range<file_log::replay_range>);
static_assert(std::ranges::view<file_log::replay_range>);
static_assert(!std::is_copy_constructible_v<file_log>);
static_assert(std::is_nothrow_move_constructible_v<file_log>);

namespace {

std::string value_for(offset_t i, std::size_t size) {
    std::string v(size, '\0');
    for (std::size_t j = 0; j < size; ++j) v[j] = static_cast<char>('a' + (i * 7 + j) % 26);
    return v;
}

void check_same(const std::vector<record>& got, const std::vector<record>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("record " << i);
        CHECK(got[i] == want[i]);
    }
}

}  // namespace

// ------------------------------------------------------------------ crc32c --

TEST_CASE("crc32c matches the standard check value") {
    using strata::detail::crc32c;
    CHECK(crc32c(strata::as_bytes("123456789")) == 0xE3069283U);
    CHECK(crc32c(strata::as_bytes("")) == 0U);
    // RFC 3720 (iSCSI) vector: 32 zero bytes.
    const std::vector<std::byte> zeros(32);
    CHECK(crc32c(zeros) == 0x8A9136AAU);
}

TEST_CASE("crc32c gives the same answer portably, in hardware and in pieces") {
    using namespace strata::detail;
    std::mt19937 rng(42);
    for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4099}) {
        std::vector<std::byte> data(n);
        for (auto& b : data) b = static_cast<std::byte>(rng());
        const auto whole = crc32c(data);
        CHECK(crc32c_finish(crc32c_extend_portable(crc32c_init, data.data(), n)) == whole);
#if STRATA_CRC32C_HAS_SSE42
        if (crc32c_hardware_available())
            CHECK(crc32c_finish(crc32c_extend_sse42(crc32c_init, data.data(), n)) == whole);
#endif
        const std::size_t cut = n / 3;
        const strata::bytes_view all(data);
        CHECK(crc32c_finish(crc32c_extend(crc32c_extend(crc32c_init, all.first(cut)),
                                          all.subspan(cut))) == whole);
    }
}

TEST_CASE("segment file names sort like their offsets and parse back") {
    using namespace strata::detail;
    CHECK(segment_file_name(0) == "00000000000000000000.log");
    CHECK(segment_file_name(1234) == "00000000000000001234.log");
    CHECK(parse_segment_file_name(segment_file_name(18446744073709551615ULL)) ==
          18446744073709551615ULL);
    CHECK(parse_segment_file_name("99999999999999999999.log") == std::nullopt);  // > u64
    CHECK(parse_segment_file_name("0000000000000000123.log") == std::nullopt);
    CHECK(parse_segment_file_name("0000000000000000012a.log") == std::nullopt);
    CHECK(parse_segment_file_name("00000000000000000012.log.compacting") == std::nullopt);
    CHECK(parse_segment_file_name("strata.lock") == std::nullopt);
}

// -------------------------------------------------------------- round trip --

TEST_CASE("file_log round-trips records, tombstones, empty and large ones across reopen") {
    temp_dir dir;
    std::vector<record> want{
        make_record("a", "1"),
        make_record("b", std::nullopt),
        make_record("", ""),
        make_record("", std::nullopt),
        make_record("key", ""),
        make_record(std::string(5000, 'k'), value_for(5, 3u << 20)),  // > read buffer
        make_record("z", "last"),
    };
    for (std::size_t i = 0; i < want.size(); ++i) want[i].offset = i;
    {
        file_log log(dir.path());
        CHECK(log.end_offset() == 0);
        CHECK(log.flush() == 0);
        for (std::size_t i = 0; i < want.size(); ++i) {
            auto v = want[i].view();
            v.offset = 77;  // ignored
            CHECK(log.append(v) == i);
        }
        CHECK(log.end_offset() == want.size());
        CHECK(log.durable_offset() == 0);
        check_same(collect(log.replay(0)), want);  // unflushed records replay too
        CHECK(log.flush() == want.size());
        CHECK(log.durable_offset() == want.size());
        check_same(collect(log.replay(0)), want);
    }
    file_log log(dir.path());
    CHECK(log.end_offset() == want.size());
    CHECK(log.truncated_bytes() == 0);
    const auto got = collect(log.replay(0));
    check_same(got, want);
    CHECK(got[1].is_tombstone());
    CHECK(got[3].is_tombstone());
    CHECK_FALSE(got[2].is_tombstone());
    CHECK_FALSE(got[4].is_tombstone());
}

TEST_CASE("file_log keeps each record's time across reopen and compaction, and a record without one has none") {
    temp_dir dir;
    std::vector<record> want{
        make_record("a", "1"), make_record("b", "2"), make_record("a", std::nullopt), make_record("c", ""),
        make_record("b", "3"),
    };
    want[0].timestamp = 0;
    want[1].timestamp = 1'700'000'000'123;
    want[2].timestamp = 5;  // a tombstone may have a time too
    want[4].timestamp = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < want.size(); ++i) want[i].offset = i;
    {
        file_log log(dir.path(), {.auto_compact = false});
        for (const auto& r : want) log.append(r.view());
        log.flush();
        // A frame with a time is 8 bytes longer; one without is as before.
        CHECK(std::filesystem::file_size(log.segment_paths().front()) ==
              strata::test::frame_size(want[0]) + strata::test::frame_size(want[1]) +
                  strata::test::frame_size(want[2]) + strata::test::frame_size(want[3]) +
                  strata::test::frame_size(want[4]) + strata::test::commit_frame_size);
        auto bad = make_record("x", "y");
        bad.timestamp = -2;
        CHECK_THROWS_WITH(log.append(bad.view()), Catch::Contains("record timestamp -2"));
    }
    {
        file_log log(dir.path(), {.auto_compact = false});
        check_same(collect(log.replay(0)), want);
        CHECK(collect(log.replay(0))[3].timestamp == strata::no_timestamp);
    }
    // Compaction copies the frames it keeps, times and all: one segment per
    // record, so that every superseded record is in a closed segment.
    temp_dir small;
    file_log log(small.path(), {.segment_bytes = 1, .auto_compact = false});
    for (const auto& r : want) {
        log.append(r.view());
        log.flush();
    }
    log.compact();
    check_same(collect(log.replay(0)), {want[2], want[3], want[4]});
}

TEST_CASE("file_log drops records that were never flushed") {
    temp_dir dir;
    {
        file_log log(dir.path());
        log.append(make_record("kept", "1").view());
        CHECK(log.flush() == 1);
        log.append(make_record("lost", "2").view());
        CHECK(log.end_offset() == 2);
    }
    file_log log(dir.path());
    CHECK(log.end_offset() == 1);
    const auto got = collect(log.replay(0));
    REQUIRE(got.size() == 1);
    CHECK(str(got[0].key) == "kept");
    CHECK(log.append(make_record("next", "3").view()) == 1);
}

TEST_CASE("file_log rolls segments by size and replays from any offset") {
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 1024, .auto_compact = false};
    std::vector<record> want;
    {
        file_log log(dir.path(), opts);
        for (offset_t i = 0; i < 300; ++i) {
            want.push_back(make_record("key" + std::to_string(i % 17), value_for(i, i % 90), i));
            log.append(want.back().view());
            if (i % 5 == 0) CHECK(log.flush() == i + 1);
        }
        CHECK(log.flush() == 300);
        // A flush larger than a segment gets a segment of its own: a flush
        // never spans two segments.
        want.push_back(make_record("big", value_for(1, 5000), 300));
        log.append(want.back().view());
        want.push_back(make_record("after", "x", 301));
        log.append(want.back().view());
        CHECK(log.flush() == 302);
        CHECK(log.segment_count() > 10);
    }
    file_log log(dir.path(), opts);
    const auto bases = log.segment_base_offsets();
    const auto paths = log.segment_paths();
    REQUIRE(bases.size() == paths.size());
    CHECK(bases.front() == 0);
    CHECK(std::ranges::is_sorted(bases));
    bool saw_big_alone = false;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        CHECK(paths[i].filename().string() == strata::detail::segment_file_name(bases[i]));
        const auto size = std::filesystem::file_size(paths[i]);
        if (size > 1024) {
            // Only the segment of the one oversized flush may exceed the limit.
            CHECK(bases[i] == 300);
            CHECK(i + 1 == bases.size());
            saw_big_alone = true;
        }
    }
    CHECK(saw_big_alone);
    CHECK(log.end_offset() == 302);
    check_same(collect(log.replay(0)), want);
    for (offset_t from = 0; from <= 303; ++from) {
        const auto got = collect(log.replay(from));
        REQUIRE(got.size() == (from < 302 ? 302 - from : 0));
        if (!got.empty()) {
            CHECK(got.front() == want[from]);
            CHECK(got.back() == want.back());
        }
    }
}

TEST_CASE("file_log replay is a snapshot and can be restarted") {
    temp_dir dir;
    file_log log(dir.path(), {.segment_bytes = 256, .auto_compact = false});
    for (int i = 0; i < 20; ++i) log.append(make_record("k", std::to_string(i)).view());
    log.flush();
    log.append(make_record("pending", "p").view());
    auto range = log.replay(18);
    // Changes after replay() began are not seen by it.
    log.flush();
    log.append(make_record("later", "l").view());
    log.flush();
    auto got = collect(range);
    REQUIRE(got.size() == 3);
    CHECK(got[0].offset == 18);
    CHECK(str(got[2].key) == "pending");
    CHECK(collect(range).size() == 3);  // begin() again starts over
    CHECK(collect(log.replay(18)).size() == 4);
}

TEST_CASE("file_log replay composes with std::ranges") {
    temp_dir dir;
    file_log log(dir.path());
    for (int i = 0; i < 10; ++i) log.append(make_record(std::to_string(i % 3), std::to_string(i)).view());
    log.flush();
    auto keys = log.replay(4) | std::views::transform([](strata::record_view r) { return str(strata::byte_buffer(r.key.begin(), r.key.end())); });
    std::vector<std::string> got;
    for (auto k : keys) got.push_back(k);
    CHECK(got == std::vector<std::string>{"1", "2", "0", "1", "2", "0"});
    CHECK(std::ranges::distance(log.replay(0)) == 10);
}

TEST_CASE("file_log next_batch hands out the records iteration does, each batch valid until the next call",
          "[file_log]") {
    temp_dir dir;
    // Segments of 1 MiB and values up to 90 KiB: the reader's 256 KiB buffer
    // refills inside segments, with frames cut at its end, and batches end
    // at segment ends. The last records are appended and not flushed.
    const file_log_options opts{.segment_bytes = 1 << 20, .auto_compact = false};
    file_log log(dir.path(), opts);
    std::vector<record> want;
    std::mt19937 rng(7);
    for (offset_t i = 0; i < 3000; ++i) {
        const std::size_t size = rng() % 16 == 0 ? rng() % 90'000 : rng() % 40;
        want.push_back(i % 11 == 3 ? make_record("k" + std::to_string(i), std::nullopt, i)
                                   : make_record("k" + std::to_string(i), value_for(i, size), i));
        log.append(want.back().view());
        if (i % 97 == 0 && i < 2900) log.flush();
    }
    REQUIRE(log.segment_count() > 3);
    for (const offset_t from : {offset_t{0}, offset_t{1}, offset_t{1234}, offset_t{2950}, offset_t{2999},
                                offset_t{3000}}) {
        INFO("from " << from);
        auto range = log.replay(from);
        std::vector<record> got;
        std::size_t batches = 0;
        for (;;) {
            const auto batch = range.next_batch();
            if (batch.empty()) break;
            ++batches;
            CHECK(batch.size() <= 256);
            // Copied only once the whole batch is out: a view that a refill
            // of the reader's buffer had moved would read other bytes.
            for (const strata::record_view& r : batch) got.emplace_back(r);
        }
        CHECK(range.next_batch().empty());
        check_same(got, std::vector<record>(want.begin() + static_cast<std::ptrdiff_t>(from), want.end()));
        if (from == 0) CHECK(batches > log.segment_count());
        // Iterating the same range starts over.
        check_same(collect(range), std::vector<record>(want.begin() + static_cast<std::ptrdiff_t>(from), want.end()));
    }
}

TEST_CASE("file_log next_batch hands out the records before a damaged frame, then reports it", "[file_log]") {
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 512, .auto_compact = false};
    const auto rec = [](int i) {
        const std::string n = std::to_string(10 + i);
        return make_record("key" + n, "value" + n, static_cast<offset_t>(i));
    };
    {
        file_log log(dir.path(), opts);
        for (int i = 0; i < 60; ++i) {
            log.append(rec(i).view());
            log.flush();
        }
        REQUIRE(log.segment_count() > 2);
    }
    // Damage the value of record 3 in the first (sealed) segment: opening
    // trusts the segment's index, the replay checks every frame. Each record
    // is a flush of its own, followed by its commit frame.
    const auto seg = dir / "00000000000000000000.log";
    auto bytes = read_bytes(seg);
    const std::size_t per_flush = strata::test::frame_size(rec(0)) + strata::test::commit_frame_size;
    const std::size_t at = 3 * per_flush + strata::test::frame_size(rec(0)) - 2;
    REQUIRE(at < bytes.size());
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    write_bytes(seg, bytes);

    file_log log(dir.path(), opts);
    auto range = log.replay(0);
    std::vector<record> got;
    bool reported = false;
    try {
        for (auto batch = range.next_batch(); !batch.empty(); batch = range.next_batch())
            for (const strata::record_view& r : batch) got.emplace_back(r);
    } catch (const strata::corruption_error& e) {
        reported = true;
        CHECK(e.file() == seg.string());
        CHECK(e.byte_offset() == 3 * per_flush);
    }
    CHECK(reported);
    check_same(got, {rec(0), rec(1), rec(2)});
    CHECK_THROWS_AS(range.next_batch(), strata::corruption_error);  // and again
}

TEST_CASE("file_log is movable and locks its directory") {
    temp_dir dir;
    file_log a(dir.path());
    a.append(make_record("x", "1").view());
    CHECK_THROWS_AS(file_log(dir.path()), strata::changelog_error);
    file_log b(std::move(a));
    CHECK(b.flush() == 1);
    file_log c(dir / "other");
    c = std::move(b);  // c's own directory is released, a's lock moves along
    CHECK(c.end_offset() == 1);
    CHECK_NOTHROW(file_log(dir / "other"));
    CHECK_THROWS_AS(file_log(dir.path()), strata::changelog_error);
}

TEST_CASE("a file_log refused its directory says who holds it") {
    temp_dir dir;
    const std::string pid = "pid " + std::to_string(::getpid()) + ", opened 20";
    SECTION("another file_log object in this process") {
        file_log held(dir.path());
        CHECK_THROWS_WITH(file_log(dir.path()),
                          Catch::Contains("already open elsewhere: by another strata::file_log object in this process (" +
                                          pid) &&
                              Catch::Contains("give that object to every user"));
    }
    SECTION("another process") {
        int ready[2];
        REQUIRE(::pipe(ready) == 0);
        const ::pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            file_log held(dir.path());
            char c = 'x';
            (void)!::write(ready[1], &c, 1);
            ::pause();  // until killed
            ::_exit(0);
        }
        char c = 0;
        REQUIRE(::read(ready[0], &c, 1) == 1);
        const std::string theirs = "by another process (pid " + std::to_string(child) + ", opened 20";
        CHECK_THROWS_WITH(file_log(dir.path()), Catch::Contains(theirs));
        ::kill(child, SIGKILL);
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        ::close(ready[0]);
        ::close(ready[1]);
        CHECK_NOTHROW(file_log(dir.path()));  // the lock went with the process
    }
}

// -------------------------------------------------------------- compaction --

TEST_CASE("file_log compaction keeps the latest record per key with its offset") {
    temp_dir dir;
    const file_log_options opts{.segment_bytes = 512, .auto_compact = false};
    std::vector<record> all;
    std::map<std::string, offset_t> latest;
    {
        file_log log(dir.path(), opts);
        std::mt19937 rng(7);
        for (offset_t i = 0; i < 400; ++i) {
            const std::string key = "k" + std::to_string(rng() % 12);
            const bool tomb = rng() % 10 == 0;
            all.push_back(make_record(key, tomb ? std::nullopt : std::optional<std::string_view>(
                                                                     value_for(i, 20)), i));
            log.append(all.back().view());
            latest[key] = i;
            if (rng() % 5 == 0) log.flush();
        }
        log.flush();
        log.append(make_record("k0", "unflushed").view());  // must not supersede anything

        const auto bases = log.segment_base_offsets();
        REQUIRE(bases.size() > 5);
        const offset_t active_base = bases.back();
        const auto size_before = std::filesystem::file_size(log.segment_paths().front());

        const auto stats = log.compact();
        CHECK(stats.records_dropped > 0);
        CHECK(stats.segments_rewritten + stats.segments_removed > 0);
        CHECK(stats.bytes_after < stats.bytes_before);
        CHECK(log.segment_base_offsets().back() == active_base);
        if (log.segment_base_offsets().front() == 0)
            CHECK(std::filesystem::file_size(log.segment_paths().front()) < size_before);

        std::vector<record> want;
        for (const record& r : all)
            if (r.offset >= active_base || latest[str(r.key)] == r.offset) want.push_back(r);
        want.push_back(make_record("k0", "unflushed", 400));
        check_same(collect(log.replay(0)), want);
        CHECK(stats.records_dropped == all.size() + 1 - want.size());
        CHECK(log.flush() == 401);
        for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
            CHECK_FALSE(entry.path().string().ends_with(".compacting"));
    }
    file_log log(dir.path(), opts);
    CHECK(log.end_offset() == 401);
    const auto got = collect(log.replay(0));
    // Every key's latest record survives, tombstone or not, at its offset.
    for (const auto& [key, off] : latest) {
        const auto it = std::ranges::find(got, off, &record::offset);
        REQUIRE(it != got.end());
        CHECK(*it == all[off]);
    }
    // Offsets strictly increase; starting inside a gap begins at the next record.
    for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i - 1].offset < got[i].offset);
    for (offset_t from = 0; from <= 401; ++from) {
        const auto tail = collect(log.replay(from));
        const auto first = std::ranges::lower_bound(got, from, {}, &record::offset);
        REQUIRE(tail.size() == static_cast<std::size_t>(got.end() - first));
        if (!tail.empty()) CHECK(tail.front() == *first);
    }
    // Compacting again drops exactly what the now-durable "k0" record and
    // the segments closed since supersede; a third time drops nothing.
    const offset_t active = log.segment_base_offsets().back();
    std::size_t superseded = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i].offset < active &&
            std::any_of(got.begin() + static_cast<std::ptrdiff_t>(i) + 1, got.end(),
                        [&](const record& later) { return later.key == got[i].key; }))
            ++superseded;
    CHECK(superseded > 0);
    CHECK(log.compact().records_dropped == superseded);
    CHECK(collect(log.replay(0)).size() == got.size() - superseded);
    CHECK(log.compact().records_dropped == 0);
}

TEST_CASE("file_log compaction removes closed segments whose keys all reappear later") {
    temp_dir dir;
    file_log log(dir.path(), {.segment_bytes = 200, .auto_compact = false});
    for (int round = 0; round < 3; ++round)
        for (int k = 0; k < 20; ++k) {
            log.append(make_record("key" + std::to_string(k), std::to_string(round)).view());
            log.flush();
        }
    const auto before = log.segment_count();
    const auto stats = log.compact();
    CHECK(stats.segments_removed > 0);
    CHECK(log.segment_count() == before - stats.segments_removed);
    const auto got = collect(log.replay(0));
    // The last round's 20 records survive; earlier rounds only inside the active segment.
    std::map<std::string, std::string> state;
    for (const record& r : got) state[str(r.key)] = str(*r.value);
    REQUIRE(state.size() == 20);
    for (const auto& [k, v] : state) CHECK(v == "2");
    CHECK(got.size() == 20);
    CHECK(got.back().offset == 59);
}

// -------------------------------------------------------------- corruption --

TEST_CASE("file_log reports a damaged frame followed by valid frames, naming file and offset") {
    temp_dir dir;
    std::vector<record> recs;
    {
        file_log log(dir.path());
        for (int i = 0; i < 5; ++i) {
            recs.push_back(make_record("key" + std::to_string(i), "value" + std::to_string(i)));
            log.append(recs.back().view());
        }
        log.flush();
    }
    const auto seg = dir / "00000000000000000000.log";
    const auto original = read_bytes(seg);
    // Damage every byte of the second frame in turn: the frames after it are
    // intact, so this is not a torn tail.
    const std::size_t start = strata::test::frame_size(recs[0]);
    const std::size_t len = strata::test::frame_size(recs[1]);
    for (std::size_t at = start; at < start + len; ++at) {
        INFO("byte " << at);
        auto damaged = original;
        damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
        write_bytes(seg, damaged);
        try {
            file_log log(dir.path());
            FAIL("no corruption_error");
        } catch (const strata::corruption_error& e) {
            CHECK(e.file() == seg.string());
            CHECK(e.byte_offset() == start);
            const std::string what = e.what();
            CHECK(what.find(seg.string()) != std::string::npos);
            CHECK(what.find("byte offset " + std::to_string(start)) != std::string::npos);
        }
        CHECK(read_bytes(seg) == damaged);  // nothing was cut
    }
    write_bytes(seg, original);
    CHECK(collect(file_log(dir.path()).replay(0)).size() == 5);
}

TEST_CASE("file_log treats any damage in an earlier segment as corruption") {
    temp_dir dir;
    std::vector<std::filesystem::path> paths;
    {
        file_log log(dir.path(), {.segment_bytes = 100, .auto_compact = false});
        for (int i = 0; i < 10; ++i) {
            log.append(make_record("k", value_for(static_cast<offset_t>(i), 40)).view());
            log.flush();
        }
        paths = log.segment_paths();
    }
    REQUIRE(paths.size() >= 3);
    const auto first = paths[0];
    const auto original = read_bytes(first);

    SECTION("a flipped byte in its last frame") {
        auto damaged = original;
        damaged.back() = static_cast<char>(damaged.back() ^ 1);
        write_bytes(first, damaged);
    }
    SECTION("a cut-off last frame") {
        auto damaged = original;
        damaged.resize(damaged.size() - 3);
        write_bytes(first, damaged);
    }
    SECTION("garbage after its last frame") {
        auto damaged = original;
        damaged.insert(damaged.end(), {'x', 'y', 'z'});
        write_bytes(first, damaged);
    }
    try {
        file_log log(dir.path());
        FAIL("no corruption_error");
    } catch (const strata::corruption_error& e) {
        CHECK(e.file() == first.string());
        CHECK(std::string(e.what()).find(first.filename().string()) != std::string::npos);
    }
}

TEST_CASE("file_log rejects segments whose offsets go backwards") {
    temp_dir dir;
    {
        file_log log(dir.path(), {.segment_bytes = 100, .auto_compact = false});
        for (int i = 0; i < 6; ++i) {
            log.append(make_record("k", value_for(static_cast<offset_t>(i), 60)).view());
            log.flush();
        }
    }
    // A copy of segment 0 under a later name holds offsets below its base.
    std::filesystem::copy_file(dir / "00000000000000000000.log", dir / "00000000000000000100.log");
    CHECK_THROWS_AS(file_log(dir.path()), strata::corruption_error);
}
