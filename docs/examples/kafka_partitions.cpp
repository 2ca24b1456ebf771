// docs/kafka.md's store over several partitions: one stack per partition of
// the changelog topic, and every key kept by the stack of the partition that
// Kafka's Java producer would pick for it. A "restarted instance" then builds
// fresh stacks, restores each partition, and must find every key in its own
// partition with its total.
//
// Usage: kafka_partitions --bootstrap HOST:PORT [--quick]
//   Every run makes a new changelog topic (its application id holds the pid
//   and the time), so runs never see each other's records. --quick writes
//   fewer updates.

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

// [stack-per-partition]
using totals_store = strata::hash_map_store<std::string, std::int64_t>;

/// The stack of one changelog partition. The changelog is passed as an
/// rvalue, so the stack owns it and can live in a std::vector.
auto make_stack(const std::string& bootstrap, const std::string& topic, std::int32_t partition) {
    strata::kafka::changelog_options o;
    o.bootstrap_servers = bootstrap;
    o.topic = topic;
    o.partition = partition;
    return totals_store("totals") | strata::logged(strata::kafka::changelog(o)) | strata::cached();
}
using totals_stack = decltype(make_stack(std::string(), std::string(), 0));

/// Stack p writes and restores changelog partition p.
std::vector<totals_stack> make_stacks(const std::string& bootstrap, const std::string& topic,
                                      std::int32_t partitions) {
    std::vector<totals_stack> stacks;
    stacks.reserve(static_cast<std::size_t>(partitions));
    for (std::int32_t p = 0; p < partitions; ++p) stacks.push_back(make_stack(bootstrap, topic, p));
    return stacks;
}

/// The partition that keeps `key`: Kafka's Java partitioner over the bytes
/// the changelog record's key holds. strata::encode of a top-level
/// std::string is its raw bytes, as Kafka's StringSerializer writes them, so
/// a Java producer sends the same key to the same partition.
std::int32_t partition_of(const std::string& key, std::int32_t partitions) {
    return strata::kafka::default_partition(strata::encode(key), partitions);
}
// [stack-per-partition]

/// Account names, awkward ones included: the empty key and non-ASCII keys
/// are hashed like any other.
std::string account(long i) {
    switch (i % 101) {
        case 0: return "";
        case 1: return "grüße";
        case 2: return "口座-七";
        default: return "account-" + std::to_string(i % 101);
    }
}

std::string unique_suffix() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

}  // namespace

int main(int argc, char** argv) try {
    std::string bootstrap;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--bootstrap" && i + 1 < argc) bootstrap = argv[++i];
        else if (a == "--quick") quick = true;
        else throw std::invalid_argument("usage: kafka_partitions --bootstrap HOST:PORT [--quick]");
    }
    if (bootstrap.empty()) throw std::invalid_argument("usage: kafka_partitions --bootstrap HOST:PORT [--quick]");

    const long updates = quick ? 3000 : 30000;
    const std::string application = "partitions-example-" + unique_suffix();

    // [create-topic]
    constexpr std::int32_t partitions = 4;  // as many as the input topic has
    strata::kafka::topic_options t;
    t.bootstrap_servers = bootstrap;
    t.partitions = partitions;
    const std::string topic = strata::kafka::ensure_changelog_topic(application, "totals", t);
    // [create-topic]

    std::map<std::string, std::int64_t> expected;
    {
        // [write]
        auto stacks = make_stacks(bootstrap, topic, partitions);
        for (long i = 0; i < updates; ++i) {
            const std::string key = account(i);
            auto& totals = stacks[static_cast<std::size_t>(partition_of(key, partitions))];
            if (i % 37 == 36) {
                totals.erase(key);  // the account is closed: a tombstone in its partition
            } else {
                totals.put(key, totals.get(key).value_or(0) + i % 50 + 1);
            }
        }
        for (auto& totals : stacks) totals.flush();  // each partition's records acknowledged
        // [write]
        for (long i = 0; i < updates; ++i) {
            if (i % 37 == 36) expected.erase(account(i));
            else expected[account(i)] += i % 50 + 1;
        }
    }

    // [restore]
    // A restarted instance: fresh stacks, each restored from its own partition.
    auto restarted = make_stacks(bootstrap, topic, partitions);
    for (auto& totals : restarted) totals.restore();
    // [restore]

    std::map<std::string, std::int64_t> restored;
    for (std::int32_t p = 0; p < partitions; ++p) {
        std::size_t keys = 0;
        for (const auto& [key, total] : restarted[static_cast<std::size_t>(p)].all()) {
            check(partition_of(key, partitions) == p,
                  "key '" + key + "' restored from partition " + std::to_string(p) + ", but it belongs to " +
                      std::to_string(partition_of(key, partitions)));
            check(restored.emplace(key, total).second, "key '" + key + "' restored from two partitions");
            ++keys;
        }
        check(keys > 0, "partition " + std::to_string(p) + " holds no key");
    }
    for (const auto& [key, total] : expected) {
        const auto got = restarted[static_cast<std::size_t>(partition_of(key, partitions))].get(key);
        check(got == total, "key '" + key + "': expected total " + std::to_string(total) + ", restored " +
                                (got ? std::to_string(*got) : std::string("nothing")));
    }
    check(restored == expected, "the restored keys differ from the keys written (" +
                                    std::to_string(restored.size()) + " restored, " +
                                    std::to_string(expected.size()) + " expected)");

    if (failures > 0) {
        std::cout << "KAFKA PARTITIONS EXAMPLE FAILED: " << failures << " check(s)\n";
        return 1;
    }
    std::cout << "KAFKA PARTITIONS EXAMPLE PASSED: " << updates << " updates to " << expected.size()
              << " keys over " << partitions << " partitions of " << topic
              << "; every key restored in its own partition with its total\n";
    return 0;
} catch (const std::exception& e) {
    std::cerr << "kafka_partitions: " << e.what() << "\n";
    return 1;
}
