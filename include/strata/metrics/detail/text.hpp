#pragma once
/// @file
/// @brief Name rules, escaping and number formatting of the Prometheus text
/// exposition format, version 0.0.4.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace strata::metrics::detail {

constexpr bool is_ascii_letter(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_ascii_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*
constexpr bool is_valid_metric_name(std::string_view s) noexcept {
    if (s.empty() || is_ascii_digit(s.front())) return false;
    for (char c : s)
        if (!is_ascii_letter(c) && !is_ascii_digit(c) && c != '_' && c != ':') return false;
    return true;
}

/// Label names: [a-zA-Z_][a-zA-Z0-9_]*, and names starting with "__" are
/// reserved for Prometheus itself.
constexpr bool is_valid_label_name(std::string_view s) noexcept {
    if (s.empty() || is_ascii_digit(s.front()) || s.starts_with("__")) return false;
    for (char c : s)
        if (!is_ascii_letter(c) && !is_ascii_digit(c) && c != '_') return false;
    return true;
}

/// HELP text escapes backslash and line feed.
inline void append_escaped_help(std::string& out, std::string_view s) {
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

/// Label values escape backslash, double quote and line feed.
inline void append_escaped_label_value(std::string& out, std::string_view s) {
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

/// Shortest text that reads back as the same double; NaN and the
/// infinities in the spellings the format requires.
inline void append_double(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

inline void append_uint(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace strata::metrics::detail
