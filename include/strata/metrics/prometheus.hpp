#pragma once
/// @file
/// @brief Renders a registry in the Prometheus text exposition format,
/// version 0.0.4, for an HTTP `/metrics` endpoint or a log line.
///
/// Written here rather than with a client library: Debian 12's one for C++,
/// prometheus-cpp, is compiled shared libraries with a registry and metric
/// types of its own, so rendering strata's registry through its
/// TextSerializer would copy every sample into those types and make every
/// user of this header-only library link it. The text format is simple enough
/// to write directly.

#include <strata/metrics/detail/text.hpp>
#include <strata/metrics/registry.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace strata::metrics {

/// @brief The HTTP Content-Type of what `to_prometheus` returns.
inline constexpr std::string_view prometheus_content_type =
    "text/plain; version=0.0.4; charset=utf-8";

namespace detail {

/// `name{a="x",b="y"}` (or `name{...,le="bound"}`), without braces when
/// there is nothing inside them.
inline void append_series_name(std::string& out, std::string_view name, std::string_view suffix,
                               const labels& label_set, const std::string* le = nullptr) {
    out += name;
    out += suffix;
    if (label_set.empty() && le == nullptr) return;
    out += '{';
    bool first = true;
    auto pair = [&](std::string_view label, std::string_view value) {
        if (!first) out += ',';
        first = false;
        out += label;
        out += "=\"";
        append_escaped_label_value(out, value);
        out += '"';
    };
    for (const auto& [label, value] : label_set) pair(label, value);
    if (le != nullptr) pair("le", *le);
    out += '}';
}

inline void append_histogram(std::string& out, std::string_view name, const labels& label_set,
                             const histogram& h) {
    const histogram_snapshot s = h.snapshot();
    std::string le;
    for (std::size_t i = 0; i <= s.bounds.size(); ++i) {
        le.clear();
        if (i < s.bounds.size()) append_double(le, s.bounds[i]);
        else le = "+Inf";
        append_series_name(out, name, "_bucket", label_set, &le);
        out += ' ';
        append_uint(out, s.cumulative[i]);
        out += '\n';
    }
    append_series_name(out, name, "_sum", label_set);
    out += ' ';
    append_double(out, s.sum);
    out += '\n';
    append_series_name(out, name, "_count", label_set);
    out += ' ';
    append_uint(out, s.count());
    out += '\n';
}

}  // namespace detail

/// @brief Appends the exposition of every metric in r to out: per family one
/// `# HELP` and one `# TYPE` line, then its samples; families in name order,
/// series in label order, so equal registries render equal text. Callback
/// gauges are evaluated now, on this thread.
template <class Mutex>
void write_prometheus(std::string& out, const basic_registry<Mutex>& r) {
    r.for_each_family([&out](const family_view& fam) {
        out += "# HELP ";
        out += fam.name;
        out += ' ';
        detail::append_escaped_help(out, fam.help);
        out += "\n# TYPE ";
        out += fam.name;
        out += ' ';
        out += to_string(fam.type);
        out += '\n';
        for (const series_view& s : fam.series) {
            std::visit(
                [&](const auto* m) {
                    using metric = std::remove_cvref_t<decltype(*m)>;
                    if constexpr (std::is_same_v<metric, histogram>) {
                        detail::append_histogram(out, fam.name, s.label_set, *m);
                        return;
                    } else {
                        detail::append_series_name(out, fam.name, "", s.label_set);
                        out += ' ';
                        if constexpr (std::is_same_v<metric, counter>)
                            detail::append_uint(out, m->value());
                        else if constexpr (std::is_same_v<metric, gauge>)
                            detail::append_double(out, m->value());
                        else
                            detail::append_double(out, (*m)());
                        out += '\n';
                    }
                },
                s.metric);
        }
    });
}

/// @brief The exposition of every metric in r, as a string (see
/// `write_prometheus`). Serve it with `prometheus_content_type`.
template <class Mutex>
[[nodiscard]] std::string to_prometheus(const basic_registry<Mutex>& r) {
    std::string out;
    write_prometheus(out, r);
    return out;
}

}  // namespace strata::metrics

#if defined(STRATA_SEPARATE_COMPILATION)
// Compiled once, where <strata/separate_compilation.hpp> is included.
namespace strata::metrics {
extern template void write_prometheus(std::string&, const registry&);
extern template std::string to_prometheus(const registry&);
}  // namespace strata::metrics
#endif
