// Bad bytes in a changelog give a clear error at restore, never a crash.

#include <catch2/catch.hpp>

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <support/temp_dir.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

TEST_CASE("a record the codec cannot decode names the store and the offset", "[restore]") {
    strata::memory_log log;
    {
        auto s = store_t("orders") | strata::logged(log);
        s.put(1, "one");
    }
    const std::string short_key = "abc";  // an int64 key needs 8 bytes
    log.append(strata::record_view{strata::as_bytes(short_key), strata::as_bytes(std::string_view("x"))});
    auto fresh = store_t("orders") | strata::logged(log);
    try {
        fresh.restore();
        FAIL("restore accepted a 3-byte int64 key");
    } catch (const strata::restore_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'orders'") != std::string::npos);
        CHECK(what.find("offset 1") != std::string::npos);
        CHECK(what.find("std::int64_t") != std::string::npos);  // from the nested serde_error
        CHECK(e.offset() == 1);
        REQUIRE_THROWS_AS(std::rethrow_if_nested(e), strata::serde_error);
    }
    REQUIRE(fresh.get(1) == std::optional<std::string>("one"));  // what came before is restored
}

namespace {

/// Writes `records` records (key k, a value of the same length for every k)
/// to `log` through a logged store, one flush each, and returns where each
/// record's frame starts in the log's only segment: the segment's size
/// before the flush that wrote it. No knowledge of the frame format needed.
std::vector<std::uint64_t> write_one_flush_each(strata::file_log& log, std::int64_t records) {
    auto s = store_t("orders") | strata::logged(log);
    REQUIRE(log.segment_count() == 1);
    const auto segment = log.segment_paths().front();
    std::vector<std::uint64_t> starts;
    for (std::int64_t k = 0; k < records; ++k) {
        starts.push_back(std::filesystem::file_size(segment));
        s.put(k, std::string(50, static_cast<char>('a' + k % 26)));
        s.flush();
    }
    REQUIRE(log.segment_count() == 1);
    return starts;
}

/// Flips every bit of the byte at `pos` of `file`, so it surely changes.
void flip_byte(const std::filesystem::path& file, std::uint64_t pos) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(pos));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(pos));
    f.put(static_cast<char>(~c));
    f.flush();
    REQUIRE(f.good());
}

}  // namespace

TEST_CASE("opening a file changelog damaged before its tail refuses, naming the segment file and the damaged frame's byte offset",
          "[restore][file_log]") {
    test_support::temp_dir dir;
    std::filesystem::path segment;
    std::vector<std::uint64_t> starts;
    {
        strata::file_log log(dir.path() / "log");
        starts = write_one_flush_each(log, 20);
        segment = log.segment_paths().front();
    }
    // The first byte of record 7's frame: valid frames follow, so this is no
    // torn tail, and opening must refuse rather than cut.
    const std::uint64_t damaged = starts.at(7);
    REQUIRE(damaged > 0);
    flip_byte(segment, damaged);
    try {
        strata::file_log log(dir.path() / "log");
        FAIL("a segment damaged before its tail was opened");
    } catch (const strata::corruption_error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(e.file() == segment.string());
        CHECK(e.byte_offset() == damaged);
        CHECK(what.find(segment.filename().string()) != std::string::npos);
        CHECK(what.find("byte offset " + std::to_string(damaged) + ":") != std::string::npos);
    }
}

TEST_CASE("a file changelog damaged under an open log fails restore with the file and byte offset, keeping what came before",
          "[restore][file_log]") {
    test_support::temp_dir dir;
    strata::file_log log(dir.path() / "log");
    const std::vector<std::uint64_t> starts = write_one_flush_each(log, 20);
    const auto segment = log.segment_paths().front();

    // Damage record 12's frame, well below the end, while the log is open:
    // the log checked its segments when it opened, so only restore's replay
    // can meet the damage.
    const std::uint64_t damaged = starts.at(12);
    flip_byte(segment, damaged);

    auto fresh = store_t("orders") | strata::logged(log);
    try {
        fresh.restore();
        FAIL("restore read past a damaged frame");
    } catch (const strata::corruption_error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(e.file() == segment.string());
        CHECK(e.byte_offset() == damaged);
        CHECK(what.find(segment.filename().string()) != std::string::npos);
        CHECK(what.find("byte offset " + std::to_string(damaged) + ":") != std::string::npos);
    }
    // The records before the damaged one are restored, and nothing from it on.
    for (std::int64_t k = 0; k < 12; ++k)
        REQUIRE(fresh.get(k) == std::optional<std::string>(std::string(50, static_cast<char>('a' + k % 26))));
    for (std::int64_t k = 12; k < 20; ++k) REQUIRE_FALSE(fresh.get(k).has_value());
}
