// Fuzz target: the two small files beside a file_log's segments
// (strata/changelog/detail/log_metadata.hpp): the manifest, through
// decode_manifest, and the witness, through decode_witness.
//
// Input: one mode byte, then the file's bytes. Mode bit 0: the bytes are a
// witness, else a manifest. Mode bit 1 rewrites the checksums first
// (fuzz_support.hpp), so that mutated counts, offsets and sequences are
// looked at instead of stopping at a checksum.
//
// Expected: the decoded file, or nullopt (with a problem named, for the
// manifest). A manifest must encode back to exactly its bytes and list its
// segments in ascending order; a witness must be the newest intact slot.
// Anything else is a finding.

#include "fuzz_support.hpp"

#include <strata/changelog/detail/log_metadata.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace {

void manifest(strata::byte_buffer& bytes, bool fix) {
    if (fix) strata_fuzz::fix_trailing_checksum(bytes);
    const char* problem = nullptr;
    const auto m = strata::detail::decode_manifest(bytes, problem);
    if (!m) {
        strata_fuzz::expect(problem != nullptr, "decode_manifest refused a manifest without naming the problem");
        return;
    }
    strata_fuzz::expect(!m->empty(), "decode_manifest accepted a manifest without segments");
    for (std::size_t i = 1; i < m->size(); ++i)
        strata_fuzz::expect((*m)[i - 1].base < (*m)[i].base, "decode_manifest accepted segments out of order");
    const strata::byte_buffer again = strata::detail::encode_manifest(*m);
    strata_fuzz::expect(again == bytes, "a decoded manifest does not encode back to its bytes");
}

void witness(strata::byte_buffer& bytes, bool fix) {
    if (fix) strata_fuzz::fix_witness_checksums(bytes);
    const auto w = strata::detail::decode_witness(bytes);
    // The newest intact slot, found by hand.
    std::optional<std::uint64_t> newest;
    std::size_t newest_at = 0;
    for (std::size_t at = 0; at + strata::detail::witness_slot_size <= bytes.size();
         at += strata::detail::witness_slot_stride) {
        const strata::byte_buffer slot(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                       bytes.begin() + static_cast<std::ptrdiff_t>(at + 36));
        strata::byte_buffer sealed = slot;
        strata::detail::put_le<std::uint32_t>(sealed, strata::detail::crc32c(slot));
        if (!std::equal(sealed.begin(), sealed.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at))) continue;
        if (!std::equal(strata::detail::witness_magic.begin(), strata::detail::witness_magic.end(), slot.begin()))
            continue;
        const std::uint64_t seq = strata::detail::load_le<std::uint64_t>(slot.data() + 4);
        if (!newest || seq > *newest) {
            newest = seq;
            newest_at = at;
        }
    }
    strata_fuzz::expect(w.has_value() == newest.has_value(), "decode_witness disagrees on whether a slot is intact");
    if (!w) return;
    const strata::byte_buffer again = strata::detail::encode_witness(*w);
    strata_fuzz::expect(std::equal(again.begin(), again.end(), bytes.begin() + static_cast<std::ptrdiff_t>(newest_at)),
                        "decode_witness did not return the newest intact slot");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::allocation_watch watch(size, {});
    strata_fuzz::input in(data, size);
    const std::uint8_t mode = in.u8();
    const strata::bytes_view rest = in.rest();
    strata::byte_buffer bytes(rest.begin(), rest.end());
    if ((mode & 1) != 0) witness(bytes, (mode & 2) != 0);
    else manifest(bytes, (mode & 2) != 0);
    return 0;
}
