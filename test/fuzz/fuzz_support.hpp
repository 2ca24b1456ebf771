#pragma once
// Helpers shared by the libFuzzer targets in test/fuzz/: a cursor that splits
// one fuzz input into parts, the checksum fix-ups that let mutated formats get
// past their CRCs, the allocation bound every target checks, and `finding`,
// which turns a broken expectation into a crash libFuzzer reports.
//
// The allocation bound: while a target decodes one input, the bytes it holds
// allocated at any moment (its peak, over what was live when it started) may
// not exceed `per_input_byte` times the input's size plus `fixed` bytes. Every
// malloc and free is seen through the sanitizer's allocation hooks, so a
// decoder that turns a few bytes into megabytes is a finding even when no
// single allocation is large (libFuzzer's -malloc_limit_mb only sees single
// allocations, -rss_limit_mb only the whole process). The peak and its ratio
// to the input also feed libFuzzer's coverage (extra counters), which steers
// the search toward inputs that allocate more and more per byte.

#include <strata/detail/crc32c.hpp>
#include <strata/changelog/detail/frame.hpp>
#include <strata/detail/little_endian.hpp>
#include <strata/core/bytes.hpp>

#include <sanitizer/allocator_interface.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace strata_fuzz {

using strata::byte_buffer;
using strata::bytes_view;

/// Reports a broken expectation and aborts: libFuzzer saves the input.
[[noreturn]] inline void finding(std::string_view what) {
    std::fprintf(stderr, "strata fuzz finding: %.*s\n", static_cast<int>(what.size()), what.data());
    std::abort();
}

inline void expect(bool ok, std::string_view what) {
    if (!ok) finding(what);
}

// ------------------------------------------------------------ input cursor --

/// Reads a fuzz input front to back; every read past the end yields zeros or
/// fewer bytes, never fails, so that every input means something.
class input {
public:
    input(const std::uint8_t* data, std::size_t size) noexcept
        : data_(reinterpret_cast<const std::byte*>(data), size) {}
    explicit input(bytes_view b) noexcept : data_(b) {}

    [[nodiscard]] bool empty() const noexcept { return pos_ >= data_.size(); }
    [[nodiscard]] std::size_t remaining() const noexcept { return data_.size() - pos_; }

    std::uint8_t u8() noexcept {
        if (empty()) return 0;
        return std::to_integer<std::uint8_t>(data_[pos_++]);
    }
    std::uint16_t u16() noexcept {
        const auto lo = u8();
        return static_cast<std::uint16_t>(lo | (u8() << 8));
    }
    std::uint64_t u64() noexcept {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(u8()) << (8 * i);
        return v;
    }
    /// Up to n bytes (fewer at the end).
    bytes_view bytes(std::size_t n) noexcept {
        n = std::min(n, remaining());
        const bytes_view out = data_.subspan(pos_, n);
        pos_ += n;
        return out;
    }
    bytes_view rest() noexcept { return bytes(remaining()); }

private:
    bytes_view data_;
    std::size_t pos_ = 0;
};

// ---------------------------------------------------------- checksum fix-up --

/// Rewrites the checksums of every frame found in a segment's bytes, front
/// to back: a frame whose prefix promises more bytes than there are gets its
/// prefix checksum only (a torn frame), and bytes that are not a frame's
/// magic are skipped one at a time. Lengths, offsets and flags stay as the
/// fuzzer made them.
inline void fix_frame_checksums(byte_buffer& seg) {
    namespace frame = strata::detail::frame;
    using strata::detail::crc32c;
    using strata::detail::load_le;
    using strata::detail::store_le;
    std::size_t pos = 0;
    while (pos + frame::prefix_size <= seg.size()) {
        std::byte* p = seg.data() + pos;
        if (!std::equal(frame::magic.begin(), frame::magic.end(), p)) {
            ++pos;
            continue;
        }
        const std::uint32_t body_len = load_le<std::uint32_t>(p + 4);
        const bool fits = body_len >= frame::body_header_size && body_len <= seg.size() - pos - frame::prefix_size;
        if (fits) store_le<std::uint32_t>(p + 8, crc32c(bytes_view(p + frame::prefix_size, body_len)));
        store_le<std::uint32_t>(p + 12, crc32c(bytes_view(p, 12)));
        pos += fits ? frame::prefix_size + body_len : 1;
    }
}

/// Rewrites a trailing CRC32C over every byte before it (manifest, checkpoint).
inline void fix_trailing_checksum(byte_buffer& b) {
    if (b.size() < 4) return;
    strata::detail::store_le<std::uint32_t>(b.data() + b.size() - 4,
                                            strata::detail::crc32c(bytes_view(b).first(b.size() - 4)));
}

/// Rewrites the checksum of every witness slot (40 bytes every 512).
inline void fix_witness_checksums(byte_buffer& b) {
    for (std::size_t at = 0; at + 40 <= b.size(); at += 512)
        strata::detail::store_le<std::uint32_t>(b.data() + at + 36,
                                                strata::detail::crc32c(bytes_view(b.data() + at, 36)));
}

// -------------------------------------------------------- allocation bound --

namespace detail {
/// libFuzzer "extra counters": one per quarter of a power of two of the
/// bytes held at the peak, and of those bytes per input byte. An input that
/// reaches a level no input reached before is new coverage to libFuzzer,
/// which keeps it and mutates it further, so the search climbs toward the
/// inputs that allocate the most.
extern "C" {
__attribute__((section("__libfuzzer_extra_counters"), used)) inline std::uint8_t allocation_counters[2 * 256];
}

/// 4 levels per power of two: the position of the top bit and the two bits below it.
inline std::size_t level(std::size_t n) {
    const int top = std::bit_width(n);
    if (top <= 2) return static_cast<std::size_t>(n);
    return static_cast<std::size_t>(top) * 4 + ((n >> (top - 3)) & 3);
}

inline std::size_t live_bytes = 0;
inline std::size_t peak_bytes = 0;
inline bool hooks_installed = false;

inline void on_malloc(const volatile void*, std::size_t size) {
    live_bytes += size;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
}
inline void on_free(const volatile void* p) {
    if (p == nullptr) return;
    const std::size_t size = __sanitizer_get_allocated_size(p);
    live_bytes -= std::min(size, live_bytes);
}
}  // namespace detail

/// Bytes a target may hold on top of what was live when it started: a small
/// multiple of the input, plus a fixed allowance for buffers of fixed size.
struct allocation_bound {
    std::size_t per_input_byte = 64;
    std::size_t fixed = std::size_t{1} << 20;
};

/// Watches the allocations of one input's run; `check()` reports a peak over
/// the bound as a finding.
class allocation_watch {
public:
    allocation_watch(std::size_t input_size, allocation_bound bound) : input_size_(input_size), bound_(bound) {
        if (!detail::hooks_installed) {
            __sanitizer_install_malloc_and_free_hooks(detail::on_malloc, detail::on_free);
            detail::hooks_installed = true;
        }
        start_ = detail::live_bytes;
        detail::peak_bytes = detail::live_bytes;
    }
    allocation_watch(const allocation_watch&) = delete;
    allocation_watch& operator=(const allocation_watch&) = delete;
    ~allocation_watch() { check(); }

    [[nodiscard]] std::size_t peak() const noexcept { return detail::peak_bytes - std::min(start_, detail::peak_bytes); }

    void check() const {
        detail::allocation_counters[std::min<std::size_t>(detail::level(peak()), 255)] = 1;
        detail::allocation_counters[256 + std::min<std::size_t>(detail::level(peak() / (input_size_ + 1)), 255)] = 1;
        const std::size_t limit = bound_.per_input_byte * input_size_ + bound_.fixed;
        if (peak() > limit) {
            char msg[200];
            std::snprintf(msg, sizeof msg, "a %zu-byte input held %zu bytes allocated at its peak (bound %zu x %zu + %zu = %zu)",
                          input_size_, peak(), bound_.per_input_byte, input_size_, bound_.fixed, limit);
            finding(msg);
        }
    }

private:
    std::size_t input_size_;
    allocation_bound bound_;
    std::size_t start_ = 0;
};

}  // namespace strata_fuzz
