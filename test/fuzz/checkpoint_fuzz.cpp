// Fuzz target: a checkpoint file (strata/restore/checkpoint.hpp), read
// through checkpoint_file::entries and load.
//
// Input: one mode byte, then the file's bytes, written as the checkpoint file
// in a scratch directory (under $TMPDIR; scripts/fuzz.sh points it at
// /dev/shm when it can). Mode bit 0 rewrites the trailing checksum first, so
// that mutated counts and lengths are parsed instead of stopping at it.
//
// Expected: the entries, or strata::corruption_error. Every entry must load
// back by its own key (the first few are checked). Anything else is a finding.

#include "fuzz_support.hpp"

#include <strata/core/error.hpp>
#include <strata/restore/checkpoint.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <stdlib.h>

namespace {

std::filesystem::path scratch;

void remove_scratch() {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strata-fuzz-checkpoint-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) strata_fuzz::finding("mkdtemp failed for " + tmpl);
    scratch = tmpl;
    std::atexit(remove_scratch);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::input in(data, size);
    const std::uint8_t mode = in.u8();
    const strata::bytes_view rest = in.rest();
    strata::byte_buffer bytes(rest.begin(), rest.end());
    if ((mode & 1) != 0) strata_fuzz::fix_trailing_checksum(bytes);
    const auto path = scratch / "checkpoint";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!out) strata_fuzz::finding("cannot write " + path.string());
    }

    strata_fuzz::allocation_watch watch(size, {});
    const strata::checkpoint_file file(path);
    strata::checkpoint_file::entries_type all;
    try {
        all = file.entries();
    } catch (const strata::corruption_error& e) {
        strata_fuzz::expect(e.file() == path.string(), "a corruption_error names another file");
        strata_fuzz::expect(e.byte_offset() <= bytes.size(), "a corruption_error points past the end of the file");
        return 0;
    }
    // load() reads the whole file again: a few entries are enough.
    std::size_t checked = 0;
    for (const auto& [key, offset] : all) {
        if (++checked > 4) break;
        strata_fuzz::expect(file.load(key.first, key.second) == offset, "an entry does not load back by its key");
    }
    return 0;
}
