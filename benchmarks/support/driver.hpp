#pragma once
// What the runtime benchmark driver (benchmarks/runtime) uses: its
// command-line options and the one JSON line each run prints. (benchmarks/e2e
// parses with CLI11 and writes JSON with nlohmann-json instead.)

#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

/// `COMMAND --name value ...` (argv[1] is the command). A name may be given
/// more than once: `str`, `need`, `num` and `real` take the last value, `all`
/// every one.
struct args {
    std::map<std::string, std::vector<std::string>> v;

    args(int argc, char** argv) {
        for (int i = 2; i < argc; ++i) {
            std::string a = argv[i];
            if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("bad argument: " + a);
            v[a.substr(2)].emplace_back(argv[++i]);
        }
    }
    [[nodiscard]] const std::string* last(const std::string& k) const {
        auto it = v.find(k);
        return it == v.end() ? nullptr : &it->second.back();
    }
    [[nodiscard]] std::vector<std::string> all(const std::string& k) const {
        auto it = v.find(k);
        return it == v.end() ? std::vector<std::string>{} : it->second;
    }
    [[nodiscard]] std::string str(const std::string& k, const std::string& def = {}) const {
        const std::string* s = last(k);
        return s == nullptr ? def : *s;
    }
    [[nodiscard]] std::string need(const std::string& k) const {
        const std::string* s = last(k);
        if (s == nullptr) throw std::invalid_argument("missing --" + k);
        return *s;
    }
    /// Integers with suffixes k, M, G (x1000) and KiB, MiB, GiB (x1024).
    [[nodiscard]] std::uint64_t num(const std::string& k, std::uint64_t def) const {
        const std::string* p = last(k);
        if (p == nullptr) return def;
        const std::string& s = *p;
        std::size_t pos = 0;
        const double x = std::stod(s, &pos);
        const std::string suf = s.substr(pos);
        double m = 1;
        if (suf == "k") m = 1e3;
        else if (suf == "M") m = 1e6;
        else if (suf == "G") m = 1e9;
        else if (suf == "KiB") m = 1024.0;
        else if (suf == "MiB") m = 1024.0 * 1024;
        else if (suf == "GiB") m = 1024.0 * 1024 * 1024;
        else if (!suf.empty()) throw std::invalid_argument("bad number for --" + k + ": " + s);
        return static_cast<std::uint64_t>(x * m);
    }
    [[nodiscard]] double real(const std::string& k, double def) const {
        const std::string* s = last(k);
        return s == nullptr ? def : std::stod(*s);
    }
};

/// One JSON object, built field by field, printed on one line.
class json {
public:
    json& put(const std::string& k, const std::string& v) { return raw(k, quote(v)); }
    json& put(const std::string& k, const char* v) { return put(k, std::string(v)); }
    json& put(const std::string& k, double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6g", v);
        return raw(k, buf);
    }
    json& put(const std::string& k, bool v) { return raw(k, v ? "true" : "false"); }
    json& put(const std::string& k, std::uint64_t v) { return raw(k, std::to_string(v)); }
    json& put(const std::string& k, std::int64_t v) { return raw(k, std::to_string(v)); }
    json& put(const std::string& k, int v) { return raw(k, std::to_string(v)); }
    json& put(const std::string& k, const json& v) { return raw(k, v.str()); }
    json& put(const std::string& k, const std::vector<json>& v) {
        std::string s = "[";
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i].str();
        return raw(k, s + "]");
    }
    json& raw(const std::string& k, const std::string& v) {
        if (!body_.empty()) body_ += ',';
        body_ += quote(k) + ":" + v;
        return *this;
    }
    [[nodiscard]] std::string str() const { return "{" + body_ + "}"; }
    void print() const {
        std::printf("%s\n", str().c_str());
        std::fflush(stdout);
    }
    static std::string quote(const std::string& s) {
        std::string o = "\"";
        for (char c : s) {
            if (c == '"' || c == '\\') o += '\\', o += c;
            else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
            else o += c;
        }
        return o + '"';
    }

private:
    std::string body_;
};

}  // namespace bench
