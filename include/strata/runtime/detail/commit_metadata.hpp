#pragma once
/// @file
/// @brief The metadata committed with each input offset, in the format
/// Kafka Streams writes and reads, so that the two can take an
/// application over from each other: Base64 of a version byte (2), the
/// partition's time (the largest record timestamp seen, big-endian int64),
/// and a map of named int64 values (an int32 count, then per entry an int32
/// length, the UTF-8 name and a big-endian int64). strata puts one entry in
/// the map, `strata.committed_by=<instance>`, whose value is the commit's
/// wall-clock ms: the takeover timeline of the next owner starts there.
/// Kafka Streams keeps entries it does not know, and ignores them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::runtime::detail {

struct commit_metadata {
    std::int64_t partition_time = -1;  ///< -1: unknown
    std::string committed_by;          ///< empty when not committed by strata
    std::int64_t commit_ms = 0;
};

inline constexpr std::string_view committed_by_prefix = "strata.committed_by=";

namespace base64 {

inline constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

[[nodiscard]] inline std::string encode(std::string_view in) {
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < in.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, in.size() - i);
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 3; ++k)
            v = (v << 8) | (k < n ? static_cast<unsigned char>(in[i + k]) : 0u);
        for (std::size_t k = 0; k < 4; ++k) out += k <= n ? alphabet[(v >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

[[nodiscard]] inline std::optional<std::string> decode(std::string_view in) {
    if (in.size() % 4 != 0) return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 4) {
        std::uint32_t v = 0;
        int pad = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = in[i + k];
            std::uint32_t d = 0;
            if (c == '=' && i + 4 == in.size() && k >= 2) {
                ++pad;
            } else {
                const std::size_t at = alphabet.find(c);
                if (at == std::string_view::npos || pad > 0) return std::nullopt;
                d = static_cast<std::uint32_t>(at);
            }
            v = (v << 6) | d;
        }
        for (int k = 0; k < 3 - pad; ++k) out += static_cast<char>((v >> (16 - 8 * k)) & 0xff);
    }
    return out;
}

}  // namespace base64

namespace be {

inline void put(std::string& out, std::uint64_t v, int bytes) {
    for (int k = bytes - 1; k >= 0; --k) out += static_cast<char>((v >> (8 * k)) & 0xff);
}

/// Reads `bytes` big-endian bytes at `at`, advancing it; nullopt past the end.
[[nodiscard]] inline std::optional<std::uint64_t> get(std::string_view in, std::size_t& at, int bytes) {
    if (at > in.size() || in.size() - at < static_cast<std::size_t>(bytes)) return std::nullopt;
    std::uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) v = (v << 8) | static_cast<unsigned char>(in[at++]);
    return v;
}

}  // namespace be

[[nodiscard]] inline std::string encode_commit_metadata(const commit_metadata& m) {
    std::string raw;
    raw += '\x02';
    be::put(raw, static_cast<std::uint64_t>(m.partition_time), 8);
    const std::string key = std::string(committed_by_prefix) + m.committed_by;
    be::put(raw, 1, 4);
    be::put(raw, key.size(), 4);
    raw += key;
    be::put(raw, static_cast<std::uint64_t>(m.commit_ms), 8);
    return base64::encode(raw);
}

/// @brief Reads what strata or Kafka Streams committed; what it cannot
/// read (another format, damage) reads as nothing known.
[[nodiscard]] inline commit_metadata decode_commit_metadata(std::string_view text) {
    commit_metadata m;
    // strata before this format: "strata <instance> <ms>"
    if (text.rfind("strata ", 0) == 0) {
        const std::size_t space = text.rfind(' ');
        if (space > 7) {
            m.committed_by = std::string(text.substr(7, space - 7));
            try {
                m.commit_ms = std::stoll(std::string(text.substr(space + 1)));
            } catch (...) {
                m.commit_ms = 0;
            }
        }
        return m;
    }
    const std::optional<std::string> raw = base64::decode(text);
    if (!raw || raw->empty()) return m;
    std::size_t at = 1;
    const char version = (*raw)[0];
    if (version != 1 && version != 2) return m;
    const auto time = be::get(*raw, at, 8);
    if (!time) return m;
    m.partition_time = static_cast<std::int64_t>(*time);
    if (version == 1 || at == raw->size()) return m;
    const auto count = be::get(*raw, at, 4);
    if (!count) return m;
    for (std::uint64_t i = 0; i < *count; ++i) {
        const auto length = be::get(*raw, at, 4);
        if (!length || *length > raw->size() - at) return m;
        const std::string_view key = std::string_view(*raw).substr(at, *length);
        at += *length;
        const auto value = be::get(*raw, at, 8);
        if (!value) return m;
        if (key.rfind(committed_by_prefix, 0) == 0) {
            m.committed_by = std::string(key.substr(committed_by_prefix.size()));
            m.commit_ms = static_cast<std::int64_t>(*value);
        }
    }
    return m;
}

}  // namespace strata::runtime::detail
