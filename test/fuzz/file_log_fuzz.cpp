// Fuzz target: a file_log directory (strata/changelog/file_log.hpp) made of
// untrusted bytes, on test_support::fault_file_system (in memory, no disk).
//
// Input: a mode byte, then the directory.
//   mode bit 0: rewrite the checksums of the frames in the segment files
//   mode bit 1: rewrite the manifest's checksum
//   mode bit 2: rewrite the witness slots' checksums
//     (fuzz_support.hpp; so that mutated lengths, offsets, flags, segment
//     lists and witnesses are looked at instead of stopping at a checksum)
//   mode bit 3: the rest is a list of files (below); else the rest is the
//     only segment (base offset 0), with a manifest listing it as active
//   mode bit 4: (only segment) and no manifest at all
//   mode bit 5: after a successful open, append, flush and compact, reopen
//   mode bit 6: repair the directory, then it must verify intact and open
// A list of files: entries until the input ends, each a selector byte and,
// by selector % 5: 0 the manifest, 1 the witness, 2 a leftover
// strata.manifest.tmp, each followed by a u16 little-endian length and the
// bytes; 3 a segment, 4 a leftover compaction file of a segment, each
// followed by a u64 little-endian base offset, a u16 length and the bytes.
//
// Then: file_log::verify, open, replay everything, and (bits 5, 6) more.
// Expected: corruption_error or changelog_error where the log refuses, and
// the promises of file_log.hpp where it does not:
// - verify and open agree: open fails with corruption_error naming the same
//   file and byte exactly when verify finds damage, and then changes nothing;
// - an opened log replays verify's count of records, in ascending offsets
//   below its end offset, which is verify's intact end;
// - after appends, a flush and a compaction, the log verifies intact and
//   replays to the same latest record of every key;
// - after repair, the log verifies intact and opens at the intact end.
// Anything else is a finding: a crash, UB, a leak, another exception, a
// broken promise, or an allocation over the bound of fuzz_support.hpp.

#include "fuzz_support.hpp"

#include <support/fault_file_system.hpp>

#include <strata/changelog/detail/log_metadata.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/changelog/file_log.hpp>
#include <strata/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using fs_t = test_support::fault_file_system;
using log_t = strata::basic_file_log<fs_t>;
using strata::byte_buffer;
using strata_fuzz::expect;

const std::filesystem::path dir = "/log";

/// Where the run is: corruption_error and changelog_error are expected from
/// verify, open and repair, and are findings anywhere else (a log that
/// opened, or was repaired, must work).
bool refusal_expected = true;
const char* step = "";

void enter(const char* name, bool may_refuse) {
    step = name;
    refusal_expected = may_refuse;
}

void put_file(const fs_t& fs, const std::string& name, byte_buffer bytes) {
    const auto p = dir / name;
    const auto f = fs.create_truncated(p);
    fs.append(f, bytes, p);
}

byte_buffer to_buffer(strata::bytes_view b) { return byte_buffer(b.begin(), b.end()); }

/// Writes the directory the input describes.
void build(const fs_t& fs, std::uint8_t mode, strata_fuzz::input& in) {
    const bool fix_frames = (mode & 1) != 0, fix_manifest = (mode & 2) != 0, fix_witness = (mode & 4) != 0;
    auto segment = [&](byte_buffer b) {
        if (fix_frames) strata_fuzz::fix_frame_checksums(b);
        return b;
    };
    if ((mode & 8) == 0) {
        put_file(fs, strata::detail::segment_file_name(0), segment(to_buffer(in.rest())));
        if ((mode & 16) == 0) put_file(fs, std::string(strata::detail::manifest_name), strata::detail::encode_manifest({{0, 0}}));
        return;
    }
    while (!in.empty()) {
        const std::uint8_t selector = in.u8() % 5;
        const std::uint64_t base = selector >= 3 ? in.u64() : 0;
        byte_buffer b = to_buffer(in.bytes(in.u16()));
        switch (selector) {
            case 0:
                if (fix_manifest) strata_fuzz::fix_trailing_checksum(b);
                put_file(fs, std::string(strata::detail::manifest_name), std::move(b));
                break;
            case 1:
                if (fix_witness) strata_fuzz::fix_witness_checksums(b);
                put_file(fs, std::string(strata::detail::witness_name), std::move(b));
                break;
            case 2:
                put_file(fs, std::string(strata::detail::manifest_temp_name), std::move(b));
                break;
            case 3:
                put_file(fs, strata::detail::segment_file_name(base), segment(std::move(b)));
                break;
            default:
                put_file(fs, strata::detail::segment_file_name(base) + ".compacting", segment(std::move(b)));
                break;
        }
    }
}

/// The directory's files and their bytes, but for the lock file and the
/// leftovers that opening removes before it looks at anything.
std::map<std::string, byte_buffer> snapshot(const fs_t& fs) {
    std::map<std::string, byte_buffer> out;
    for (const auto& name : fs.list(dir)) {
        if (name == "strata.lock" || name == strata::detail::manifest_temp_name || name.ends_with(".compacting"))
            continue;
        out[name] = fs.contents(dir / name).value_or(byte_buffer{});
    }
    return out;
}

struct replayed {
    std::uint64_t records = 0;
    std::map<byte_buffer, std::optional<byte_buffer>> latest;  ///< by key; nullopt: a tombstone
};

/// Replays the whole log, checking the order of the offsets.
replayed replay_all(const log_t& log) {
    replayed out;
    std::optional<strata::offset_t> last;
    for (const strata::record_view r : log.replay(0)) {
        expect(!last || r.offset > *last, "replay yields offsets out of order");
        expect(r.offset < log.end_offset(), "replay yields an offset at or past the log's end");
        last = r.offset;
        ++out.records;
        auto& slot = out.latest[byte_buffer(r.key.begin(), r.key.end())];
        slot.reset();
        if (r.value) slot.emplace(r.value->begin(), r.value->end());
    }
    return out;
}

/// Appends, flushes and compacts an open log; it must then verify intact and
/// replay to the same latest records, and reopen.
void append_and_compact(const fs_t& fs, std::optional<log_t>& log, replayed before) {
    const std::string key = "fuzz-key";
    const std::string value = "fuzz-value";
    static_cast<void>(log->append({strata::as_bytes(key), strata::as_bytes(value)}));
    static_cast<void>(log->append({strata::as_bytes(key), std::nullopt}));
    const strata::offset_t end = log->flush();
    before.latest[to_buffer(strata::as_bytes(key))].reset();
    static_cast<void>(log->compact());
    const replayed after = replay_all(*log);
    expect(after.latest == before.latest, "compaction changed the latest record of a key");
    log.reset();

    const strata::file_log_check c = log_t::verify(dir, fs);
    expect(c.intact, "a log verifies damaged after a flush and a compaction: " + c.problem);
    expect(c.intact_end == end, "a log's intact end is not where its last flush ended");
    log.emplace(dir, strata::file_log_options{}, fs);
    expect(replay_all(*log).latest == before.latest, "a reopened log replays other records than before it closed");
    log.reset();
}

void repair_and_reopen(const fs_t& fs) {
    enter("repair", true);
    const strata::file_log_check r = log_t::repair(dir, fs);
    enter("a repaired log", false);
    const strata::file_log_check c = log_t::verify(dir, fs);
    expect(c.intact, "a repaired log verifies damaged: " + c.problem);
    expect(c.intact_end == r.intact_end, "a repaired log does not end at the intact end repair found");
    expect(c.unfinished_bytes == 0 && c.stray_files.empty(), "a repaired log still has bytes or files to cut");
    log_t log(dir, strata::file_log_options{}, fs);
    expect(log.end_offset() == r.intact_end, "a repaired log opens at another end than repair found");
    expect(replay_all(log).records == c.records, "a repaired log replays another number of records than verify counts");
}

void run(std::uint8_t mode, strata_fuzz::input& in) {
    const fs_t fs;
    fs.create_directories(dir);
    build(fs, mode, in);

    enter("verify", true);
    const strata::file_log_check check = log_t::verify(dir, fs);
    const auto files = snapshot(fs);
    std::optional<log_t> log;
    enter("open", true);
    try {
        // Small segments, so that the appends below roll one now and then.
        log.emplace(dir, strata::file_log_options{.segment_bytes = 512}, fs);
    } catch (const strata::corruption_error& e) {
        expect(!check.intact, std::string("open refused a log that verifies intact: ") + e.what());
        expect(e.file() == check.damaged_file.string() && e.byte_offset() == check.damaged_byte,
               "open and verify name different damage");
        expect(snapshot(fs) == files, "an open that refused the log changed its files");
    }
    if (log) {
        enter("an opened log", false);
        expect(check.intact, "open accepted a log that verify finds damaged: " + check.problem);
        expect(log->end_offset() == check.intact_end, "an opened log ends elsewhere than verify's intact end");
        expect(log->truncated_bytes() == check.unfinished_bytes, "open cut other bytes than verify said it would");
        replayed r = replay_all(*log);
        expect(r.records == check.records, "an opened log replays another number of records than verify counts");
        if ((mode & 32) != 0) append_and_compact(fs, log, std::move(r));
        log.reset();
    }
    if ((mode & 64) != 0) repair_and_reopen(fs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::allocation_watch watch(size, {});
    strata_fuzz::input in(data, size);
    const std::uint8_t mode = in.u8();
    try {
        run(mode, in);
    } catch (const strata::corruption_error& e) {
        if (!refusal_expected) strata_fuzz::finding(std::string(step) + ": corruption_error: " + e.what());
    } catch (const strata::changelog_error& e) {
        if (!refusal_expected) strata_fuzz::finding(std::string(step) + ": changelog_error: " + e.what());
    } catch (const std::exception& e) {
        strata_fuzz::finding(std::string(step) + ": unexpected exception: " + e.what());
    }
    return 0;
}
