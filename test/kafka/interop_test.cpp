// Interoperability with Kafka Streams: a store's changelog written by Kafka
// Streams (String keys, Long values, through its own logging layer) restores
// in strata to the same contents, and a changelog strata writes restores in
// Kafka Streams to the same contents, for key-value, window, session,
// timestamped and versioned stores. So a team can move a store between the
// two.
//
// The Kafka Streams side is the peer of the benchmarks
// (benchmarks/peers/kafka-streams), run through scripts/peer-kafka-streams.sh,
// whose path the test command exports as STRATA_PEER_KAFKA_STREAMS.

#include "kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>
#include <strata/stores/session_store.hpp>
#include <strata/stores/timestamped.hpp>
#include <strata/stores/versioned_store.hpp>
#include <strata/stores/window_store.hpp>

#include <support/temp_dir.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using store_t = strata::hash_map_store<std::string, std::int64_t>;
using contents_t = std::map<std::string, std::int64_t>;  // std::string's < orders like UTF-8 bytes

std::string peer_script() {
    return kafka_test::required_env("STRATA_PEER_KAFKA_STREAMS",
                                    "run the project's test command, which builds the Kafka Streams peer and "
                                    "exports its script path");
}

void run_peer(const std::string& args) {
    // Kafka Streams' windowed stores warn once per record of an expired
    // window, which the windowed histories have on purpose.
    const char* jvm_opts = std::getenv("STRATA_PEER_JVM_OPTS");
    const std::string quiet = "STRATA_PEER_JVM_OPTS='" + std::string(jvm_opts != nullptr ? jvm_opts : "") +
                              " -Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.state.internals=error' ";
    const std::string cmd =
        quiet + "'" + peer_script() + "' " + args + " --bootstrap " + kafka_test::bootstrap() + " >&2";
    INFO(cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
}

/// A history of puts and deletes with awkward keys and the full Long range;
/// returns the operations (value nullopt: delete) and the final contents.
std::pair<std::vector<std::pair<std::string, std::optional<std::int64_t>>>, contents_t> make_history(int n) {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> key(0, 400), roll(0, 99);
    std::uniform_int_distribution<std::int64_t> value(INT64_MIN, INT64_MAX);
    std::vector<std::pair<std::string, std::optional<std::int64_t>>> ops;
    contents_t expected;
    for (int i = 0; i < n; ++i) {
        const int k = key(rng);
        std::string name = k == 0 ? "" : k == 1 ? "grüße-" : "key-" + std::to_string(k);
        if (roll(rng) < 15) {
            ops.emplace_back(name, std::nullopt);
            expected.erase(name);
        } else {
            const std::int64_t v = value(rng);
            ops.emplace_back(name, v);
            expected[name] = v;
        }
    }
    return {ops, expected};
}

contents_t read_dump(const std::filesystem::path& file) {
    contents_t out;
    std::ifstream in(file);
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);) {
        const auto tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        out[line.substr(0, tab)] = std::stoll(line.substr(tab + 1));
    }
    return out;
}

}  // namespace

TEST_CASE("interop: a changelog Kafka Streams wrote restores in strata to the same contents", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto [ops, expected] = make_history(3000);
    {
        std::ofstream f(dir.path() / "records.tsv");
        for (const auto& [k, v] : ops) f << k << '\t' << (v ? std::to_string(*v) : "") << '\n';
    }
    const std::string app = kafka_test::unique_name("interop-ks");
    run_peer("interop-write --application-id " + app + " --store counts --records '" +
             (dir.path() / "records.tsv").string() + "'");

    auto o = kafka_test::log_options(strata::kafka::changelog_topic_name(app, "counts"));
    strata::kafka::changelog log(o);
    auto s = store_t("counts") | strata::logged(log);
    const auto p = s.restore();
    REQUIRE(p.records_done > 0);
    contents_t restored;
    for (const auto& [k, v] : s.all()) restored.emplace(k, v);
    REQUIRE(restored.size() == expected.size());
    REQUIRE(restored == expected);
}

TEST_CASE("interop: a changelog strata wrote restores in Kafka Streams to the same contents", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto [ops, expected] = make_history(3000);
    const std::string app = kafka_test::unique_name("interop-strata");
    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    const std::string topic = strata::kafka::ensure_changelog_topic(app, "counts", t);
    {
        strata::kafka::changelog log(kafka_test::log_options(topic));
        auto s = store_t("counts") | strata::logged(log);
        for (const auto& [k, v] : ops) {
            if (v) s.put(k, *v);
            else s.erase(k);
        }
        s.flush();
    }
    run_peer("interop-read --application-id " + app + " --store counts --out '" + (dir.path() / "dump.tsv").string() +
             "'");
    REQUIRE(read_dump(dir.path() / "dump.tsv") == expected);
}

// ---- window and session stores: Kafka Streams' in-memory window store (no
// duplicates) and session store, String keys and Long values, whose
// changelogs strata's window_store and session_store read and write.

namespace {

using window_store_t = strata::window_store<std::string, std::int64_t>;
using session_store_t = strata::session_store<std::string, std::int64_t>;

constexpr std::int64_t window_size_ms = 1000;
constexpr std::int64_t retention_ms = 60'000;  // the history spans 200 s: early windows expire

/// One operation of a windowed history: a window's (start == end) or a
/// session's put, or its delete (value nullopt).
struct windowed_op {
    std::string key;
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::optional<std::int64_t> value;
};

/// key, start, end -> value: what a window or session store holds.
using windowed_contents = std::map<std::tuple<std::string, std::int64_t, std::int64_t>, std::int64_t>;

/// Times mostly move forward, some go back (late updates, some into windows
/// already expired), keys repeat so windows are overwritten and deleted.
std::vector<windowed_op> make_windowed_history(int n, bool sessions) {
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int> key(0, 60), roll(0, 99), back(0, 90), length(0, 5);
    std::uniform_int_distribution<std::int64_t> value(INT64_MIN, INT64_MAX);
    std::vector<windowed_op> ops;
    std::int64_t now = 0;
    for (int i = 0; i < n; ++i) {
        now += 100;
        const int k = key(rng);
        windowed_op op;
        op.key = k == 0 ? "" : k == 1 ? "grüße-" : "key-" + std::to_string(k);
        const std::int64_t t = std::max<std::int64_t>(0, now - (roll(rng) < 10 ? back(rng) * 1000 : 0));
        op.start = t / window_size_ms * window_size_ms;
        op.end = sessions ? op.start + length(rng) * 500 : op.start;
        if (roll(rng) >= 15) op.value = value(rng);
        ops.push_back(op);
    }
    return ops;
}

void write_windowed_records(const std::filesystem::path& file, const std::vector<windowed_op>& ops, bool sessions) {
    std::ofstream f(file);
    for (const auto& op : ops) {
        f << op.key << '\t' << op.start << '\t';
        if (sessions) f << op.end << '\t';
        f << (op.value ? std::to_string(*op.value) : "") << '\n';
    }
}

template <class Store>
void apply_windowed(Store& s, const windowed_op& op) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(strata::innermost(s))>, window_store_t>) {
        if (op.value) s.apply(strata::window_put<std::string, std::int64_t>{{op.key, op.start}, *op.value});
        else s.apply(strata::window_erase<std::string>{{op.key, op.start}});
    } else {
        if (op.value) s.apply(strata::session_put<std::string, std::int64_t>{{op.key, op.start, op.end}, *op.value});
        else s.apply(strata::session_erase<std::string>{{op.key, op.start, op.end}});
    }
}

windowed_contents contents_of(const window_store_t& s) {
    windowed_contents out;
    for (const auto& e : s.all()) out[{e.window.key, e.window.start_ms, e.window.start_ms + window_size_ms}] = e.value;
    return out;
}
windowed_contents contents_of(const session_store_t& s) {
    windowed_contents out;
    for (const auto& e : s.all()) out[{e.session.key, e.session.start_ms, e.session.end_ms}] = e.value;
    return out;
}

/// What a store holds after the history: strata's own store, whose rules
/// (retention, expiry) each side's restore must agree with.
template <class Store>
windowed_contents model_of(Store s, const std::vector<windowed_op>& ops) {
    for (const auto& op : ops) apply_windowed(s, op);
    return contents_of(s);
}

windowed_contents read_windowed_dump(const std::filesystem::path& file, bool sessions) {
    windowed_contents out;
    std::ifstream in(file);
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        std::size_t from = 0;
        for (std::size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1)
            f.push_back(line.substr(from, tab - from));
        f.push_back(line.substr(from));
        REQUIRE(f.size() == (sessions ? 4u : 3u));
        const std::int64_t start = std::stoll(f[1]);
        // A window's end is start + size in Kafka Streams' Windowed keys.
        const std::int64_t end = sessions ? std::stoll(f[2]) : start + window_size_ms;
        out[{f[0], start, end}] = std::stoll(f.back());
    }
    return out;
}

std::string windowed_peer_args(const char* kind) {
    return std::string(" --kind ") + kind + " --retention-ms " + std::to_string(retention_ms) + " --window-size-ms " +
           std::to_string(window_size_ms);
}

template <class Store>
Store fresh_store(const char* name) {
    if constexpr (std::is_same_v<Store, window_store_t>)
        return Store(name, {.window_size = std::chrono::milliseconds(window_size_ms),
                            .retention = std::chrono::milliseconds(retention_ms)});
    else
        return Store(name, {.retention = std::chrono::milliseconds(retention_ms)});
}

template <class Store>
void kafka_streams_writes_strata_restores(const char* kind) {
    const bool sessions = std::is_same_v<Store, session_store_t>;
    test_support::temp_dir dir;
    const auto ops = make_windowed_history(2000, sessions);
    const auto expected = model_of(fresh_store<Store>("w"), ops);
    REQUIRE(expected.size() > 100);
    write_windowed_records(dir.path() / "records.tsv", ops, sessions);
    const std::string app = kafka_test::unique_name(std::string("interop-ks-") + kind);
    run_peer("interop-kind-write --application-id " + app + " --store w --records '" +
             (dir.path() / "records.tsv").string() + "'" + windowed_peer_args(kind));

    // Kafka Streams made the changelog topic as strata would.
    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    const std::string topic = strata::kafka::changelog_topic_name(app, "w");
    const auto configs = strata::kafka::windowed_changelog_configs(std::chrono::milliseconds(retention_ms));
    REQUIRE(strata::kafka::describe_topic_config(topic, "cleanup.policy", t) == configs.at("cleanup.policy"));
    REQUIRE(strata::kafka::describe_topic_config(topic, "retention.ms", t) == configs.at("retention.ms"));
    t.topic_configs = configs;
    REQUIRE(strata::kafka::ensure_topic(topic, t) == strata::kafka::topic_status::existed);

    strata::kafka::changelog log(kafka_test::log_options(topic));
    auto s = fresh_store<Store>("w") | strata::logged(log);
    const auto p = s.restore();
    REQUIRE(p.records_done == ops.size());  // Kafka Streams logs even a put its store drops as expired
    REQUIRE(contents_of(strata::innermost(s)) == expected);
}

template <class Store>
void strata_writes_kafka_streams_restores(const char* kind) {
    const bool sessions = std::is_same_v<Store, session_store_t>;
    test_support::temp_dir dir;
    const auto ops = make_windowed_history(2000, sessions);
    const auto expected = model_of(fresh_store<Store>("w"), ops);
    const std::string app = kafka_test::unique_name(std::string("interop-strata-") + kind);
    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    t.topic_configs = strata::kafka::windowed_changelog_configs(std::chrono::milliseconds(retention_ms));
    const std::string topic = strata::kafka::ensure_changelog_topic(app, "w", t);
    {
        strata::kafka::changelog log(kafka_test::log_options(topic));
        auto s = fresh_store<Store>("w") | strata::logged(log);
        for (const auto& op : ops) apply_windowed(s, op);
        s.flush();
    }
    run_peer("interop-kind-read --application-id " + app + " --store w --out '" +
             (dir.path() / "dump.tsv").string() + "'" + windowed_peer_args(kind));
    REQUIRE(read_windowed_dump(dir.path() / "dump.tsv", sessions) == expected);
}

}  // namespace

TEST_CASE("interop: a window store changelog Kafka Streams wrote restores in strata", "[kafka][interop]") {
    kafka_streams_writes_strata_restores<window_store_t>("window");
}

TEST_CASE("interop: a window store changelog strata wrote restores in Kafka Streams", "[kafka][interop]") {
    strata_writes_kafka_streams_restores<window_store_t>("window");
}

TEST_CASE("interop: a session store changelog Kafka Streams wrote restores in strata", "[kafka][interop]") {
    kafka_streams_writes_strata_restores<session_store_t>("session");
}

TEST_CASE("interop: a session store changelog strata wrote restores in Kafka Streams", "[kafka][interop]") {
    strata_writes_kafka_streams_restores<session_store_t>("session");
}

// ---- timestamped and versioned key-value stores: Kafka Streams' RocksDB
// timestamped and versioned stores, String keys and Long values, whose
// changelogs carry each value's time as the record's timestamp.

namespace {

using timestamped_store_t = strata::ordered_map_store<std::string, strata::timestamped<std::int64_t>>;
using versioned_store_t = strata::versioned_store<std::string, std::int64_t>;
constexpr std::int64_t history_ms = 20'000;  // the history spans 200 s: most of it expires

/// One operation: a put of `value` at `time`, or a delete (value nullopt).
struct timed_op {
    std::string key;
    std::int64_t time = 0;
    std::optional<std::int64_t> value;
};

/// Times from two hours ago on (Kafka 4 refuses records more than an hour
/// ahead), mostly forward, some back (a few past the history kept).
std::vector<timed_op> make_timed_history(int n) {
    std::mt19937_64 rng(13);
    std::uniform_int_distribution<int> key(0, 60), roll(0, 99), back(0, 30);
    std::uniform_int_distribution<std::int64_t> value(INT64_MIN, INT64_MAX);
    const std::int64_t start =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count() -
        2 * 3600 * 1000;
    std::vector<timed_op> ops;
    std::int64_t now = start;
    for (int i = 0; i < n; ++i) {
        now += 100;
        const int k = key(rng);
        timed_op op;
        op.key = k == 0 ? "" : k == 1 ? "grüße-" : "key-" + std::to_string(k);
        op.time = now - (roll(rng) < 10 ? back(rng) * 1000 : 0);
        if (roll(rng) >= 15) op.value = value(rng);
        ops.push_back(op);
    }
    return ops;
}

void write_timed_records(const std::filesystem::path& file, const std::vector<timed_op>& ops) {
    std::ofstream f(file);
    for (const auto& op : ops) f << op.key << '\t' << op.time << '\t' << (op.value ? std::to_string(*op.value) : "") << '\n';
}

/// Lines of a dump, sorted: what the peer writes, and what the model gives.
std::vector<std::string> read_lines(const std::filesystem::path& file) {
    std::vector<std::string> out;
    std::ifstream in(file);
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> timestamped_lines(const timestamped_store_t& s) {
    std::vector<std::string> out;
    for (const auto& [k, v] : s.all())
        out.push_back(k + '\t' + std::to_string(v.timestamp) + '\t' + std::to_string(v.value));
    std::sort(out.begin(), out.end());
    return out;
}

template <class Stack>
void apply_timestamped(Stack& s, const timed_op& op) {
    if (op.value) s.put(op.key, strata::timestamped<std::int64_t>{*op.value, op.time});
    else s.erase(op.key);
}
template <class Stack>
void apply_versioned(Stack& s, const timed_op& op) {
    if (op.value) s.apply(strata::versioned_put<std::string, std::int64_t>{op.key, *op.value, op.time});
    else s.apply(strata::versioned_erase<std::string>{op.key, op.time});
}

/// The times a versioned store is asked about: across the history it
/// keeps at the end, and past its last time.
std::vector<std::int64_t> probe_times(const versioned_store_t& s) {
    std::vector<std::int64_t> out;
    const std::int64_t end = *s.stream_time();
    for (int i = 0; i <= 8; ++i) out.push_back(end - history_ms + history_ms * i / 8);
    out.push_back(end + 1000);
    return out;
}

/// "key as of t" for every key of the history and every probe time, as
/// the peer's dump lines: key, t, value, valid_from (the last two empty
/// when there is none).
std::vector<std::string> versioned_lines(const versioned_store_t& s, const std::vector<timed_op>& ops,
                                         const std::vector<std::int64_t>& times) {
    std::set<std::string> keys;
    for (const auto& op : ops) keys.insert(op.key);
    std::vector<std::string> out;
    for (const auto& k : keys)
        for (const std::int64_t t : times) {
            const auto v = s.get_as_of(k, t);
            out.push_back(k + '\t' + std::to_string(t) + '\t' +
                          (v ? std::to_string(v->value) + '\t' + std::to_string(v->valid_from) : "\t"));
        }
    std::sort(out.begin(), out.end());
    return out;
}

std::string join_times(const std::vector<std::int64_t>& times) {
    std::string out;
    for (const auto t : times) out += (out.empty() ? "" : ",") + std::to_string(t);
    return out;
}

}  // namespace

TEST_CASE("interop: a timestamped store changelog Kafka Streams wrote restores in strata", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto ops = make_timed_history(2000);
    timestamped_store_t model("model");
    for (const auto& op : ops) apply_timestamped(model, op);
    write_timed_records(dir.path() / "records.tsv", ops);
    const std::string app = kafka_test::unique_name("interop-ks-timestamped");
    run_peer("interop-kind-write --kind timestamped --application-id " + app + " --store t --records '" +
             (dir.path() / "records.tsv").string() + "'");

    strata::kafka::changelog log(kafka_test::log_options(strata::kafka::changelog_topic_name(app, "t")));
    auto s = timestamped_store_t("t") | strata::logged(log);
    REQUIRE(s.restore().records_done == ops.size());
    REQUIRE(timestamped_lines(strata::innermost(s)) == timestamped_lines(model));
}

TEST_CASE("interop: a timestamped store changelog strata wrote restores in Kafka Streams", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto ops = make_timed_history(2000);
    const std::string app = kafka_test::unique_name("interop-strata-timestamped");
    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    const std::string topic = strata::kafka::ensure_changelog_topic(app, "t", t);
    timestamped_store_t model("model");
    {
        strata::kafka::changelog log(kafka_test::log_options(topic));
        auto s = timestamped_store_t("t") | strata::logged(log) | strata::cached();
        for (const auto& op : ops) {
            apply_timestamped(s, op);
            apply_timestamped(model, op);
        }
        s.flush();
    }
    run_peer("interop-kind-read --kind timestamped --application-id " + app + " --store t --out '" +
             (dir.path() / "dump.tsv").string() + "'");
    REQUIRE(read_lines(dir.path() / "dump.tsv") == timestamped_lines(model));
}

TEST_CASE("interop: a versioned store changelog Kafka Streams wrote restores in strata", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto ops = make_timed_history(2000);
    versioned_store_t model("model", {.history_retention = std::chrono::milliseconds(history_ms)});
    for (const auto& op : ops) apply_versioned(model, op);
    write_timed_records(dir.path() / "records.tsv", ops);
    const std::string app = kafka_test::unique_name("interop-ks-versioned");
    run_peer("interop-kind-write --kind versioned --retention-ms " + std::to_string(history_ms) +
             " --application-id " + app + " --store v --records '" + (dir.path() / "records.tsv").string() + "'");

    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    const std::string topic = strata::kafka::changelog_topic_name(app, "v");
    const auto configs = strata::kafka::versioned_changelog_configs(std::chrono::milliseconds(history_ms));
    REQUIRE(strata::kafka::describe_topic_config(topic, "cleanup.policy", t) == configs.at("cleanup.policy"));
    REQUIRE(strata::kafka::describe_topic_config(topic, "min.compaction.lag.ms", t) ==
            configs.at("min.compaction.lag.ms"));

    strata::kafka::changelog log(kafka_test::log_options(topic));
    auto s = versioned_store_t("v", {.history_retention = std::chrono::milliseconds(history_ms)}) | strata::logged(log);
    REQUIRE(s.restore().records_done == ops.size());  // Kafka Streams logs even a put its store drops as too old
    const auto times = probe_times(model);
    REQUIRE(versioned_lines(strata::innermost(s), ops, times) == versioned_lines(model, ops, times));
}

TEST_CASE("interop: a versioned store changelog strata wrote restores in Kafka Streams", "[kafka][interop]") {
    test_support::temp_dir dir;
    const auto ops = make_timed_history(2000);
    write_timed_records(dir.path() / "records.tsv", ops);
    const std::string app = kafka_test::unique_name("interop-strata-versioned");
    strata::kafka::topic_options t;
    t.bootstrap_servers = kafka_test::bootstrap();
    t.topic_configs = strata::kafka::versioned_changelog_configs(std::chrono::milliseconds(history_ms));
    const std::string topic = strata::kafka::ensure_changelog_topic(app, "v", t);
    versioned_store_t model("model", {.history_retention = std::chrono::milliseconds(history_ms)});
    {
        strata::kafka::changelog log(kafka_test::log_options(topic));
        auto s = versioned_store_t("v", {.history_retention = std::chrono::milliseconds(history_ms)}) |
                 strata::logged(log);
        for (const auto& op : ops) {
            apply_versioned(s, op);
            apply_versioned(model, op);
        }
        s.flush();
    }
    const auto times = probe_times(model);
    run_peer("interop-kind-read --kind versioned --retention-ms " + std::to_string(history_ms) +
             " --application-id " + app + " --store v --records '" + (dir.path() / "records.tsv").string() +
             "' --as-of " + join_times(times) + " --out '" + (dir.path() / "dump.tsv").string() + "'");
    const auto expected = versioned_lines(model, ops, times);
    REQUIRE(std::count_if(expected.begin(), expected.end(), [](const std::string& l) { return l.back() != '\t'; }) >
            100);  // most answers have a value
    REQUIRE(read_lines(dir.path() / "dump.tsv") == expected);
}
