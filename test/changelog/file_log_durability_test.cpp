// What file_log promises about flushed data, case by case: a missing
// segment, a segment cut short, damage to flushed bytes, an unfinished or
// failed flush, a log of more segments than a process may open files, and
// verify/repair of a damaged log.

#include <strata/changelog/file_log.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <algorithm>
#include <csignal>
#include <iterator>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/resource.h>

using strata::corruption_error;
using strata::file_log;
using strata::file_log_options;
using strata::offset_t;
using strata::record;
using strata::test::collect;
using strata::test::commit_frame_size;
using strata::test::make_record;
using strata::test::read_bytes;
using strata::test::temp_dir;
using strata::test::witness_file;
using strata::test::write_bytes;

namespace {

/// A log of `flushes` flushes of `per_flush` records each, rolled into
/// small segments; returns the records in offset order.
std::vector<record> build(const std::filesystem::path& dir, file_log_options opts, int flushes, int per_flush = 3) {
    std::vector<record> out;
    file_log log(dir, opts);
    for (int f = 0; f < flushes; ++f) {
        for (int i = 0; i < per_flush; ++i) {
            const auto offset = static_cast<offset_t>(out.size());
            out.push_back(make_record("k" + std::to_string(offset % 7), "value " + std::to_string(offset), offset));
            log.append(out.back().view());
        }
        REQUIRE(log.flush() == out.size());
    }
    return out;
}

/// Opening must refuse, naming `file` and the byte offset `at`, and change nothing.
void require_refused(const std::filesystem::path& dir, const std::filesystem::path& file, std::uint64_t at,
                     const std::string& why) {
    std::vector<std::vector<char>> before;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".log") before.push_back(read_bytes(e.path()));
    try {
        file_log log(dir);
        FAIL("the log opened");
    } catch (const corruption_error& e) {
        INFO(e.what());
        CHECK(e.file() == file.string());
        CHECK(e.byte_offset() == at);
        CHECK(std::string(e.what()).find(why) != std::string::npos);
        CHECK(std::string(e.what()).find("strata-log repair") != std::string::npos);
    }
    std::vector<std::vector<char>> after;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".log") after.push_back(read_bytes(e.path()));
    CHECK(after == before);
}

/// Where each frame of a log built by build() into one segment starts:
/// per_flush records, then a commit frame, and so on.
std::vector<std::size_t> frame_starts(const std::vector<record>& records, int per_flush = 3) {
    std::vector<std::size_t> out;
    std::size_t at = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
        out.push_back(at);
        at += strata::test::frame_size(records[i]);
        if ((i + 1) % static_cast<std::size_t>(per_flush) == 0) {
            out.push_back(at);
            at += commit_frame_size;
        }
    }
    return out;
}

std::vector<std::filesystem::path> segments(const std::filesystem::path& dir) {
    file_log log(dir);
    return log.segment_paths();
}

}  // namespace

TEST_CASE("a deleted segment, first, middle or last, stops the log from opening", "[file_log][durability]") {
    const file_log_options opts{.segment_bytes = 200, .auto_compact = false};
    for (const char* which : {"first", "middle", "last"}) {
        INFO(which);
        temp_dir dir;
        build(dir.path(), opts, 12);
        const auto segs = segments(dir.path());
        REQUIRE(segs.size() >= 4);
        const std::string w = which;
        const auto victim = w == "first" ? segs.front() : w == "last" ? segs.back() : segs[segs.size() / 2];
        std::filesystem::remove(victim);
        require_refused(dir.path(), victim, 0, "segment listed in the manifest is missing");
    }
}

TEST_CASE("a segment cut at a frame boundary stops the log from opening", "[file_log][durability]") {
    const file_log_options opts{.segment_bytes = 200, .auto_compact = false};
    temp_dir dir;
    const auto records = build(dir.path(), opts, 12);
    const auto segs = segments(dir.path());
    REQUIRE(segs.size() >= 3);
    SECTION("a closed segment loses its last flush") {
        auto bytes = read_bytes(segs[1]);
        // The last flush of segment 1: the 3 records below segment 2's base, and a commit frame.
        const offset_t next_base = file_log(dir.path(), opts).segment_base_offsets()[2];
        REQUIRE(next_base % 3 == 0);
        const std::size_t last_flush = commit_frame_size + strata::test::frame_size(records[next_base - 1]) +
                                       strata::test::frame_size(records[next_base - 2]) +
                                       strata::test::frame_size(records[next_base - 3]);
        const std::size_t n = bytes.size();
        bytes.resize(n - last_flush);
        write_bytes(segs[1], bytes);
        require_refused(dir.path(), segs[1], n - last_flush, "are missing");
    }
    SECTION("the active segment loses its last flush") {
        auto bytes = read_bytes(segs.back());
        const std::size_t n = bytes.size();
        const std::size_t last_flush = commit_frame_size + strata::test::frame_size(records[records.size() - 1]) +
                                       strata::test::frame_size(records[records.size() - 2]) +
                                       strata::test::frame_size(records[records.size() - 3]);
        bytes.resize(n - last_flush);
        write_bytes(segs.back(), bytes);
        // Without this check the next appends would reuse the lost offsets.
        require_refused(dir.path(), segs.back(), n - last_flush, "returned: the rest is missing");
    }
}

TEST_CASE("damage to flushed bytes of the last segment is reported, not cut as a torn tail",
          "[file_log][durability]") {
    temp_dir dir;
    const auto records = build(dir.path(), {}, 20);
    const auto seg = segments(dir.path()).back();
    const auto original = read_bytes(seg);
    SECTION("a flipped bit in the last flushed frame") {
        auto bytes = original;
        const std::size_t commit_at = bytes.size() - commit_frame_size;
        bytes[commit_at + 20] = static_cast<char>(bytes[commit_at + 20] ^ 0x10);
        write_bytes(seg, bytes);
        require_refused(dir.path(), seg, commit_at, "in bytes that returned flushes wrote");
    }
    SECTION("a zeroed range spanning many flushes, to the end") {
        auto bytes = original;
        const std::size_t from = bytes.size() / 3;
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), '\0');
        write_bytes(seg, bytes);
        // The frame the zeroes start in is the first damage.
        const auto starts = frame_starts(records);
        const std::size_t frame_at = *std::prev(std::upper_bound(starts.begin(), starts.end(), from));
        require_refused(dir.path(), seg, frame_at, "in bytes that returned flushes wrote");
    }
}

TEST_CASE("a flush cut short by a crash comes back not at all: a multi-record update is never half applied",
          "[file_log][durability]") {
    const auto opts = GENERATE(file_log_options{}, file_log_options{.segment_bytes = 300, .auto_compact = false});
    temp_dir dir;
    std::vector<record> records;
    std::vector<char> witness_before;
    {
        file_log log(dir.path(), opts);
        for (offset_t o = 0; o < 4; ++o) {
            records.push_back(make_record("row" + std::to_string(o), "before", o));
            log.append(records.back().view());
        }
        REQUIRE(log.flush() == 4);
        witness_before = read_bytes(witness_file(dir.path()));
        // One update of five rows, written by one flush that never returns.
        for (offset_t o = 4; o < 9; ++o) log.append(make_record("row" + std::to_string(o % 4), "after", o).view());
        REQUIRE(log.flush() == 9);
    }
    write_bytes(witness_file(dir.path()), witness_before);
    const auto seg = segments(dir.path()).back();
    const auto whole = read_bytes(seg);
    // Cut the unfinished flush after each of its frames but the commit: every
    // such state holds complete frames of the update.
    std::size_t cut = whole.size() - commit_frame_size;
    for (int frames_kept = 4; frames_kept >= 0; --frames_kept) {
        INFO("frames of the update kept: " << frames_kept);
        auto bytes = whole;
        bytes.resize(cut);
        write_bytes(seg, bytes);
        write_bytes(witness_file(dir.path()), witness_before);
        {
            file_log log(dir.path(), opts);
            CHECK(log.end_offset() == 4);
            const auto got = collect(log.replay(0));
            REQUIRE(got.size() == 4);
            for (std::size_t i = 0; i < 4; ++i) CHECK(got[i] == records[i]);
        }
        if (frames_kept > 0) cut -= strata::test::frame_size(make_record("row0", "after"));
    }
}

TEST_CASE("a flush that fails part way leaves none of its records durable", "[file_log][durability]") {
    temp_dir dir;
    const std::vector<record> flushed = build(dir.path(), {}, 2);
    const std::uint64_t size_before = std::filesystem::file_size(segments(dir.path()).back());
    {
        file_log log(dir.path());
        for (offset_t o = 6; o < 200; ++o) log.append(make_record("big" + std::to_string(o), std::string(1000, 'x'), o).view());
        // A file size limit makes the write fail after part of it landed
        // (write(2) writes up to the limit, then fails with EFBIG), as a disk
        // filling up would.
        struct ::rlimit old {};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        struct ::rlimit small = old;
        small.rlim_cur = size_before + 50'000;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        CHECK_THROWS_AS(log.flush(), strata::changelog_error);
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &old) == 0);
        std::signal(SIGXFSZ, old_handler);
        // The failed log refuses to go on: nobody knows what reached the disk.
        CHECK_THROWS_AS(log.append(make_record("k", "v").view()), strata::changelog_error);
    }
    file_log log(dir.path());
    CHECK(log.end_offset() == flushed.size());
    const auto got = collect(log.replay(0));
    REQUIRE(got.size() == flushed.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == flushed[i]);
    // The log carries on from there.
    CHECK(log.append(make_record("next", "1").view()) == flushed.size());
    CHECK(log.flush() == flushed.size() + 1);
}

TEST_CASE("a log of more segments than the process may open files replays", "[file_log][durability]") {
    temp_dir dir;
    const auto records = build(dir.path(), {.segment_bytes = 64, .auto_compact = false}, 300, 1);
    file_log log(dir.path(), {.segment_bytes = 64, .auto_compact = false});
    REQUIRE(log.segment_count() >= 300);
    struct ::rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
    struct ::rlimit few = old;
    few.rlim_cur = 64;  // far fewer than the segments
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &few) == 0);
    std::vector<record> got;
    try {
        got = collect(log.replay(0));
    } catch (...) {
        ::setrlimit(RLIMIT_NOFILE, &old);
        throw;
    }
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &old) == 0);
    REQUIRE(got.size() == records.size());
    CHECK(got.front() == records.front());
    CHECK(got.back() == records.back());
}

TEST_CASE("verify reports damage without changing the log, repair cuts it to its last intact flush",
          "[file_log][durability]") {
    const file_log_options opts{.segment_bytes = 200, .auto_compact = false};
    temp_dir dir;
    const auto records = build(dir.path(), opts, 12);
    const auto segs = segments(dir.path());
    const auto bases = file_log(dir.path(), opts).segment_base_offsets();
    REQUIRE(segs.size() >= 4);

    auto intact = file_log::verify(dir.path());
    CHECK(intact.intact);
    CHECK(intact.intact_end == records.size());
    CHECK(intact.records == records.size());

    // Damage the first frame of segment 2: what came before it is intact.
    auto bytes = read_bytes(segs[2]);
    bytes[20] = static_cast<char>(bytes[20] ^ 1);
    write_bytes(segs[2], bytes);
    const auto check = file_log::verify(dir.path());
    CHECK_FALSE(check.intact);
    CHECK(check.damaged_file == segs[2]);
    CHECK(check.damaged_byte == 0);
    CHECK(check.intact_end == bases[2]);
    CHECK(read_bytes(segs[2]) == bytes);  // verify changed nothing

    const auto repaired = file_log::repair(dir.path());
    CHECK(repaired.intact_end == bases[2]);
    CHECK(repaired.segments_removed == segs.size() - 3);
    CHECK(repaired.bytes_cut > 0);
    CHECK(file_log::verify(dir.path()).intact);
    file_log log(dir.path(), opts);
    CHECK(log.end_offset() == bases[2]);
    const auto got = collect(log.replay(0));
    REQUIRE(got.size() == bases[2]);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == records[i]);
    CHECK(log.append(make_record("after repair", "1").view()) == bases[2]);
    CHECK(log.flush() == bases[2] + 1);
}

TEST_CASE("repair rebuilds a lost manifest from the segments", "[file_log][durability]") {
    const file_log_options opts{.segment_bytes = 200, .auto_compact = false};
    temp_dir dir;
    const auto records = build(dir.path(), opts, 10);
    std::filesystem::remove(dir.path() / "strata.manifest");
    require_refused(dir.path(), dir.path() / "strata.manifest", 0, "manifest is missing");
    const auto repaired = file_log::repair(dir.path());
    CHECK(repaired.intact_end == records.size());
    CHECK(file_log::verify(dir.path()).intact);
    file_log log(dir.path(), opts);
    CHECK(collect(log.replay(0)).size() == records.size());
}

TEST_CASE("repair cuts a segment that starts below the end of the segment before it", "[file_log][durability]") {
    // Found by fuzzing (test/fuzz/file_log_fuzz.cpp): repair kept such a
    // segment as the active one, emptied, so the repaired log still started
    // below its predecessor's end and neither opened nor could be repaired.
    const file_log_options opts{.segment_bytes = 200, .auto_compact = false};
    temp_dir dir;
    const auto records = build(dir.path(), opts, 10);
    const auto segs = segments(dir.path());
    const auto bases = file_log(dir.path(), opts).segment_base_offsets();
    REQUIRE(segs.size() >= 3);
    REQUIRE(bases[1] > 1);
    // The manifest is lost and a segment file named for offset 1 appears:
    // rebuilt from the files, the log lists it between the first two.
    std::filesystem::remove(dir.path() / "strata.manifest");
    const auto stray = dir.path() / "00000000000000000001.log";
    write_bytes(stray, read_bytes(segs.back()));

    const auto repaired = file_log::repair(dir.path());
    CHECK_FALSE(repaired.intact);
    CHECK(repaired.damaged_file == stray);
    CHECK(repaired.intact_end == bases[1]);
    const auto check = file_log::verify(dir.path());
    INFO(check.problem);
    CHECK(check.intact);
    file_log log(dir.path(), opts);
    CHECK(log.end_offset() == bases[1]);
    const auto got = collect(log.replay(0));
    REQUIRE(got.size() == bases[1]);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == records[i]);
    CHECK(log.append(make_record("after repair", "1").view()) == bases[1]);
    CHECK(log.flush() == bases[1] + 1);
}

TEST_CASE("repair of a damaged manifest with no segment left starts the log over", "[file_log][durability]") {
    // Found by fuzzing (test/fuzz/file_log_fuzz.cpp): with no segment file to
    // rebuild the manifest from, repair left the damaged manifest in place
    // and reported the log repaired, but it still did not open.
    temp_dir dir;
    build(dir.path(), {}, 2);
    for (const auto& seg : segments(dir.path())) std::filesystem::remove(seg);
    auto manifest = read_bytes(dir.path() / "strata.manifest");
    manifest[0] = 'X';
    write_bytes(dir.path() / "strata.manifest", manifest);
    require_refused(dir.path(), dir.path() / "strata.manifest", 0, "not a file_log manifest");

    const auto repaired = file_log::repair(dir.path());
    CHECK_FALSE(repaired.intact);
    CHECK(repaired.intact_end == 0);
    CHECK(file_log::verify(dir.path()).intact);
    file_log log(dir.path());
    CHECK(log.end_offset() == 0);
    CHECK(collect(log.replay(0)).empty());
    CHECK(log.append(make_record("after repair", "1").view()) == 0);
    CHECK(log.flush() == 1);
}
