// Interoperability with Kafka Streams: a kv store's changelog written by
// Kafka Streams (String keys, Long values, through its own logging layer)
// restores in strata to the same contents, and a changelog strata writes
// restores in Kafka Streams to the same contents. So a team can move a plain
// key-value store between the two.
//
// The Kafka Streams side is the peer of the benchmarks
// (benchmarks/peers/kafka-streams), run through scripts/peer-kafka-streams.sh,
// whose path the test command exports as STRATA_PEER_KAFKA_STREAMS.

#include "kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <support/temp_dir.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

namespace {

using store_t = strata::hash_map_store<std::string, std::int64_t>;
using contents_t = std::map<std::string, std::int64_t>;  // std::string's < orders like UTF-8 bytes

std::string peer_script() {
    return kafka_test::required_env("STRATA_PEER_KAFKA_STREAMS",
                                    "run the project's test command, which builds the Kafka Streams peer and "
                                    "exports its script path");
}

void run_peer(const std::string& args) {
    const std::string cmd = "'" + peer_script() + "' " + args + " --bootstrap " + kafka_test::bootstrap() + " >&2";
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
