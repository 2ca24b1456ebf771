// The index of sealed segments: opening reads only the indexes (and the last
// frame of each sealed segment), a missing, damaged or stale index costs a
// scan of its segment and nothing else, and replay(from) starts reading near
// `from`. The bytes each file gives are counted through the file system.

#include <strata/changelog/file_log.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

using strata::offset_t;
using strata::record;
using strata::test::collect;
using strata::test::make_record;
using strata::test::read_bytes;
using strata::test::temp_dir;
using strata::test::write_bytes;

namespace {

/// The POSIX file system, counting the bytes read from each file.
struct counting_fs {
    using file = strata::posix_file_system::file;
    strata::posix_file_system real;
    std::shared_ptr<std::map<std::string, std::uint64_t>> bytes_read =
        std::make_shared<std::map<std::string, std::uint64_t>>();

    [[nodiscard]] std::uint64_t read_from(const std::filesystem::path& p) const {
        const auto it = bytes_read->find(p.filename().string());
        return it == bytes_read->end() ? 0 : it->second;
    }
    void reset() const { bytes_read->clear(); }

    void create_directories(const std::filesystem::path& d) const { real.create_directories(d); }
    [[nodiscard]] std::vector<std::string> list(const std::filesystem::path& d) const { return real.list(d); }
    [[nodiscard]] bool exists(const std::filesystem::path& p) const { return real.exists(p); }
    [[nodiscard]] file open_read(const std::filesystem::path& p) const { return real.open_read(p); }
    [[nodiscard]] file open_append(const std::filesystem::path& p) const { return real.open_append(p); }
    [[nodiscard]] file create_new(const std::filesystem::path& p) const { return real.create_new(p); }
    [[nodiscard]] file create_truncated(const std::filesystem::path& p) const { return real.create_truncated(p); }
    [[nodiscard]] file open_write(const std::filesystem::path& p) const { return real.open_write(p); }
    [[nodiscard]] std::uint64_t size(const file& f, const std::filesystem::path& p) const { return real.size(f, p); }
    [[nodiscard]] std::size_t read_at(const file& f, std::span<std::byte> out, std::uint64_t pos,
                                      const std::filesystem::path& p) const {
        const std::size_t n = real.read_at(f, out, pos, p);
        (*bytes_read)[p.filename().string()] += n;
        return n;
    }
    void append(const file& f, strata::bytes_view d, const std::filesystem::path& p) const { real.append(f, d, p); }
    void write_at(const file& f, strata::bytes_view d, std::uint64_t pos, const std::filesystem::path& p) const {
        real.write_at(f, d, pos, p);
    }
    void sync_data(const file& f, const std::filesystem::path& p) const { real.sync_data(f, p); }
    void truncate(const file& f, std::uint64_t n, const std::filesystem::path& p) const { real.truncate(f, n, p); }
    void rename(const std::filesystem::path& a, const std::filesystem::path& b) const { real.rename(a, b); }
    void remove(const std::filesystem::path& p) const { real.remove(p); }
    void sync_directory(const std::filesystem::path& d) const { real.sync_directory(d); }
    [[nodiscard]] file lock(const std::filesystem::path& p) const { return real.lock(p); }
};
static_assert(strata::file_system<counting_fs>);

using counted_log = strata::basic_file_log<counting_fs>;

constexpr std::size_t record_frame = 29 + 6 + 20;  // key "k00042", a 20-byte value

record record_at(offset_t i, std::size_t keys) {
    char key[8];
    std::snprintf(key, sizeof key, "k%05u", static_cast<unsigned>(i % keys));
    return make_record(key, std::string(20, static_cast<char>('a' + i % 26)), i);
}

/// A log of n records over `keys` keys, 100 records a flush, in segments of
/// `segment_bytes`, never compacted (every record stays where it was written).
std::vector<record> build(const std::filesystem::path& dir, offset_t n, std::uint64_t segment_bytes,
                          std::size_t keys = 1'000'000) {
    std::vector<record> out;
    strata::file_log log(dir, {.segment_bytes = segment_bytes, .index_interval_bytes = 4096, .auto_compact = false});
    for (offset_t i = 0; i < n; ++i) {
        out.push_back(record_at(i, keys));
        log.append(out.back().view());
        if ((i + 1) % 100 == 0) log.flush();
    }
    log.flush();
    return out;
}

std::uint64_t size_of(const std::filesystem::path& p) { return std::filesystem::file_size(p); }

}  // namespace

TEST_CASE("opening a log reads the index of each sealed segment, not its records", "[file_log][index]") {
    temp_dir small_dir, large_dir;
    const strata::file_log_options opts{.segment_bytes = 64 * 1024, .index_interval_bytes = 4096, .auto_compact = false};
    const auto small = build(small_dir.path(), 5'000, opts.segment_bytes);
    const auto large = build(large_dir.path(), 50'000, opts.segment_bytes);

    auto bytes_to_open = [&](const std::filesystem::path& dir, std::size_t& sealed) {
        counting_fs fs;
        counted_log log(dir, opts, fs);
        const auto paths = log.segment_paths();
        sealed = paths.size() - 1;
        std::uint64_t segment_bytes = 0;
        for (std::size_t i = 0; i + 1 < paths.size(); ++i) {
            INFO(paths[i]);
            // The last frame (the commit frame) of each sealed segment, to
            // check that the file ends where its index says.
            CHECK(fs.read_from(paths[i]) == strata::test::commit_frame_size);
            // And its index, whole: a few entries of 16 bytes for 64 KiB.
            const auto index = paths[i].parent_path() / strata::detail::index_file_name(log.segment_base_offsets()[i]);
            CHECK(fs.read_from(index) == size_of(index));
            CHECK(size_of(index) <= strata::detail::index_header_size + 16 * 16);
            segment_bytes += fs.read_from(paths[i]);
        }
        // The active segment is read whole: a crash may have torn its tail.
        CHECK(fs.read_from(paths.back()) == size_of(paths.back()));
        return segment_bytes;
    };
    std::size_t small_sealed = 0, large_sealed = 0;
    const auto small_read = bytes_to_open(small_dir.path(), small_sealed);
    const auto large_read = bytes_to_open(large_dir.path(), large_sealed);
    REQUIRE(small_sealed >= 3);
    REQUIRE(large_sealed >= 10 * small_sealed - 1);
    // Ten times the data, ten times the segments: the bytes read per sealed
    // segment stay the same, not its bytes.
    CHECK(large_read / large_sealed == small_read / small_sealed);

    // And what it opened is the log: every record, in place.
    strata::file_log log(large_dir.path(), opts);
    CHECK(log.durable_offset() == large.size());
    CHECK(collect(log.replay(0)) == large);
    CHECK(strata::file_log::verify(large_dir.path()).unindexed_segments.empty());
}

TEST_CASE("a sealed segment whose index is missing, damaged or stale is read whole, and indexed again",
          "[file_log][index]") {
    temp_dir dir;
    const strata::file_log_options opts{.segment_bytes = 16 * 1024, .index_interval_bytes = 4096, .auto_compact = false};
    const auto records = build(dir.path(), 2'000, opts.segment_bytes);
    std::vector<std::filesystem::path> paths;
    std::vector<offset_t> bases;
    {
        strata::file_log log(dir.path(), opts);
        paths = log.segment_paths();
        bases = log.segment_base_offsets();
    }
    REQUIRE(paths.size() >= 4);
    const auto victim = paths[1];
    const auto index = dir / strata::detail::index_file_name(bases[1]);
    REQUIRE(std::filesystem::exists(index));

    SECTION("missing: a log written before indexes existed") { std::filesystem::remove(index); }
    SECTION("a flipped bit in its header") {
        auto b = read_bytes(index);
        b[20] = static_cast<char>(b[20] ^ 1);
        write_bytes(index, b);
    }
    SECTION("a flipped bit in its entries") {
        auto b = read_bytes(index);
        b.back() = static_cast<char>(b.back() ^ 1);
        write_bytes(index, b);
    }
    SECTION("the index of another segment") {
        std::filesystem::copy_file(dir / strata::detail::index_file_name(bases[2]), index,
                                   std::filesystem::copy_options::overwrite_existing);
    }
    SECTION("an index cut short") {
        auto b = read_bytes(index);
        b.resize(40);
        write_bytes(index, b);
    }

    const auto check = strata::file_log::verify(dir.path());
    CHECK(check.intact);
    REQUIRE(check.unindexed_segments.size() == 1);
    CHECK(check.unindexed_segments[0] == victim);
    {
        counting_fs fs;
        counted_log log(dir.path(), opts, fs);
        CHECK(fs.read_from(victim) == size_of(victim));  // scanned, frame by frame
        CHECK(fs.read_from(paths[2]) == strata::test::commit_frame_size);
        CHECK(collect(log.replay(0)) == records);
        // A replay from inside it cannot trust the index either, and is right.
        const offset_t from = bases[1] + (bases[2] - bases[1]) * 3 / 4;
        const auto tail = collect(log.replay(from));
        REQUIRE(tail.size() == records.size() - from);
        CHECK(tail.front() == records[from]);
    }
    // Opening wrote its index back: the next open reads only that.
    CHECK(strata::file_log::verify(dir.path()).unindexed_segments.empty());
    counting_fs fs;
    counted_log log(dir.path(), opts, fs);
    CHECK(fs.read_from(victim) == strata::test::commit_frame_size);
    CHECK(collect(log.replay(0)) == records);
}

TEST_CASE("an index never stands in for a segment of another size", "[file_log][index]") {
    temp_dir dir;
    const strata::file_log_options opts{.segment_bytes = 16 * 1024, .index_interval_bytes = 4096, .auto_compact = false};
    const auto records = build(dir.path(), 2'000, opts.segment_bytes);
    std::filesystem::path victim;
    {
        strata::file_log log(dir.path(), opts);
        victim = log.segment_paths()[1];
    }
    SECTION("a sealed segment that lost its last flush: the error of a scan, not the index's word") {
        auto b = read_bytes(victim);
        b.resize(b.size() - 100 * record_frame - strata::test::commit_frame_size);
        write_bytes(victim, b);
        CHECK_THROWS_AS(strata::file_log(dir.path(), opts), strata::corruption_error);
    }
    SECTION("a sealed segment with bytes after its last flush") {
        auto b = read_bytes(victim);
        b.insert(b.end(), {'x', 'y', 'z'});
        write_bytes(victim, b);
        CHECK_THROWS_AS(strata::file_log(dir.path(), opts), strata::corruption_error);
    }
    SECTION("damage inside a sealed segment: opening does not read it, replay and verify report it") {
        auto b = read_bytes(victim);
        b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x40);
        write_bytes(victim, b);
        strata::file_log log(dir.path(), opts);
        try {
            (void)collect(log.replay(0));
            FAIL("replay read damaged bytes without an error");
        } catch (const strata::corruption_error& e) {
            CHECK(e.file() == victim.string());
        }
        const auto check = strata::file_log::verify(dir.path());
        CHECK_FALSE(check.intact);
        CHECK(check.damaged_file == victim);
    }
}

TEST_CASE("replay(from) reads from the segment holding `from` on, starting near `from`", "[file_log][index]") {
    temp_dir dir;
    const strata::file_log_options opts{.segment_bytes = 256 * 1024, .index_interval_bytes = 4096, .auto_compact = false};
    const auto records = build(dir.path(), 20'000, opts.segment_bytes);
    counting_fs fs;
    counted_log log(dir.path(), opts, fs);
    const auto paths = log.segment_paths();
    const auto bases = log.segment_base_offsets();
    REQUIRE(paths.size() >= 4);

    auto check_from = [&](std::size_t seg, offset_t from) {
        INFO("segment " << seg << ", from " << from);
        fs.reset();
        const auto got = collect(log.replay(from));
        REQUIRE(got.size() == records.size() - from);
        CHECK(got.front() == records[from]);
        CHECK(got.back() == records.back());
        for (std::size_t i = 0; i < seg; ++i) CHECK(fs.read_from(paths[i]) == 0);
        // Every record before `from` in its segment takes at least
        // record_frame bytes; the start may be up to one index interval (and
        // the frame that crosses it) early.
        const std::uint64_t skipped = (from - bases[seg]) * record_frame;
        CHECK(fs.read_from(paths[seg]) <= size_of(paths[seg]) - skipped + opts.index_interval_bytes + record_frame);
        CHECK(fs.read_from(paths[seg]) > 0);
    };
    check_from(1, bases[1] + (bases[2] - bases[1]) * 9 / 10);  // a sealed segment, by its index file
    check_from(2, bases[2] + 1234);
    check_from(paths.size() - 1, records.size() - 150);        // the active segment, by its entries in memory

    // Appends after opening keep the active segment's entries current (until
    // the active segment, maybe a new one, holds 2000 records).
    std::vector<record> more = records;
    for (offset_t i = records.size(); i < records.size() + 3000 || i - log.segment_base_offsets().back() < 2000; ++i) {
        more.push_back(record_at(i, 1'000'000));
        log.append(more.back().view());
        if (i % 100 == 0) log.flush();
    }
    log.flush();
    fs.reset();
    const offset_t active_base = log.segment_base_offsets().back();
    const offset_t from = active_base + (more.size() - active_base) * 3 / 4;
    const auto got = collect(log.replay(from));
    REQUIRE(got.size() == more.size() - from);
    CHECK(got.front() == more[from]);
    const auto active = log.segment_paths().back();
    CHECK(fs.read_from(active) <= size_of(active) - (from - active_base) * record_frame + opts.index_interval_bytes + record_frame);
}
