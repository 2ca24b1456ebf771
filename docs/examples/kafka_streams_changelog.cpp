// docs/kafka.md's restore of a changelog that Kafka Streams wrote: a key-value
// store with Serdes.String() keys and Serdes.Long() values, logged by Kafka
// Streams to <application>-<store>-changelog over several partitions, is
// restored by strata, one stack per partition, with strata's built-in serdes.
// Every key must lie in the partition Kafka's partitioner names for it, and
// the union of the partitions must equal the state the operations left.
//
// Usage: kafka_streams_changelog --bootstrap HOST:PORT --application-id A --store S
//                                --partitions P --expect FILE
//   FILE holds the operations Kafka Streams applied, in order, one a line:
//   `key<TAB>value` puts a decimal long, `key<TAB>` (nothing after the tab)
//   deletes: the records file of the Kafka Streams peer's interop-write.
//   docs/examples/kafka_streams_changelog_test.sh runs both.

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

// [streams-stack]
// Serdes.String() writes a key's UTF-8 bytes and Serdes.Long() 8 bytes
// big-endian: exactly what strata's serdes write for a top-level std::string
// and std::int64_t, so the store restores Kafka Streams' records as they are.
using counts_store = strata::hash_map_store<std::string, std::int64_t>;

auto make_stack(const std::string& bootstrap, const std::string& topic, std::int32_t partition,
                const std::string& store_name) {
    strata::kafka::changelog_options o;
    o.bootstrap_servers = bootstrap;
    o.topic = topic;
    o.partition = partition;
    return counts_store(store_name) | strata::logged(strata::kafka::changelog(o)) | strata::cached();
}
using counts_stack = decltype(make_stack(std::string(), std::string(), 0, std::string()));
// [streams-stack]

struct arguments {
    std::string bootstrap;
    std::string application_id;
    std::string store;
    std::int32_t partitions = 0;
    std::string expect;
};

arguments parse(int argc, char** argv) {
    static constexpr const char* usage =
        "usage: kafka_streams_changelog --bootstrap HOST:PORT --application-id A --store S --partitions P "
        "--expect FILE";
    arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view name = argv[i];
        if (i + 1 == argc) throw std::invalid_argument(usage);
        const std::string value = argv[++i];
        if (name == "--bootstrap") a.bootstrap = value;
        else if (name == "--application-id") a.application_id = value;
        else if (name == "--store") a.store = value;
        else if (name == "--partitions") a.partitions = static_cast<std::int32_t>(std::stoi(value));
        else if (name == "--expect") a.expect = value;
        else throw std::invalid_argument(usage);
    }
    if (a.bootstrap.empty() || a.application_id.empty() || a.store.empty() || a.partitions < 1 || a.expect.empty())
        throw std::invalid_argument(usage);
    return a;
}

/// The store's contents after the file's operations, applied in order.
std::map<std::string, std::int64_t> final_state(const std::string& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file);
    std::map<std::string, std::int64_t> state;
    long line_number = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_number;
        if (line.empty()) continue;  // as the peer reads the file: the empty key is "<TAB>..."
        const auto tab = line.find('\t');
        if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos)
            throw std::runtime_error(file + ":" + std::to_string(line_number) + ": expected key<TAB>value or key<TAB>");
        std::string key = line.substr(0, tab);
        const std::string value = line.substr(tab + 1);
        if (value.empty()) state.erase(key);
        else state[std::move(key)] = std::stoll(value);
    }
    return state;
}

}  // namespace

int main(int argc, char** argv) try {
    const arguments args = parse(argc, argv);
    const std::map<std::string, std::int64_t> expected = final_state(args.expect);

    // [restore-streams-changelog]
    // The topic Kafka Streams made, under the name strata gives it too.
    const std::string topic = strata::kafka::changelog_topic_name(args.application_id, args.store);
    std::vector<counts_stack> stacks;
    for (std::int32_t p = 0; p < args.partitions; ++p) {
        stacks.push_back(make_stack(args.bootstrap, topic, p, args.store));  // a missing topic throws here
        stacks.back().restore();
    }
    // strata's own checks accept it: compacted, and exactly one partition per
    // input partition (a changelog's partitioning must never change).
    strata::kafka::topic_options t;
    t.bootstrap_servers = args.bootstrap;
    t.partitions = args.partitions;
    const auto status = strata::kafka::ensure_topic(topic, t);
    // [restore-streams-changelog]
    check(status == strata::kafka::topic_status::existed, topic + " did not exist before this program");

    // [check-partitions]
    std::map<std::string, std::int64_t> restored;
    for (std::int32_t p = 0; p < args.partitions; ++p) {
        for (const auto& [key, count] : stacks[static_cast<std::size_t>(p)].all()) {
            // Kafka Streams' input producer hashed the key's UTF-8 bytes, and
            // its task for input partition p logged to changelog partition p.
            const std::int32_t owner = strata::kafka::default_partition(strata::encode(key), args.partitions);
            check(owner == p, "key '" + key + "' restored from partition " + std::to_string(p) +
                                  ", but Kafka's partitioner names " + std::to_string(owner));
            check(restored.emplace(key, count).second, "key '" + key + "' restored from two partitions");
        }
    }
    // [check-partitions]

    for (const auto& [key, value] : expected) {
        const auto it = restored.find(key);
        if (it == restored.end()) check(false, "key '" + key + "' (" + std::to_string(value) + ") was not restored");
        else check(it->second == value, "key '" + key + "': expected " + std::to_string(value) + ", restored " +
                                             std::to_string(it->second));
    }
    for (const auto& [key, value] : restored)
        check(expected.contains(key), "key '" + key + "' (" + std::to_string(value) + ") restored but deleted or never written");

    if (failures > 0) {
        std::cout << "KAFKA STREAMS CHANGELOG EXAMPLE FAILED: " << failures << " check(s)\n";
        return 1;
    }
    std::cout << "KAFKA STREAMS CHANGELOG EXAMPLE PASSED: " << restored.size() << " keys from " << args.partitions
              << " partitions of " << topic << ", each in its partition, equal to " << args.expect << "\n";
    return 0;
} catch (const std::exception& e) {
    std::cerr << "kafka_streams_changelog: " << e.what() << "\n";
    return 1;
}
