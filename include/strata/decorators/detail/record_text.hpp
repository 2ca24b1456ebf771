#pragma once
/// @file
/// @brief A changelog record key as text, for error messages.

#include <strata/core/bytes.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace strata {

namespace detail {
/// A record key for an error message: printable bytes as text, others in
/// hex, at most 64 bytes of it.
inline std::string abbreviated(bytes_view key) {
    const bool printable = std::all_of(key.begin(), key.end(), [](std::byte b) {
        const auto c = static_cast<unsigned char>(b);
        return c >= 0x20 && c < 0x7f;
    });
    const std::size_t shown = std::min<std::size_t>(key.size(), 64);
    std::string out;
    if (printable) {
        out = "'" + std::string(reinterpret_cast<const char*>(key.data()), shown) + "'";
    } else {
        static constexpr char hex[] = "0123456789abcdef";
        out = "0x";
        for (std::size_t i = 0; i < shown; ++i) {
            const auto c = static_cast<unsigned char>(key[i]);
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    if (shown < key.size()) out += "... (" + std::to_string(key.size()) + " bytes)";
    return out;
}
}  // namespace detail

}  // namespace strata
