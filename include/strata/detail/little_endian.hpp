#pragma once
/// @file
/// @brief Fixed-width little-endian integers for strata's on-disk formats.
/// Files written on one machine must read back on another, so byte order is
/// part of the format rather than whatever the host uses.

#include <strata/core/bytes.hpp>

#include <boost/endian/conversion.hpp>

#include <concepts>
#include <cstddef>

namespace strata::detail {

/// @pre `at` points to at least sizeof(UInt) writable bytes.
template <std::unsigned_integral UInt>
inline void store_le(std::byte* at, UInt v) noexcept {
    boost::endian::endian_store<UInt, sizeof(UInt), boost::endian::order::little>(
        reinterpret_cast<unsigned char*>(at), v);
}

/// @pre `at` points to at least sizeof(UInt) readable bytes.
template <std::unsigned_integral UInt>
[[nodiscard]] inline UInt load_le(const std::byte* at) noexcept {
    return boost::endian::endian_load<UInt, sizeof(UInt), boost::endian::order::little>(
        reinterpret_cast<const unsigned char*>(at));
}

/// Appends the sizeof(UInt) bytes of v, least significant first.
template <std::unsigned_integral UInt>
inline void put_le(byte_buffer& out, UInt v) {
    const std::size_t at = out.size();
    out.resize(at + sizeof(UInt));
    store_le(out.data() + at, v);
}

}  // namespace strata::detail
