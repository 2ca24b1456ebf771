// strata-log, run as a user would: verify reports damage and changes
// nothing; repair cuts the log to its last intact flush.

#include <strata/changelog/file_log.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <cstdio>
#include <string>
#include <utility>

#include <sys/wait.h>

namespace {

/// Runs the tool; returns its exit status and its standard output.
std::pair<int, std::string> run(const std::string& args) {
    const std::string command = std::string(STRATA_LOG_TOOL) + " " + args + " 2>&1";
    FILE* p = ::popen(command.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = ::pclose(p);
    REQUIRE(WIFEXITED(status));
    return {WEXITSTATUS(status), out};
}

}  // namespace

TEST_CASE("strata-log verify finds damage without changing the log, and repair cuts to the last intact flush",
          "[tools]") {
    strata::test::temp_dir dir;
    const auto log_dir = dir.path() / "log";
    std::filesystem::path seg;
    {
        strata::file_log log(log_dir);
        for (int i = 0; i < 10; ++i) {
            log.append(strata::test::make_record("k" + std::to_string(i), "v").view());
            log.flush();
        }
        seg = log.segment_paths().back();
    }
    auto [ok, intact] = run("verify " + log_dir.string());
    INFO(intact);
    CHECK(ok == 0);
    CHECK(intact.find("intact:           yes") != std::string::npos);
    CHECK(intact.find("offset 10 (10 records") != std::string::npos);

    // Flip a bit in the body of the 6th record's frame: 5 flushes of a
    // 32-byte record ("k0" = "v") and a commit frame come before it.
    const std::size_t frame = 32 + strata::test::commit_frame_size;
    auto bytes = strata::test::read_bytes(seg);
    bytes[5 * frame + 20] = static_cast<char>(bytes[5 * frame + 20] ^ 4);
    strata::test::write_bytes(seg, bytes);

    auto [damaged, report] = run("verify " + log_dir.string());
    INFO(report);
    CHECK(damaged == 1);
    CHECK(report.find(seg.string() + " at byte offset " + std::to_string(5 * frame)) != std::string::npos);
    CHECK(report.find("offset 5 (5 records") != std::string::npos);
    CHECK(strata::test::read_bytes(seg) == bytes);

    auto [repaired, what] = run("repair " + log_dir.string());
    INFO(what);
    CHECK(repaired == 0);
    CHECK(what.find("the log now ends at offset 5") != std::string::npos);
    CHECK(run("verify " + log_dir.string()).first == 0);
    strata::file_log log(log_dir);
    CHECK(log.end_offset() == 5);

    CHECK(run("verify").first == 2);
    CHECK(run("verify " + (dir.path() / "nothing here").string()).first == 2);
}

TEST_CASE("strata-log verify names sealed segments without a usable index, which opening indexes again", "[tools]") {
    strata::test::temp_dir dir;
    const auto log_dir = dir.path() / "log";
    std::vector<std::filesystem::path> segs;
    std::vector<strata::offset_t> bases;
    {
        strata::file_log log(log_dir, {.segment_bytes = 200, .auto_compact = false});
        for (int i = 0; i < 20; ++i) {
            log.append(strata::test::make_record("k" + std::to_string(i), "value").view());
            log.flush();
        }
        segs = log.segment_paths();
        bases = log.segment_base_offsets();
    }
    REQUIRE(segs.size() >= 3);
    auto [ok, report] = run("verify " + log_dir.string());
    INFO(report);
    CHECK(ok == 0);
    CHECK(report.find("no usable index") == std::string::npos);

    // As a log written before sealed segments had indexes.
    std::filesystem::remove(log_dir / strata::detail::index_file_name(bases[1]));
    auto [still_ok, unindexed] = run("verify " + log_dir.string());
    INFO(unindexed);
    CHECK(still_ok == 0);  // not damage
    CHECK(unindexed.find("no usable index:  " + segs[1].string()) != std::string::npos);
    CHECK(unindexed.find(segs[0].string() + " (opening") == std::string::npos);

    { strata::file_log reopened(log_dir); }
    CHECK(run("verify " + log_dir.string()).second.find("no usable index") == std::string::npos);
}
