// Topologies: two sub-topologies joined by a repartition topic, against the
// real broker. The invariants: every record crosses the hop once under
// exactly-once (each key's counts downstream are 1, 2, ..., n with nothing
// repeated or lost, whichever instance held which task); the repartition
// topic is Kafka Streams' (name, partitions, configs); records carry their
// input's time across; what the reading side committed is purged, and
// nothing it has not.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/runtime/topology.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace runtime_test;

namespace {

/// The object an input record votes for: its amount, re-keyed.
std::string object_of(std::int64_t amount) { return "object-" + std::to_string(amount % 5); }

/// Record times seen on one side of the hop (several tasks add at once).
struct times_seen {
    std::mutex m;
    std::multiset<std::int64_t> times;
    void add(std::int64_t t) {
        const std::lock_guard lock(m);
        times.insert(t);
    }
};

strata::runtime::application_options topology_options(const std::string& app, const test_support::temp_dir& dir,
                                                      const std::string& instance) {
    strata::runtime::application_options o;
    o.application_id = app;
    o.bootstrap_servers = kafka_test::bootstrap();
    o.state_dir = dir / ("state-" + instance);
    o.instance_id = instance;
    o.endpoint = instance == "one" ? "127.0.0.1:18101" : "127.0.0.1:18102";  // announced only, never dialled
    o.guarantee = strata::runtime::processing_guarantee::exactly_once;
    o.commit_interval = std::chrono::milliseconds(100);
    o.session_timeout = std::chrono::milliseconds(6000);
    o.repartition_purge_interval = std::chrono::milliseconds(300);
    return o;
}

/// Agents' reports (key: agent, value: amount) re-keyed by the object voted
/// on, then counted per object; each count goes to `output`.
auto votes_topology(strata::runtime::application_options o, const std::string& input, const std::string& output,
                    std::shared_ptr<times_seen> before, std::shared_ptr<times_seen> after) {
    return strata::runtime::make_topology(
        std::move(o),
        strata::runtime::sub_topology<std::string, std::int64_t>(
            {.name = "reports", .topics = {input}},
            [](strata::runtime::task_context& t) {
                return strata::hash_map_store<std::string, std::int64_t>("reports-seen") | t.logged();
            },
            [before](auto& ctx, const auto& r) {
                auto& seen = ctx.stores();
                seen.put(r.key, seen.get(r.key).value_or(0) + 1);
                before->add(r.timestamp);
                ctx.repartition("by-object", object_of(*r.value), r.key);
            }),
        strata::runtime::sub_topology<std::string, std::string>(
            {.name = "counts", .repartitions = {"by-object"}},
            [](strata::runtime::task_context& t) {
                return strata::hash_map_store<std::string, std::int64_t>("votes") | t.logged();
            },
            [after, output](auto& ctx, const auto& r) {
                auto& votes = ctx.stores();
                const std::int64_t n = votes.get(r.key).value_or(0) + 1;
                votes.put(r.key, n);
                after->add(r.timestamp);
                ctx.emit(output, r.key, n);
            }));
}

/// How many records of `written` land in each partition of the repartition topic.
partitioned_input repartitioned(const partitioned_input& written, std::int32_t partitions) {
    partitioned_input out(static_cast<std::size_t>(partitions));
    for (const auto& part : written)
        for (const input& in : part) {
            const std::string key = object_of(in.amount);
            out[static_cast<std::size_t>(partition_of(key, partitions))].push_back({key, in.amount});
        }
    return out;
}

/// The low watermark (log start) of each partition of `topic`.
std::vector<std::int64_t> log_starts(const std::string& topic, std::int32_t partitions) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", kafka_test::bootstrap());
    const strata::kafka::client k(RD_KAFKA_PRODUCER, std::move(c));
    std::vector<std::int64_t> out;
    for (std::int32_t p = 0; p < partitions; ++p) {
        std::int64_t low = -1, high = -1;
        strata::kafka::check(rd_kafka_query_watermark_offsets(k.get(), topic.c_str(), p, &low, &high, 10'000),
                             "watermarks of " + topic);
        out.push_back(low);
    }
    return out;
}

/// Waits until every partition of the repartition topic starts where the
/// reading group committed (all it committed purged), and checks that it
/// never starts past it.
void require_purged_to_committed(const std::string& group, const std::string& repartition, std::int32_t partitions) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::vector<std::int64_t> starts, done;
    do {
        std::this_thread::sleep_for(200ms);
        starts = log_starts(repartition, partitions);
        done = committed(group, repartition, partitions);
        for (std::size_t p = 0; p < starts.size(); ++p) REQUIRE(starts[p] <= done[p]);
    } while (starts != done && std::chrono::steady_clock::now() < deadline);
    CHECK(starts == done);
}

/// How many inputs vote for each object.
std::map<std::string, std::int64_t> votes_per_object(const partitioned_input& written) {
    std::map<std::string, std::int64_t> out;
    for (const auto& part : written)
        for (const input& each : part) ++out[object_of(each.amount)];
    return out;
}

/// Exactly once across the hop: each object's counts in `output` are 1, 2, ..., n.
void require_counts_once_each(const std::string& output, std::int32_t partitions, const partitioned_input& written) {
    std::map<std::string, std::vector<std::int64_t>> counts;
    for (std::int32_t p = 0; p < partitions; ++p)
        for (const auto& [key, value] : read_partition(output, p)) {
            REQUIRE(partition_of(key, partitions) == p);
            counts[key].push_back(strata::decode<std::int64_t>(value));
        }
    const std::map<std::string, std::int64_t> expected = votes_per_object(written);
    REQUIRE(counts.size() == expected.size());
    for (const auto& [object, seq] : counts) {
        INFO(object);
        std::vector<std::int64_t> whole(static_cast<std::size_t>(expected.at(object)));
        for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<std::int64_t>(i) + 1;
        CHECK(seq == whole);
    }
}

}  // namespace

TEST_CASE("runtime: a topology re-keys through a repartition topic, exactly once across the hop, and purges what "
          "was committed",
          "[kafka][runtime][topology]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 3;
    const std::string app = kafka_test::unique_name("topology");
    const std::string reports = kafka_test::make_topic("reports", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("vote-counts", partitions, {{"cleanup.policy", "delete"}});
    const std::string repartition = strata::runtime::repartition_topic_name(app, "by-object");
    REQUIRE(repartition == app + "-by-object-repartition");

    input_writer in(reports, partitions);
    std::int64_t next = 0;
    const auto write = [&](std::int64_t n) {
        for (const std::int64_t end = next + n; next < end; ++next) in.write(next, 20);
        in.flush();
    };
    auto before = std::make_shared<times_seen>();
    auto after = std::make_shared<times_seen>();
    auto one = votes_topology(topology_options(app, dir, "one"), reports, output, before, after);
    auto two = votes_topology(topology_options(app, dir, "two"), reports, output, before, after);
    {
        running first(one);
        write(600);
        // A second instance joins while records flow: the tasks of both
        // sub-topologies are split between the two, then it leaves again.
        {
            running second(two);
            REQUIRE(await_metadata(two.sub<0>(), 2, 60s));
            REQUIRE(await_metadata(two.sub<1>(), 2, 60s));
            write(600);
            REQUIRE(await_committed(app + "-reports", reports, in.written(), 90s));
            // Both instances ran tasks of both sub-topologies.
            for (auto* t : {&one, &two}) {
                CHECK_FALSE(t->sub<0>().local_tasks().empty());
                CHECK_FALSE(t->sub<1>().local_tasks().empty());
            }
            write(300);
            second.stop();
        }
        write(300);
        REQUIRE(await_committed(app + "-reports", reports, in.written(), 90s));
        REQUIRE(await_committed(app + "-counts", repartition, repartitioned(in.written(), partitions), 90s));

        // Purged: each partition's log start reaches the reading group's
        // committed offset, and never passes it.
        require_purged_to_committed(app + "-counts", repartition, partitions);
        // (offsets count transaction markers too: at least one per record)
        const std::vector<std::int64_t> starts = log_starts(repartition, partitions);
        CHECK(std::accumulate(starts.begin(), starts.end(), std::int64_t{0}) >= next);
        CHECK(one.purges() > 0);

        // Queries reach the reading sub-topology's stores.
        for (const auto& [object, n] : votes_per_object(in.written())) {
            INFO(object);
            const auto r = one.sub<1>().get(object);
            REQUIRE(r.status == strata::runtime::query_status::ok);
            CHECK(r.value == std::optional<std::int64_t>(n));
        }

        // Metrics tell the sub-topologies' tasks and instances apart.
        const std::string metrics = strata::metrics::to_prometheus(one.metrics());
        CHECK_THAT(metrics, Catch::Contains("task=\"reports_0\"") && Catch::Contains("task=\"counts_0\"") &&
                                Catch::Contains("instance=\"one.reports\"") &&
                                Catch::Contains("instance=\"one.counts\""));
        first.stop();
    }

    // Exactly once across the hop: each object's counts are 1, 2, ..., n.
    require_counts_once_each(output, partitions, in.written());

    // Each record kept its input's time across the hop (a record processed
    // twice, as a task moved, is seen twice on both sides alike: the same sets).
    std::set<std::int64_t> times_before(before->times.begin(), before->times.end());
    std::set<std::int64_t> times_after(after->times.begin(), after->times.end());
    CHECK(times_before == times_after);
    CHECK(*times_before.begin() > 0);

    // The repartition topic is made as Kafka Streams makes it.
    strata::kafka::topic_options o;
    o.bootstrap_servers = kafka_test::bootstrap();
    CHECK(strata::kafka::describe_topic_config(repartition, "cleanup.policy", o) == "delete");
    CHECK(strata::kafka::describe_topic_config(repartition, "retention.ms", o) == "-1");
    CHECK(strata::kafka::describe_topic_config(repartition, "segment.bytes", o) == "52428800");
    CHECK(log_starts(repartition, partitions).size() == static_cast<std::size_t>(partitions));
}

TEST_CASE("runtime: a topology over three processes, one killed and restarted mid-stream: every record crosses the "
          "hop once",
          "[kafka][runtime][topology]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    const std::string app = kafka_test::unique_name("topology-kill");
    const std::string reports = kafka_test::make_topic("reports", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("vote-counts", partitions, {{"cleanup.policy", "delete"}});
    const std::string repartition = strata::runtime::repartition_topic_name(app, "by-object");
    const auto args = [&](const std::string& instance) {
        return std::vector<std::string>{"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", reports,
                                        "--output", output, "--state", (dir / instance).string(), "--instance",
                                        instance};
    };
    const auto start = [&](const std::string& instance, const std::string& log) {
        return std::make_unique<instance_process>(STRATA_TOPOLOGY_APP, args(instance), dir / log);
    };
    input_writer in(reports, partitions);
    std::int64_t next = 0;
    const auto write = [&](std::int64_t n) {
        for (const std::int64_t end = next + n; next < end; ++next) {
            in.write(next, 40);
            if (next % 10 == 0) std::this_thread::sleep_for(2ms);
        }
        in.flush();
    };
    std::map<std::string, std::unique_ptr<instance_process>> running;
    for (const char* name : {"one", "two", "three"}) running[name] = start(name, std::string(name) + ".log");
    const auto alive = [&] {
        return std::all_of(running.begin(), running.end(), [](auto& p) { return p.second->running(); });
    };
    write(1000);
    REQUIRE(await_committed(app + "-reports", reports, in.written(), 90s, alive));
    write(500);
    running["two"]->kill(SIGKILL);  // in the middle of the stream, both sub-topologies' transactions open
    (void)running["two"]->wait();
    write(1000);
    running["two"] = start("two", "two-again.log");
    write(500);
    const bool all_in = await_committed(app + "-reports", reports, in.written(), 120s, alive) &&
                        await_committed(app + "-counts", repartition, repartitioned(in.written(), partitions), 120s,
                                        alive);
    for (auto& [name, p] : running) {
        INFO(name << ":\n" << p->output());
        CHECK(p->running());
    }
    REQUIRE(all_in);

    // Purged up to what the counts group committed, never past it.
    require_purged_to_committed(app + "-counts", repartition, partitions);

    for (auto& [name, p] : running) {
        p->kill(SIGTERM);
        const int status = p->wait();
        INFO(name << ":\n" << p->output());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }

    // Exactly once across the hop and the kill: each object's counts are 1, 2, ..., n.
    require_counts_once_each(output, partitions, in.written());
}

TEST_CASE("runtime: a topology refuses sub-topologies that do not fit together", "[runtime][topology]") {
    test_support::temp_dir dir;
    const auto factory = [](strata::runtime::task_context&) {
        return strata::hash_map_store<std::string, std::int64_t>("s");
    };
    const auto processor = [](auto&, const auto&) {};
    auto o = topology_options("refused", dir, "one");
    const auto make = [&](strata::runtime::sub_topology_inputs a, strata::runtime::sub_topology_inputs b) {
        (void)strata::runtime::make_topology(
            o, strata::runtime::sub_topology<std::string, std::int64_t>(std::move(a), factory, processor),
            strata::runtime::sub_topology<std::string, std::int64_t>(std::move(b), factory, processor));
    };
    REQUIRE_THROWS_WITH(make({.name = "a", .topics = {"in"}}, {.name = "a", .repartitions = {"r"}}),
                        Catch::Contains("two sub-topologies are named a"));
    REQUIRE_THROWS_WITH(make({.name = "a", .topics = {"in"}}, {.name = "b"}),
                        Catch::Contains("sub-topology b reads nothing"));
    REQUIRE_THROWS_WITH(make({.name = "a", .topics = {"in"}}, {.name = "", .topics = {"in"}}),
                        Catch::Contains("a sub-topology has no name"));
    REQUIRE_THROWS_WITH(make({.name = "a", .topics = {"in"}}, {.name = "b/c", .topics = {"in"}}),
                        Catch::Contains("sub-topology name \"b/c\" has a character a topic name cannot have"));
    o.input_topics = {"in"};
    REQUIRE_THROWS_WITH(make({.name = "a", .topics = {"in"}}, {.name = "b", .repartitions = {"r"}}),
                        Catch::Contains("a topology's options name no input_topics"));
}
