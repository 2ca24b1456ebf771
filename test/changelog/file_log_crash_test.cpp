// Crash safety of file_log: a writer process killed at random moments, and
// torn or garbage tails made by hand.

#include <strata/changelog/file_log.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
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
using strata::test::temp_dir;
using strata::test::write_bytes;

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// The record the writer appends at `offset`: a pure function of offset and
/// seed, so the checker can recompute it.
record record_for(offset_t offset, std::uint64_t seed) {
    const std::uint64_t h = mix(offset ^ mix(seed));
    std::mt19937_64 bytes(h);
    record r;
    r.offset = offset;
    r.key.resize(h % 12);
    for (auto& b : r.key) b = static_cast<std::byte>(bytes());
    if ((h >> 8) % 17 != 0) {
        const std::size_t size = (h >> 16) % 50 == 0 ? 20000 + (h >> 24) % 100000 : (h >> 24) % 300;
        r.value.emplace(size);
        for (auto& b : *r.value) b = static_cast<std::byte>(bytes());
    }
    return r;
}

/// Whether the writer flushes right after appending `offset`: also a pure
/// function, so the checker knows where every flush ends. A flush holds 1 to
/// dozens of records, like a multi-row update.
bool flush_after(offset_t offset, std::uint64_t seed) { return mix(offset * 31 + seed) % 6 == 0; }

/// Runs in the forked child: appends forever, flushing at the points
/// flush_after picks and reporting each durable offset once flush has returned.
[[noreturn]] void writer(const std::filesystem::path& dir, std::uint64_t seed, int report,
                         file_log_options opts) {
    try {
        file_log log(dir, opts);
        for (;;) {
            const offset_t offset = log.end_offset();
            log.append(record_for(offset, seed).view());
            if (flush_after(offset, seed)) {
                const offset_t durable = log.flush();
                if (::write(report, &durable, sizeof durable) != sizeof durable) ::_exit(4);
            }
        }
    } catch (...) {
        ::_exit(3);
    }
}

/// Every record present must be exactly the one written at its offset, with
/// no gap; returns how many there are.
offset_t check_log(const std::filesystem::path& dir, std::uint64_t seed, file_log_options opts) {
    file_log log(dir, opts);
    offset_t expected = 0;
    for (strata::record_view r : log.replay(0)) {
        REQUIRE(r.offset == expected);
        const record want = record_for(expected, seed);
        REQUIRE(record(r) == want);
        ++expected;
    }
    REQUIRE(log.end_offset() == expected);
    // All of a flush or none of it: the log ends where some flush ended.
    REQUIRE((expected == 0 || flush_after(expected - 1, seed)));
    return expected;
}

}  // namespace

TEST_CASE("file_log keeps every flushed record, and whole flushes only, when its writer is killed at random") {
    const file_log_options opts{.segment_bytes = 64 * 1024, .auto_compact = false};
    std::mt19937 rng(20240611);
    constexpr int dirs = 4, kills_per_dir = 25;
    int runs_with_progress = 0;
    for (int d = 0; d < dirs; ++d) {
        temp_dir dir;
        const std::uint64_t seed = rng();
        offset_t durable = 0;  // highest durable offset any writer reported
        for (int k = 0; k < kills_per_dir; ++k) {
            INFO("dir " << d << ", kill " << k);
            int fds[2];
            REQUIRE(::pipe(fds) == 0);
            const ::pid_t pid = ::fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                ::close(fds[0]);
                writer(dir.path(), seed, fds[1], opts);
            }
            ::close(fds[1]);
            ::usleep(static_cast<useconds_t>(2000 + rng() % 120000));
            ::kill(pid, SIGKILL);
            int status = 0;
            REQUIRE(::waitpid(pid, &status, 0) == pid);
            REQUIRE(WIFSIGNALED(status));  // died by our signal, not by an error
            REQUIRE(WTERMSIG(status) == SIGKILL);

            offset_t reported = 0;
            const offset_t before = durable;
            while (::read(fds[0], &reported, sizeof reported) == sizeof reported)
                durable = std::max(durable, reported);
            ::close(fds[0]);
            if (durable > before) ++runs_with_progress;

            const offset_t present = check_log(dir.path(), seed, opts);
            CHECK(present >= durable);
        }
        CHECK(durable > 0);
    }
    CHECK(runs_with_progress > dirs * kills_per_dir / 2);
}

namespace {

struct built_log {
    std::vector<record> records;
    std::filesystem::path last_segment;
    std::size_t last_frame_start = 0;  ///< where the last flush (a record, a commit frame) starts
    std::size_t last_segment_size = 0;
    std::vector<char> witness;  ///< as it was before the last flush
};

/// A log of n flushes of one record each, whose last flush is written but
/// never returned: its bytes are all there, and the witness still names the
/// flush before it, as when the writer dies before its fdatasync returns.
built_log build(const std::filesystem::path& dir, file_log_options opts, int n) {
    built_log out;
    std::vector<char> witness_before_last;
    {
        file_log log(dir, opts);
        for (int i = 0; i < n; ++i) {
            out.records.push_back(make_record("key" + std::to_string(i % 4),
                                              std::string(static_cast<std::size_t>(10 + i), 'v'),
                                              static_cast<offset_t>(i)));
            if (i + 1 == n) witness_before_last = read_bytes(strata::test::witness_file(dir));
            log.append(out.records.back().view());
            log.flush();
        }
        out.last_segment = log.segment_paths().back();
    }
    write_bytes(strata::test::witness_file(dir), witness_before_last);
    out.witness = witness_before_last;
    out.last_segment_size = static_cast<std::size_t>(std::filesystem::file_size(out.last_segment));
    out.last_frame_start =
        out.last_segment_size - strata::test::frame_size(out.records.back()) - strata::test::commit_frame_size;
    return out;
}

void check_records(file_log& log, const std::vector<record>& want, std::size_t count) {
    const auto got = collect(log.replay(0));
    REQUIRE(got.size() == count);
    for (std::size_t i = 0; i < count; ++i) CHECK(got[i] == want[i]);
}

}  // namespace

TEST_CASE("file_log cuts a last frame torn at any byte") {
    const auto opts = GENERATE(file_log_options{.segment_bytes = 1 << 20, .auto_compact = false},  // one segment
                               file_log_options{.segment_bytes = 60, .auto_compact = false});  // one frame per segment
    temp_dir dir;
    const built_log b = build(dir.path(), opts, 12);
    const auto original = read_bytes(b.last_segment);
    const std::size_t n = b.records.size();
    for (std::size_t cut = b.last_frame_start; cut < b.last_segment_size; ++cut) {
        INFO("cut at " << cut);
        auto torn = original;
        torn.resize(cut);
        write_bytes(b.last_segment, torn);
        write_bytes(strata::test::witness_file(dir.path()), b.witness);
        {
            file_log log(dir.path(), opts);
            CHECK(log.truncated_bytes() == cut - b.last_frame_start);
            CHECK(log.end_offset() == n - 1);
            check_records(log, b.records, n - 1);
            CHECK(std::filesystem::file_size(b.last_segment) == b.last_frame_start);
            // The log carries on cleanly from the cut.
            CHECK(log.append(b.records.back().view()) == n - 1);
            CHECK(log.flush() == n);
        }
        file_log log(dir.path(), opts);
        CHECK(log.truncated_bytes() == 0);
        check_records(log, b.records, n);
    }
}

TEST_CASE("file_log cuts garbage after the last frame") {
    temp_dir dir;
    const file_log_options opts{};
    const built_log b = build(dir.path(), opts, 8);
    const auto original = read_bytes(b.last_segment);
    const std::vector<char> last_frame(original.begin() + static_cast<std::ptrdiff_t>(b.last_frame_start),
                                       original.end() - strata::test::commit_frame_size);
    std::mt19937 rng(3);

    std::vector<std::vector<char>> tails;
    for (std::size_t len : {1, 5, 15, 16, 17, 100, 4096}) {
        std::vector<char> random(len);
        for (auto& c : random) c = static_cast<char>(rng());
        tails.push_back(random);
        tails.emplace_back(len, '\0');  // e.g. a preallocated block after a crash
    }
    // A frame with an intact header whose body does not match its checksum.
    auto bad_body = last_frame;
    bad_body.back() = static_cast<char>(bad_body.back() ^ 1);
    tails.push_back(bad_body);
    // A prefix copied from a real frame, then nothing.
    tails.emplace_back(last_frame.begin(), last_frame.begin() + 20);

    for (std::size_t t = 0; t < tails.size(); ++t) {
        INFO("tail " << t << " of " << tails[t].size() << " bytes");
        auto damaged = original;
        damaged.insert(damaged.end(), tails[t].begin(), tails[t].end());
        write_bytes(b.last_segment, damaged);
        file_log log(dir.path(), opts);
        CHECK(log.truncated_bytes() == tails[t].size());
        CHECK(log.end_offset() == b.records.size());
        check_records(log, b.records, b.records.size());
        CHECK(read_bytes(b.last_segment) == original);
    }
}

TEST_CASE("file_log reports garbage between valid frames of the last segment") {
    temp_dir dir;
    const built_log b = build(dir.path(), {}, 6);
    auto damaged = read_bytes(b.last_segment);
    const auto at = static_cast<std::ptrdiff_t>(b.last_frame_start);
    damaged.insert(damaged.begin() + at, {'g', 'a', 'r', 'b', 'a', 'g', 'e'});
    write_bytes(b.last_segment, damaged);
    try {
        file_log log(dir.path());
        FAIL("no corruption_error");
    } catch (const strata::corruption_error& e) {
        CHECK(e.byte_offset() == b.last_frame_start);
        CHECK(std::string(e.what()).find(b.last_segment.string()) != std::string::npos);
    }
}

TEST_CASE("file_log does not mistake a frame inside a torn record's value for a valid one") {
    temp_dir scratch;
    {
        file_log inner(scratch / "inner");
        inner.append(make_record("embedded", "frame").view());
        inner.flush();
    }
    const auto embedded = read_bytes(scratch / "inner" / "00000000000000000000.log");

    temp_dir dir;
    std::vector<record> want{make_record("a", "1", 0)};
    std::string value = "head:" + std::string(embedded.begin(), embedded.end()) + ":tail";
    want.push_back(make_record("carrier", value, 1));
    std::vector<char> witness_before_carrier;
    {
        file_log log(dir.path());
        log.append(want[0].view());
        log.flush();
        witness_before_carrier = read_bytes(strata::test::witness_file(dir.path()));
        log.append(want[1].view());
        log.flush();
    }
    // The carrier's flush never returned: its witness is not there, and its
    // write was torn 3 bytes before the carrier's end.
    write_bytes(strata::test::witness_file(dir.path()), witness_before_carrier);
    const auto seg = dir / "00000000000000000000.log";
    auto torn = read_bytes(seg);
    torn.resize(torn.size() - strata::test::commit_frame_size - 3);  // the embedded frame is whole, the carrier is not
    write_bytes(seg, torn);
    file_log log(dir.path());
    CHECK(log.end_offset() == 1);
    check_records(log, want, 1);
}

TEST_CASE("file_log reports a frame whose body is damaged when a later flush follows it", "[file_log]") {
    // Two flushes that never returned (the witness names neither), the first
    // with a damaged body behind an intact header: a flush after it was only
    // written once the first one's fdatasync returned, so this is damage,
    // not a torn tail. The scan must resume right after the damaged frame
    // to find the later flush's commit frame.
    temp_dir dir;
    std::vector<char> witness_before;
    const record a = make_record("a", std::string(40, 'a'), 0);
    const record b = make_record("b", "b", 1);
    {
        file_log log(dir.path());
        witness_before = read_bytes(strata::test::witness_file(dir.path()));
        log.append(a.view());
        log.flush();
        log.append(b.view());
        log.flush();
    }
    write_bytes(strata::test::witness_file(dir.path()), witness_before);
    const auto seg = dir / "00000000000000000000.log";
    auto bytes = read_bytes(seg);
    bytes[strata::test::frame_size(a) - 3] ^= 1;  // in a's value: its header and length stay intact
    write_bytes(seg, bytes);
    try {
        file_log log(dir.path());
        FAIL("the damaged log opened");
    } catch (const strata::corruption_error& e) {
        CHECK(e.byte_offset() == 0);
        CHECK(std::string(e.what()).find("frame checksum mismatch") != std::string::npos);
    }
}

TEST_CASE("file_log does not take a commit frame inside a damaged record's value for a real one", "[file_log]") {
    // The bytes of a valid commit frame, carried in a record's value.
    temp_dir scratch;
    {
        file_log inner(scratch / "inner");
        inner.append(make_record("x", "y").view());
        inner.flush();
    }
    const auto inner_bytes = read_bytes(scratch / "inner" / "00000000000000000000.log");
    const std::string embedded(inner_bytes.end() - strata::test::commit_frame_size, inner_bytes.end());

    // One flush that never returned: the carrier, then its own commit frame.
    // With the carrier's body damaged, that flush is torn; the scan must
    // skip the whole damaged frame, not look for frames inside it.
    temp_dir dir;
    std::vector<char> witness_before;
    const record carrier = make_record("carrier", "head:" + embedded + ":tail", 0);
    {
        file_log log(dir.path());
        witness_before = read_bytes(strata::test::witness_file(dir.path()));
        log.append(carrier.view());
        log.flush();
    }
    write_bytes(strata::test::witness_file(dir.path()), witness_before);
    const auto seg = dir / "00000000000000000000.log";
    auto bytes = read_bytes(seg);
    bytes[strata::test::frame_size(carrier) - 2] ^= 1;  // in ":tail"
    write_bytes(seg, bytes);
    file_log log(dir.path());
    CHECK(log.end_offset() == 0);
    CHECK(log.truncated_bytes() == bytes.size());
    CHECK(std::filesystem::file_size(seg) == 0);
}
