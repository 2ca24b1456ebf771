// Fuzz target: one file_log frame (strata/changelog/detail/frame.hpp),
// through check_prefix and decode_body directly, and valid_frame_at.
//
// Input: one mode byte, then the frame's bytes. Mode bit 0 rewrites the
// frame's two checksums first (fuzz_support.hpp), so that mutated lengths,
// flags and offsets reach decode_body instead of stopping at a checksum.
//
// Expected: a frame, or nullopt with a problem named. A frame must encode
// back to exactly its bytes, and valid_frame_at must agree with the two
// steps. Anything else is a finding.

#include "fuzz_support.hpp"

#include <strata/changelog/detail/frame.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace frame = strata::detail::frame;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::allocation_watch watch(size, {});
    strata_fuzz::input in(data, size);
    const std::uint8_t mode = in.u8();
    const strata::bytes_view rest = in.rest();
    strata::byte_buffer bytes(rest.begin(), rest.end());
    if ((mode & 1) != 0) strata_fuzz::fix_frame_checksums(bytes);

    const auto whole = frame::valid_frame_at(bytes.data(), bytes.size());
    if (bytes.size() < frame::prefix_size) {
        strata_fuzz::expect(!whole, "valid_frame_at found a frame in fewer bytes than a prefix");
        return 0;
    }
    const char* problem = nullptr;
    const auto info = frame::check_prefix(bytes.data(), problem);
    if (!info) {
        strata_fuzz::expect(problem != nullptr, "check_prefix refused a prefix without naming the problem");
        strata_fuzz::expect(!whole, "valid_frame_at accepted a prefix check_prefix refused");
        return 0;
    }
    strata_fuzz::expect(info->body_len >= frame::body_header_size && info->body_len <= frame::max_body_size,
                        "check_prefix accepted an impossible body length");
    if (info->frame_size() > bytes.size()) {
        strata_fuzz::expect(!whole, "valid_frame_at accepted a frame that runs past the bytes");
        return 0;
    }
    problem = nullptr;
    const strata::bytes_view body(bytes.data() + frame::prefix_size, info->body_len);
    const auto dec = frame::decode_body(*info, body, problem);
    strata_fuzz::expect(dec.has_value() == whole.has_value(), "valid_frame_at disagrees with check_prefix + decode_body");
    if (!dec) {
        strata_fuzz::expect(problem != nullptr, "decode_body refused a body without naming the problem");
        return 0;
    }

    // The record views lie inside the body.
    const auto inside = [&](strata::bytes_view v) {
        return v.empty() || (v.data() >= body.data() && v.data() + v.size() <= body.data() + body.size());
    };
    strata_fuzz::expect(inside(dec->rec.key) && (!dec->rec.value || inside(*dec->rec.value)),
                        "decode_body returned a view outside the body");

    // One encoding per frame: encoding what was decoded gives the same bytes.
    strata::byte_buffer again;
    if (dec->commit) {
        strata_fuzz::expect(dec->rec.key.empty() && !dec->rec.value, "a commit frame carries a record");
        frame::encode_commit(again, dec->rec.offset, dec->flush_bytes);
    } else {
        strata_fuzz::expect(frame::encoded_size(dec->rec) == info->frame_size(),
                            "encoded_size disagrees with the frame's size");
        frame::encode(again, dec->rec, dec->rec.offset);
    }
    strata_fuzz::expect(again.size() == info->frame_size() && std::equal(again.begin(), again.end(), bytes.begin()),
                        "a decoded frame does not encode back to its bytes");
    return 0;
}
