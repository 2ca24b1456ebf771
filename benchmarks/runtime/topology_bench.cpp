// What topologies cost, in one process against one broker
// (docs/benchmarks-runtime.md, "Topologies"):
//
//   topology_bench global --bootstrap B --records N [--keys K] [--partitions P] [--runs R]
//       writes N records over K keys to a fresh topic of P partitions (not
//       compacted yet: the first start after a load, the bootstrap's worst
//       case), then bootstraps a global store over it R times, each into a
//       fresh hash_map_store; prints the median time and records/s, and
//       the time of one more bootstrap into a store that keeps nothing
//       (the floor: librdkafka's reading and the decoding).
//
//   topology_bench hop --bootstrap B --records N [--keys K] [--partitions P] [--exactly-once 1]
//       prefills N input records, then runs the same per-key count twice
//       on fresh groups: as one application (no hop), and as a topology
//       whose first sub-topology re-keys every record (to the same key's
//       twin, so the work per key is equal) through a repartition topic to
//       the second, which counts. Wall time from run() until every record
//       is counted, on either side, and this process's CPU time over it
//       (the two sub-topologies run side by side on 2 cores, so the wall
//       time hides much of the hop's work); prints both and their ratios.
//
// One JSON line per run on stdout.

#include "support/driver.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/application.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/runtime/topology.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;

std::string fresh(const std::string& what) {
    return "bench-" + what + "-" + std::to_string(::getpid()) + "-" +
           std::to_string(clock_type::now().time_since_epoch().count());
}

void make_topic(const std::string& bootstrap, const std::string& topic, std::int32_t partitions, bool compacted) {
    strata::kafka::topic_options o;
    o.bootstrap_servers = bootstrap;
    o.partitions = partitions;
    o.replication_factor = 1;
    o.topic_configs = {{"cleanup.policy", compacted ? "compact" : "delete"}};
    o.require_compaction = compacted;
    (void)strata::kafka::ensure_topic(topic, o);
}

/// N records, key "k<i % keys>", value i as int64, each to its key's partition.
void write(const std::string& bootstrap, const std::string& topic, std::int32_t partitions, std::uint64_t n,
           std::uint64_t keys) {
    strata::kafka::producer p({bootstrap, std::nullopt, {{"linger.ms", "20"}, {"batch.size", "1000000"}}});
    auto& tracker = p.new_tracker();
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get(), topic.c_str(), nullptr));
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::string key = "k" + std::to_string(i % keys);
        const strata::byte_buffer value = strata::encode(static_cast<std::int64_t>(i));
        p.produce(t.get(), strata::kafka::default_partition(strata::as_bytes(key), partitions), strata::as_bytes(key),
                  strata::bytes_view(value), tracker);
    }
    p.wait(tracker);
    if (tracker.has_failed()) throw std::runtime_error("write: " + tracker.first_error_text);
}

/// This process's CPU time (user and system), s.
double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// A kv store that keeps nothing: the bootstrap's floor (librdkafka and decoding, no map).
struct discard_store {
    using key_type = std::string;
    using mapped_type = std::int64_t;
    [[nodiscard]] std::string_view name() const noexcept { return "discard"; }
    [[nodiscard]] std::optional<std::int64_t> get(const std::string&) const { return std::nullopt; }
    void put(const std::string&, std::int64_t) {}
    bool erase(const std::string&) { return false; }
};

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

int global(const bench::args& a) {
    const std::string bootstrap = a.need("bootstrap");
    const std::uint64_t n = a.num("records", 1'000'000), keys = a.num("keys", n);
    const auto partitions = static_cast<std::int32_t>(a.num("partitions", 4));
    const std::string topic = fresh("global");
    make_topic(bootstrap, topic, partitions, true);
    const auto w = clock_type::now();
    write(bootstrap, topic, partitions, n, keys);
    const double write_s = seconds_since(w);
    std::vector<double> runs;
    std::uint64_t applied = 0;
    for (std::uint64_t r = 0; r < a.num("runs", 3); ++r) {
        auto g = strata::runtime::make_global_store<std::string, std::int64_t>(
            {.topic = topic}, strata::hash_map_store<std::string, std::int64_t>("g"));
        const auto t = clock_type::now();
        if (!g->bootstrap(bootstrap, {})) throw std::runtime_error("bootstrap stopped");
        runs.push_back(seconds_since(t));
        applied = g->records_applied();
        g->stop();
    }
    std::sort(runs.begin(), runs.end());
    const double median = runs[runs.size() / 2];
    // The floor: the same reading into a store that keeps nothing.
    double floor_s = 0;
    {
        auto g = strata::runtime::make_global_store<std::string, std::int64_t>({.topic = topic}, discard_store{});
        const auto t = clock_type::now();
        if (!g->bootstrap(bootstrap, {})) throw std::runtime_error("bootstrap stopped");
        floor_s = seconds_since(t);
        g->stop();
    }
    bench::json()
        .put("bench", "global_bootstrap")
        .put("records", n)
        .put("keys", keys)
        .put("partitions", partitions)
        .put("applied", applied)
        .put("write_s", write_s)
        .put("bootstrap_s_median", median)
        .put("bootstrap_s_min", runs.front())
        .put("bootstrap_s_max", runs.back())
        .put("records_per_s", static_cast<double>(n) / median)
        .put("discard_store_s", floor_s)
        .print();
    return applied == n ? 0 : 1;
}

/// Options of a fresh application or topology.
strata::runtime::application_options options(const std::string& bootstrap, const std::string& app, bool exactly_once) {
    strata::runtime::application_options o;
    o.application_id = app;
    o.bootstrap_servers = bootstrap;
    o.state_dir = std::filesystem::temp_directory_path() / app;
    o.instance_id = "bench";
    o.changelog_replication_factor = 1;
    o.on_warning = [](const std::string&) {};
    if (exactly_once) o.guarantee = strata::runtime::processing_guarantee::exactly_once;
    if (const char* q = std::getenv("TOPOLOGY_BENCH_QUEUED_MIN"); q != nullptr) o.consumer_settings["queued.min.messages"] = q;
    return o;
}

const auto counts = [](strata::runtime::task_context& t) {
    return strata::hash_map_store<std::string, std::int64_t>("counts") | t.logged();
};

int hop(const bench::args& a) {
    const std::string bootstrap = a.need("bootstrap");
    const std::uint64_t n = a.num("records", 1'000'000), keys = a.num("keys", 100'000);
    const auto partitions = static_cast<std::int32_t>(a.num("partitions", 4));
    const bool exactly_once = a.num("exactly-once", 0) != 0;
    const std::string input = fresh("hop-in");
    make_topic(bootstrap, input, partitions, false);
    write(bootstrap, input, partitions, n, keys);

    // No hop: one application counts.
    double direct_s = 0, direct_cpu = 0;
    {
        auto done = std::make_shared<std::atomic<std::uint64_t>>(0);
        auto o = options(bootstrap, fresh("hop-direct"), exactly_once);
        o.input_topics = {input};
        auto app = strata::runtime::make_application<std::string, std::int64_t>(
            o, counts, [done](auto& ctx, const auto& r) {
                auto& c = ctx.stores();
                c.put(r.key, c.get(r.key).value_or(0) + 1);
                done->fetch_add(1, std::memory_order_relaxed);
            });
        const auto t = clock_type::now();
        const double cpu = cpu_seconds();
        std::thread run([&app] { app.run(); });
        while (done->load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        direct_s = seconds_since(t);
        direct_cpu = cpu_seconds() - cpu;
        app.stop();
        run.join();
    }
    // One hop: re-keyed, then counted.
    double hop_s = 0, hop_cpu = 0;
    {
        auto done = std::make_shared<std::atomic<std::uint64_t>>(0);
        auto topo = strata::runtime::make_topology(
            options(bootstrap, fresh("hop-topology"), exactly_once),
            strata::runtime::sub_topology<std::string, std::int64_t>(
                {.name = "rekey", .topics = {input}},
                [](strata::runtime::task_context&) { return strata::hash_map_store<std::string, std::int64_t>("none"); },
                [](auto& ctx, const auto& r) { ctx.repartition("twins", r.key + "'", *r.value); }),
            strata::runtime::sub_topology<std::string, std::int64_t>(
                {.name = "count", .repartitions = {"twins"}}, counts, [done](auto& ctx, const auto& r) {
                    auto& c = ctx.stores();
                    c.put(r.key, c.get(r.key).value_or(0) + 1);
                    done->fetch_add(1, std::memory_order_relaxed);
                }));
        const auto t = clock_type::now();
        const double cpu = cpu_seconds();
        std::thread run([&topo] { topo.run(); });
        while (done->load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        hop_s = seconds_since(t);
        hop_cpu = cpu_seconds() - cpu;
        topo.stop();
        run.join();
    }
    bench::json()
        .put("bench", "repartition_hop")
        .put("records", n)
        .put("keys", keys)
        .put("partitions", partitions)
        .put("guarantee", exactly_once ? "exactly_once" : "at_least_once")
        .put("direct_s", direct_s)
        .put("hop_s", hop_s)
        .put("direct_records_per_s", static_cast<double>(n) / direct_s)
        .put("hop_records_per_s", static_cast<double>(n) / hop_s)
        .put("hop_over_direct", hop_s / direct_s)
        .put("direct_cpu_s", direct_cpu)
        .put("hop_cpu_s", hop_cpu)
        .put("hop_cpu_over_direct", hop_cpu / direct_cpu)
        .print();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: topology_bench global|hop --bootstrap B [--records N] ...\n");
        return 2;
    }
    try {
        const bench::args a(argc, argv);
        const std::string what = argv[1];
        if (what == "global") return global(a);
        if (what == "hop") return hop(a);
        std::fprintf(stderr, "topology_bench: unknown command %s\n", what.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "topology_bench: %s\n", e.what());
        return 1;
    }
}
