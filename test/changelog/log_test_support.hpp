#pragma once
// Helpers shared by the changelog tests: scratch directories, raw file
// access, and owning copies of replayed records.

#include <support/temp_dir.hpp>
#include <strata/core/bytes.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace strata::test {

/// A fresh directory under the system temp dir, removed at scope exit.
using temp_dir = test_support::temp_dir;

inline std::vector<char> read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<char>& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// An owning record built from strings; nullopt value = tombstone.
inline record make_record(std::string_view key, std::optional<std::string_view> value,
                          offset_t offset = 0) {
    record_view v{as_bytes(key), std::nullopt, offset};
    if (value) v.value = as_bytes(*value);
    return record(v);
}

/// Copies every record a replay yields (the views die as the iterator moves).
template <class Range>
std::vector<record> collect(Range&& replay) {
    std::vector<record> out;
    for (record_view r : replay) out.emplace_back(r);
    return out;
}

inline std::string str(const byte_buffer& b) { return std::string(as_chars(b)); }

/// Bytes one record takes in a file_log segment (see changelog/detail/frame.hpp).
inline std::size_t frame_size(const record& r) {
    return 29 + (r.timestamp != no_timestamp ? 8 : 0) + r.key.size() + (r.value ? r.value->size() : 0);
}

/// Bytes of the commit frame that ends each flush.
inline constexpr std::size_t commit_frame_size = 37;

/// The file in which a file_log notes how far it was flushed. A test that
/// tears the last flush by hand puts back the note as it was before that
/// flush: a crash during the flush's write leaves it so.
inline std::filesystem::path witness_file(const std::filesystem::path& dir) { return dir / "strata.flushed"; }

}  // namespace strata::test
