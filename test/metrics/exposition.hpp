#pragma once
// A strict little reader of the Prometheus text format (0.0.4), used by the
// metrics tests to check that whatever the renderer writes is well formed:
// every line ends in '\n'; one HELP then one TYPE per family, before its
// samples; each sample is `name{label="value",...} value` belonging to the
// current family; histogram buckets are cumulative and end at +Inf == _count.

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace exposition {

struct sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct family {
    std::string help;
    std::string type;
};

struct document {
    std::map<std::string, family> families;
    std::vector<sample> samples;

    /// The value of the one sample with this name and labels; throws if absent.
    double value(std::string_view name, const std::map<std::string, std::string>& labels = {}) const {
        for (const auto& s : samples)
            if (s.name == name && s.labels == labels) return s.value;
        throw std::runtime_error("no sample " + std::string(name));
    }
};

[[noreturn]] inline void fail(std::size_t line_no, const std::string& why) {
    throw std::runtime_error("exposition line " + std::to_string(line_no) + ": " + why);
}

inline bool is_name_char(char c, bool first, bool colon) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
    return letter || (!first && c >= '0' && c <= '9');
}

inline std::string read_name(std::string_view& s, bool colon, std::size_t line_no) {
    std::size_t n = 0;
    while (n < s.size() && is_name_char(s[n], n == 0, colon)) ++n;
    if (n == 0) fail(line_no, "expected a name at '" + std::string(s) + "'");
    std::string out(s.substr(0, n));
    s.remove_prefix(n);
    return out;
}

inline double read_value(std::string_view s, std::size_t line_no) {
    if (s == "NaN") return std::nan("");
    if (s == "+Inf") return HUGE_VAL;
    if (s == "-Inf") return -HUGE_VAL;
    const std::string text(s);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || text.find_first_of("iInN") != std::string::npos)
        fail(line_no, "bad value '" + text + "'");
    return v;
}

inline std::string unescape_help(std::string_view s, std::size_t line_no) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\') { out += s[i]; continue; }
        if (++i == s.size()) fail(line_no, "dangling backslash in HELP");
        if (s[i] == '\\') out += '\\';
        else if (s[i] == 'n') out += '\n';
        else fail(line_no, "bad escape in HELP");
    }
    return out;
}

inline std::map<std::string, std::string> read_labels(std::string_view& s, std::size_t line_no) {
    std::map<std::string, std::string> out;
    if (s.empty() || s.front() != '{') return out;
    s.remove_prefix(1);
    while (true) {
        if (s.empty()) fail(line_no, "unterminated labels");
        if (s.front() == '}') { s.remove_prefix(1); return out; }
        std::string name = read_name(s, false, line_no);
        if (s.substr(0, 2) != "=\"") fail(line_no, "expected =\" after label " + name);
        s.remove_prefix(2);
        std::string value;
        while (true) {
            if (s.empty()) fail(line_no, "unterminated label value");
            const char c = s.front();
            s.remove_prefix(1);
            if (c == '"') break;
            if (c == '\n') fail(line_no, "raw newline in label value");
            if (c != '\\') { value += c; continue; }
            if (s.empty()) fail(line_no, "dangling backslash");
            const char e = s.front();
            s.remove_prefix(1);
            if (e == '\\') value += '\\';
            else if (e == '"') value += '"';
            else if (e == 'n') value += '\n';
            else fail(line_no, "bad escape in label value");
        }
        if (!out.emplace(name, value).second) fail(line_no, "label " + name + " twice");
        if (!s.empty() && s.front() == ',') s.remove_prefix(1);
        else if (s.empty() || s.front() != '}') fail(line_no, "expected , or }");
    }
}

inline void check_histograms(const document& d) {
    // Group the bucket samples of each histogram series by its other labels.
    for (const auto& [name, fam] : d.families) {
        if (fam.type != "histogram") continue;
        std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> series;
        for (const auto& s : d.samples) {
            if (s.name != name + "_bucket") continue;
            auto rest = s.labels;
            const auto le = rest.find("le");
            if (le == rest.end()) throw std::runtime_error(name + ": bucket without le");
            const double bound = read_value(le->second, 0);
            rest.erase(le);
            series[rest].emplace_back(bound, s.value);
        }
        for (const auto& [labels, buckets] : series) {
            for (std::size_t i = 1; i < buckets.size(); ++i) {
                if (!(buckets[i].first > buckets[i - 1].first))
                    throw std::runtime_error(name + ": le not ascending");
                if (buckets[i].second < buckets[i - 1].second)
                    throw std::runtime_error(name + ": buckets not cumulative");
            }
            if (buckets.empty() || !std::isinf(buckets.back().first))
                throw std::runtime_error(name + ": no +Inf bucket");
            if (buckets.back().second != d.value(name + "_count", labels))
                throw std::runtime_error(name + ": +Inf bucket differs from _count");
            (void)d.value(name + "_sum", labels);
        }
    }
}

/// Parses and validates; throws std::runtime_error naming the first problem.
inline document parse(std::string_view text) {
    document d;
    if (!text.empty() && text.back() != '\n') fail(0, "text does not end in a newline");
    std::string current;  // family whose samples may follow
    std::set<std::pair<std::string, std::map<std::string, std::string>>> seen;
    std::size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol + 1);
        if (line.empty()) fail(line_no, "empty line");
        if (line.starts_with("# HELP ")) {
            line.remove_prefix(7);
            const std::string name = read_name(line, true, line_no);
            if (d.families.count(name)) fail(line_no, "second HELP for " + name);
            if (line.empty() || line.front() != ' ') fail(line_no, "expected a space after the HELP name");
            line.remove_prefix(1);
            d.families[name].help = unescape_help(line, line_no);
            current = name;
            continue;
        }
        if (line.starts_with("# TYPE ")) {
            line.remove_prefix(7);
            const std::string name = read_name(line, true, line_no);
            if (name != current || !d.families[name].type.empty()) fail(line_no, "TYPE without its HELP: " + name);
            if (line != " counter" && line != " gauge" && line != " histogram") fail(line_no, "bad type");
            d.families[name].type = std::string(line.substr(1));
            continue;
        }
        if (line.front() == '#') fail(line_no, "unexpected comment");
        sample s;
        s.name = read_name(line, true, line_no);
        s.labels = read_labels(line, line_no);
        if (line.empty() || line.front() != ' ') fail(line_no, "expected a space before the value");
        line.remove_prefix(1);
        s.value = read_value(line, line_no);
        if (current.empty() || d.families[current].type.empty()) fail(line_no, "sample before HELP and TYPE");
        const std::string& type = d.families[current].type;
        const bool ok = s.name == current ||
                        (type == "histogram" && (s.name == current + "_bucket" || s.name == current + "_sum" ||
                                                 s.name == current + "_count"));
        if (!ok) fail(line_no, "sample " + s.name + " outside its family " + current);
        if (type == "counter" && !(s.value >= 0)) fail(line_no, "negative counter");
        if (!seen.emplace(s.name, s.labels).second) fail(line_no, "duplicate sample " + s.name);
        d.samples.push_back(std::move(s));
    }
    check_histograms(d);
    return d;
}

}  // namespace exposition
