#pragma once
/// @file
/// @brief Fixed-width little-endian integers for strata's on-disk formats.
/// Files written on one machine must read back on another, so byte order is
/// part of the format rather than whatever the host uses.

#include <strata/core/bytes.hpp>

#include <cstddef>
#include <cstdint>

namespace strata::detail {

template <class UInt>
inline void put_le(byte_buffer& out, UInt v) {
    for (std::size_t i = 0; i < sizeof(UInt); ++i)
        out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffU));
}

template <class UInt>
inline void store_le(std::byte* at, UInt v) noexcept {
    for (std::size_t i = 0; i < sizeof(UInt); ++i)
        at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffU);
}

/// @pre `at` points to at least sizeof(UInt) readable bytes.
template <class UInt>
[[nodiscard]] inline UInt load_le(const std::byte* at) noexcept {
    UInt v = 0;
    for (std::size_t i = 0; i < sizeof(UInt); ++i)
        v = static_cast<UInt>(v | (static_cast<UInt>(at[i]) << (8 * i)));
    return v;
}

}  // namespace strata::detail
