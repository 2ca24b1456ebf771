// Writes the seed corpus of the fuzz targets: valid encodings made by
// strata's own encoders, a few per target, each file named after what it
// holds. `strata_fuzz_corpus <dir>` writes <dir>/<target>/<name>; the
// repository keeps its output in test/fuzz/corpus/ (scripts/fuzz.sh
// --regenerate-corpus runs it again).

#include "codec_types.hpp"
#include "serde_types.hpp"

#include <relational_table.hpp>
#include <support/fault_file_system.hpp>

#include <strata/changelog/detail/frame.hpp>
#include <strata/changelog/detail/log_metadata.hpp>
#include <strata/changelog/detail/segment.hpp>
#include <strata/changelog/file_log.hpp>
#include <strata/codec/kafka_streams_keys.hpp>
#include <strata/restore/checkpoint.hpp>
#include <strata/serde/all.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <stdlib.h>

namespace {

using strata::byte_buffer;
namespace fs = std::filesystem;

fs::path out_dir;

void write(const std::string& target, const std::string& name, const byte_buffer& bytes) {
    const fs::path d = out_dir / target;
    fs::create_directories(d);
    std::ofstream out(d / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + (d / name).string());
}

byte_buffer with_mode(std::uint8_t mode, const byte_buffer& rest) {
    byte_buffer out{std::byte{mode}};
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

byte_buffer bytes_of(std::string_view s) {
    const auto b = strata::as_bytes(s);
    return byte_buffer(b.begin(), b.end());
}

// ------------------------------------------------------------------ serde --

template <class T>
constexpr std::size_t index_of() {
    constexpr auto find = []<std::size_t... I>(std::index_sequence<I...>) {
        std::size_t at = 0;
        static_cast<void>(((std::is_same_v<T, std::tuple_element_t<I, strata_fuzz::serde_types>> && ((at = I), true)) || ...));
        return at;
    };
    return find(std::make_index_sequence<std::tuple_size_v<strata_fuzz::serde_types>>{});
}

template <class T>
void serde_seed(const std::string& name, const T& v) {
    write("serde_fuzz", std::to_string(index_of<T>()) + "-" + name, with_mode(static_cast<std::uint8_t>(index_of<T>()), strata::encode(v)));
}

void serde_seeds() {
    using namespace strata_fuzz;
    serde_seed("int8", std::int8_t{-5});
    serde_seed("uint16", std::uint16_t{0xbeef});
    serde_seed("int32", std::int32_t{-123456});
    serde_seed("uint64", std::numeric_limits<std::uint64_t>::max());
    serde_seed("bool", true);
    serde_seed("float", 1.5f);
    serde_seed("double", -2.25e100);
    serde_seed("enum", side::sell);
    serde_seed("string", std::string("site-42 under attack"));
    serde_seed("byte_buffer", bytes_of("\x01\x02\x03"));
    serde_seed("vector-int32", std::vector<std::int32_t>{1, -2, 3});
    serde_seed("vector-bool", std::vector<bool>{true, false, true});
    serde_seed("vector-string", std::vector<std::string>{"a", "", "bcd"});
    serde_seed("vector-bytes", std::vector<byte_buffer>{bytes_of("xy"), {}});
    serde_seed("optional-string", std::optional<std::string>("present"));
    serde_seed("optional-vector", std::optional<std::vector<std::optional<std::int64_t>>>(
                                      std::vector<std::optional<std::int64_t>>{std::nullopt, 7, -1}));
    serde_seed("nested-vectors", std::vector<std::vector<std::string>>{{"a", "b"}, {}, {"c"}});
    serde_seed("empty-struct", nothing{});
    serde_seed("vector-empty", std::vector<nothing>(3));
    serde_seed("vector-vector-empty", std::vector<std::vector<nothing>>{{}, std::vector<nothing>(2)});
    serde_seed("struct", point{3, -4});
    const shape triangle{"triangle", {{0, 0}, {4, 0}, {0, 3}}, point{1, 1}, true, 6.0, side::buy};
    serde_seed("nested-struct", triangle);
    serde_seed("vector-struct", std::vector<shape>{triangle, shape{}});
    serde_seed("assignment", assignment_like{12, "instance-a", 1700000000000, {"instance-a", "instance-b"},
                                             {{0, "instance-a", {"instance-b"}}, {1, "instance-b", {}}}});
    serde_seed("struct-with-empty", with_nothing{{}, std::vector<nothing>(2), nothing{}, 9});
    serde_seed("vector-struct-with-empty", std::vector<with_nothing>{with_nothing{}, with_nothing{{}, {}, std::nullopt, 1}});
    serde_seed("optional-struct", std::optional<shape>(triangle));
    serde_seed("vector-optional-empty", std::vector<std::optional<nothing>>{nothing{}, std::nullopt});
    serde_seed("vector-char", std::vector<char>{'h', 'i'});
    serde_seed("vector-uint8", std::vector<std::uint8_t>{0, 255});

    // Regression: 1000 inner counts of 4096 empty structs in 4,005 bytes
    // decoded into millions of elements (docs/fuzzing.md, findings).
    byte_buffer nested = strata::encode(std::uint32_t{1000});
    for (int i = 0; i < 1000; ++i) strata::encode(std::uint32_t{4096}, nested);
    write("serde_fuzz", "regression-nested-empty-structs",
          with_mode(static_cast<std::uint8_t>(index_of<std::vector<std::vector<nothing>>>()), nested));
}

// ------------------------------------------------------------------ frame --

void frame_seeds() {
    namespace frame = strata::detail::frame;
    const byte_buffer key = bytes_of("key"), value = bytes_of("value");
    byte_buffer rec, tomb, commit, timed;
    frame::encode(rec, {key, strata::bytes_view(value)}, 7);
    frame::encode(tomb, {key, std::nullopt}, 8);
    frame::encode_commit(commit, 9, rec.size() + tomb.size());
    frame::encode(timed, {key, strata::bytes_view(value), 0, 1'700'000'000'000}, 10);
    for (const std::uint8_t mode : {std::uint8_t{0}, std::uint8_t{1}}) {
        const std::string m = std::to_string(mode);
        write("frame_fuzz", "record-" + m, with_mode(mode, rec));
        write("frame_fuzz", "tombstone-" + m, with_mode(mode, tomb));
        write("frame_fuzz", "commit-" + m, with_mode(mode, commit));
        write("frame_fuzz", "timestamped-" + m, with_mode(mode, timed));
    }
}

// ----------------------------------------------------------- file_log dirs --

using fault_fs = test_support::fault_file_system;
using log_t = strata::basic_file_log<fault_fs>;
const fs::path log_dir = "/log";

void put_u16(byte_buffer& out, std::size_t n) {
    out.push_back(static_cast<std::byte>(n & 0xff));
    out.push_back(static_cast<std::byte>((n >> 8) & 0xff));
}

/// A log directory as a file_log_fuzz file list (mode bit 3).
byte_buffer as_file_list(const fault_fs& f) {
    byte_buffer out;
    for (const auto& name : f.list(log_dir)) {
        const byte_buffer bytes = f.contents(log_dir / name).value_or(byte_buffer{});
        std::uint8_t selector = 0;
        std::optional<strata::offset_t> base;
        if (name == strata::detail::manifest_name) selector = 0;
        else if (name == strata::detail::witness_name) selector = 1;
        else if ((base = strata::detail::parse_segment_file_name(name))) selector = 3;
        else continue;  // the lock file
        out.push_back(std::byte{selector});
        if (base) strata::detail::put_le<std::uint64_t>(out, *base);
        put_u16(out, bytes.size());
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    return out;
}

/// Flushes `flushes` batches of records, keys reused so compaction has work.
void fill(log_t& log, int flushes, int per_flush) {
    int n = 0;
    for (int f = 0; f < flushes; ++f) {
        for (int i = 0; i < per_flush; ++i, ++n) {
            const std::string key = "k" + std::to_string(n % 5);
            const std::string value = "v" + std::to_string(n);
            if (n % 7 == 6) static_cast<void>(log.append({strata::as_bytes(key), std::nullopt}));
            else static_cast<void>(log.append({strata::as_bytes(key), strata::as_bytes(value)}));
        }
        static_cast<void>(log.flush());
    }
}

void file_log_seeds() {
    {  // One segment: the segment alone (the target adds the manifest).
        const fault_fs f;
        log_t log(log_dir, {}, f);
        fill(log, 3, 3);
        const byte_buffer seg = f.contents(log_dir / strata::detail::segment_file_name(0)).value();
        write("file_log_fuzz", "one-segment", with_mode(0, seg));
        write("file_log_fuzz", "one-segment-fix", with_mode(1 | 32 | 64, seg));
        // A torn last flush: cut in the middle of its frames.
        const byte_buffer torn(seg.begin(), seg.end() - 20);
        write("file_log_fuzz", "one-segment-torn", with_mode(1 | 64, torn));
        write("file_log_fuzz", "one-segment-no-manifest", with_mode(16 | 64, seg));
        write("file_log_fuzz", "files-one-segment", with_mode(8 | 7, as_file_list(f)));
    }
    {  // Several segments (small ones roll), with manifest and witness.
        const fault_fs f;
        log_t log(log_dir, strata::file_log_options{.segment_bytes = 200}, f);
        fill(log, 6, 2);
        write("file_log_fuzz", "files-segments", with_mode(8, as_file_list(f)));
        write("file_log_fuzz", "files-segments-fix", with_mode(8 | 7 | 32, as_file_list(f)));
        write("file_log_fuzz", "files-segments-repair", with_mode(8 | 7 | 64, as_file_list(f)));
        static_cast<void>(log.compact());
        write("file_log_fuzz", "files-compacted", with_mode(8 | 7, as_file_list(f)));
    }
    {  // Regression: a lost manifest, and a segment file named below the end
       // of the segment before it; repair left a log that did not open.
        const fault_fs f;
        {
            log_t log(log_dir, strata::file_log_options{.segment_bytes = 200}, f);
            fill(log, 4, 2);
        }
        const auto first = log_dir / strata::detail::segment_file_name(0);
        const auto stray = log_dir / strata::detail::segment_file_name(1);
        {
            const auto out = f.create_truncated(stray);
            f.append(out, f.contents(first).value(), stray);
        }
        f.remove(log_dir / strata::detail::manifest_name);
        write("file_log_fuzz", "regression-segment-below-previous-end", with_mode(8 | 64, as_file_list(f)));
    }
    {  // Regression: a damaged manifest and no segment file; repair left it.
        byte_buffer list{std::byte{0}};
        byte_buffer manifest = strata::detail::encode_manifest({{0, 0}});
        manifest[0] = std::byte{'X'};
        put_u16(list, manifest.size());
        list.insert(list.end(), manifest.begin(), manifest.end());
        write("file_log_fuzz", "regression-damaged-manifest-no-segment", with_mode(8 | 64, list));
    }
}

void log_metadata_seeds() {
    const byte_buffer one = strata::detail::encode_manifest({{0, 0}});
    const byte_buffer three = strata::detail::encode_manifest({{0, 5}, {5, 12}, {12, 0}});
    write("log_metadata_fuzz", "manifest-one", with_mode(0, one));
    write("log_metadata_fuzz", "manifest-three", with_mode(0, three));
    write("log_metadata_fuzz", "manifest-three-fix", with_mode(2, three));
    // A witness file as a log writes it: two slots, 512 bytes apart.
    const fault_fs f;
    {
        log_t log(log_dir, {}, f);
        fill(log, 2, 2);
    }
    const byte_buffer w = f.contents(log_dir / strata::detail::witness_name).value();
    write("log_metadata_fuzz", "witness", with_mode(1, w));
    write("log_metadata_fuzz", "witness-fix", with_mode(3, w));
}

// ------------------------------------------------------------- checkpoint --

void checkpoint_seeds() {
    std::string tmpl = (fs::temp_directory_path() / "strata-fuzz-corpus-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    const fs::path d = tmpl;
    auto read = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        const std::string s{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        return bytes_of(s);
    };
    strata::checkpoint_file c(d / "checkpoint");
    c.save("totals", 0, 42);
    write("checkpoint_fuzz", "one-entry", with_mode(0, read(c.path())));
    c.save("totals", 3, 7);
    c.save("reports-by-site", 1, 1234567890123);
    c.save("", -1, 0);
    write("checkpoint_fuzz", "four-entries", with_mode(0, read(c.path())));
    write("checkpoint_fuzz", "four-entries-fix", with_mode(1, read(c.path())));
    std::error_code ec;
    fs::remove_all(d, ec);
}

// ------------------------------------------------------------------ codec --

template <class K, class V>
void codec_seed(std::uint8_t which, const std::string& name, const std::vector<std::pair<K, std::optional<V>>>& records) {
    byte_buffer out{std::byte{which}};
    for (const auto& [k, v] : records) {
        std::optional<byte_buffer> value;
        if (v) value = strata::encode(*v);
        strata_fuzz::put_codec_record(out, strata::encode(k), value);
    }
    write("codec_fuzz", std::to_string(which) + "-" + name, out);
}

void codec_seeds() {
    using strata_fuzz::account_key;
    using strata_fuzz::report;
    codec_seed<std::string, std::int64_t>(0, "string-int64", {{"a", 1}, {"b", 2}, {"a", std::nullopt}});
    codec_seed<account_key, report>(1, "struct-key-struct-value",
                                    {{{"eu", 1}, report{"agent-1", "attacked", {1, 2}, true}},
                                     {{"us", 2}, report{"agent-2", std::nullopt, {}, false}},
                                     {{"eu", 1}, std::nullopt}});
    codec_seed<std::int64_t, std::vector<std::optional<std::string>>>(
        2, "int64-vector", {{5, std::vector<std::optional<std::string>>{"x", std::nullopt}}, {6, std::nullopt}});
    {
        byte_buffer out{std::byte{4}};
        const auto value = strata::encode(std::int64_t{7});
        for (const std::int64_t start : {0, 10, 2000, 10})
            strata_fuzz::put_codec_record(out, strata::kafka_streams::encode_window_key(strata::as_bytes("k"), start),
                                          value);
        strata_fuzz::put_codec_record(out, strata::kafka_streams::encode_window_key(strata::as_bytes("k"), 2000),
                                      std::nullopt);
        write("codec_fuzz", "4-window", out);
    }
    {
        byte_buffer out{std::byte{5}};
        const auto value = strata::encode(std::int64_t{7});
        strata_fuzz::put_codec_record(out, strata::kafka_streams::encode_session_key(strata::as_bytes("k"), 0, 5),
                                      value);
        strata_fuzz::put_codec_record(out, strata::kafka_streams::encode_session_key(strata::as_bytes("k"), 3, 3000),
                                      value);
        strata_fuzz::put_codec_record(out, strata::kafka_streams::encode_session_key(strata::as_bytes("k"), 0, 5),
                                      std::nullopt);
        write("codec_fuzz", "5-session", out);
    }
    for (const std::uint8_t which : {std::uint8_t{6}, std::uint8_t{7}}) {
        byte_buffer out{std::byte{which}};
        const auto key = strata::encode(std::string("k"));
        strata_fuzz::put_codec_record(out, key, strata::encode(std::int64_t{1}), 100);
        strata_fuzz::put_codec_record(out, key, std::nullopt, 200);
        strata_fuzz::put_codec_record(out, key, strata::encode(std::int64_t{3}), 150);
        strata_fuzz::put_codec_record(out, strata::encode(std::string("j")), strata::encode(std::int64_t{4}), 5000);
        write("codec_fuzz", which == 6 ? "6-timestamped" : "7-versioned", out);
    }
    codec_seed<std::int64_t, example::employee>(3, "table",
                                                {{1, example::employee{1, "ada", "eng", 100}},
                                                 {2, example::employee{2, "bob", "ops", 90}},
                                                 {1, std::nullopt}});
}

// ------------------------------------------------------------------- http --

void http_seeds() {
    const std::pair<const char*, const char*> requests[] = {
        {"key-read", "GET /strata/stores/totals/keys/a%2Fb?allow_standby=true&max_lag=10 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"query", "GET /strata/stores/s/partitions/3/queries/by%20city?city=Z%C3%BCrich&x=1&x=2 HTTP/1.1\r\n"
                  "Host: x\r\nX-Strata-Forwarded: a\r\n\r\n"},
        {"put", "PUT /objects/obj-1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: "
                "application/json\r\nContent-Length: 17\r\n\r\n{\"state\": \"down\"}"},
        {"chunked", "PUT /objects/o HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
        {"not-allowed", "POST /objects/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"},
        {"throws", "GET /throws/%FF%FE HTTP/1.0\r\n\r\n"},
        {"drops", "HEAD /drops HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"no-route", "DELETE /nothing?%zz=%2 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"position", "GET /strata/stores/s/keys/k?position=42&wait_ms=500 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"negative-position", "GET /strata/stores/s/keys/k?position=-21&wait_ms=500 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"page", "GET /strata/stores/s/all?limit=7&cursor=3~226b2d3122 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"range", "GET /strata/stores/s/range?from=a&to=z&after=%5B1%2C%22x%22%5D HTTP/1.1\r\nHost: x\r\n\r\n"},
    };
    for (const auto& [name, text] : requests) write("http_fuzz", name, bytes_of(text));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: strata_fuzz_corpus <output directory>\n";
        return 2;
    }
    out_dir = argv[1];
    serde_seeds();
    frame_seeds();
    file_log_seeds();
    log_metadata_seeds();
    checkpoint_seeds();
    codec_seeds();
    http_seeds();
    return 0;
}
