// The application API in one process: co-partitioned input topics meet in
// one task per partition number, punctuations fire on wall-clock and on
// stream time, a processor's error stops the instance with the record's
// coordinates, stop() from another thread commits and returns, and two
// processing threads share the tasks of one instance.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

using namespace runtime_test;

namespace {

strata::runtime::application_options config(const std::string& app, std::vector<std::string> inputs,
                                           const test_support::temp_dir& dir) {
    strata::runtime::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = std::move(inputs);
    c.state_dir = dir / "state";
    c.instance_id = "in-process";
    c.commit_interval = std::chrono::milliseconds(200);
    c.session_timeout = std::chrono::milliseconds(6000);
    return c;
}

/// Writes one record with an explicit timestamp.
void write_at(strata::kafka::producer& p, rd_kafka_topic_t* t, std::int32_t partition, const std::string& key,
              std::int64_t amount, std::int64_t timestamp, strata::kafka::delivery_tracker& tracker) {
    const strata::byte_buffer v = strata::encode(amount);
    void* value = const_cast<std::byte*>(v.data());
    const std::size_t value_len = v.size();
    void* k = const_cast<char*>(key.data());
    const std::size_t k_len = key.size();
    const auto err = rd_kafka_producev(p.get(), RD_KAFKA_V_RKT(t), RD_KAFKA_V_PARTITION(partition),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(k, k_len),
                                       RD_KAFKA_V_VALUE(value, value_len), RD_KAFKA_V_TIMESTAMP(timestamp),
                                       RD_KAFKA_V_OPAQUE(&tracker), RD_KAFKA_V_END);
    REQUIRE(err == RD_KAFKA_RESP_ERR_NO_ERROR);
    ++tracker.in_flight;
}

}  // namespace

TEST_CASE("runtime: co-partitioned input topics meet in one task per partition number", "[kafka][runtime][api]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 3;
    const std::string app_id = kafka_test::unique_name("copartitioned");
    const std::string left = kafka_test::make_topic("left", partitions, {{"cleanup.policy", "delete"}});
    const std::string right = kafka_test::make_topic("right", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("both-out", partitions, {{"cleanup.policy", "delete"}});
    input_writer l(left, partitions), r(right, partitions);
    for (std::int64_t i = 0; i < 300; ++i) {
        l.write(i, 30);
        r.write(i + 1, 30);
    }
    l.flush();
    r.flush();

    auto misplaced = std::make_shared<std::atomic<int>>(0);
    auto processed = std::make_shared<std::atomic<int>>(0);
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        config(app_id, {left, right}, dir),
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("seen") | t.logged() | strata::cached();
        },
        [misplaced, processed, output](auto& ctx, const auto& rec) {
            if (rec.partition != ctx.partition()) ++*misplaced;
            auto& seen = ctx.stores();
            const std::int64_t n = seen.get(rec.key).value_or(0) + 1;
            seen.put(rec.key, n);
            ctx.emit(output, rec.key, std::string(rec.topic));
            ++*processed;
        });
    {
        running run(app);
        REQUIRE(await_committed(app_id, left, l.written(), 60s));
        REQUIRE(await_committed(app_id, right, r.written(), 60s));
        run.stop();
    }
    CHECK(misplaced->load() == 0);
    CHECK(processed->load() >= 600);
    // Every output of a key is in the partition of the key, from both topics.
    std::size_t outputs = 0, from_left = 0;
    for (std::int32_t p = 0; p < partitions; ++p) {
        for (const auto& [key, value] : read_partition(output, p)) {
            REQUIRE(partition_of(key, partitions) == p);
            ++outputs;
            from_left += std::string(strata::as_chars(value)) == left ? 1 : 0;
        }
    }
    CHECK(outputs >= 600);
    CHECK(from_left >= 300);
    // The runtime's metrics: records processed per task add up, lag and states are there.
    const std::string metrics = strata::metrics::to_prometheus(app.metrics());
    INFO(metrics);
    double total = 0;
    for (std::int32_t p = 0; p < partitions; ++p) {
        const std::string series = "strata_task_records_processed_total{task=\"" + std::to_string(p) + "\"} ";
        const auto at = metrics.find(series);
        REQUIRE(at != std::string::npos);
        total += std::stod(metrics.substr(at + series.size()));
    }
    CHECK(total == processed->load());
    CHECK_THAT(metrics, Catch::Contains("strata_task_consumer_lag_records{task=\"0\",topic=\"" + left + "\"}") &&
                            Catch::Contains("strata_task_commits_total{task=\"0\"}") &&
                            Catch::Contains("strata_task_state{state=\"running\",task=\"0\"} 0") &&
                            Catch::Contains("strata_task_restore_records_total{store=\"seen\",task=\"0\"}") &&
                            Catch::Contains("strata_instance_tasks{instance=\"in-process\",state=\"running\"} 0"));
    // The changelog of the store is the application's, one partition per input partition.
    for (std::int32_t p = 0; p < partitions; ++p)
        CHECK_NOTHROW(read_partition(strata::kafka::changelog_topic_name(app_id, "seen"), p));
}

namespace {
/// Counts its punctuations; copied once per task.
struct punctuating {
    std::shared_ptr<std::atomic<int>> wall, stream;
    std::shared_ptr<std::atomic<std::int64_t>> last_stream_time;

    template <class Context>
    void init(Context& ctx) {
        ctx.schedule(std::chrono::milliseconds(50), strata::runtime::punctuation_type::wall_clock_time,
                     [w = wall](Context&, std::int64_t) { ++*w; });
        ctx.schedule(std::chrono::milliseconds(10'000), strata::runtime::punctuation_type::stream_time,
                     [s = stream, t = last_stream_time](Context&, std::int64_t ts) {
                         ++*s;
                         *t = ts;
                     });
    }
    template <class Context, class Record>
    void operator()(Context& ctx, const Record& r) {
        ctx.stores().put(r.key, r.value.value_or(0));
    }
};
}  // namespace

TEST_CASE("runtime: punctuations on wall-clock time and on stream time", "[kafka][runtime][api]") {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("punctuate");
    // Record times in 1970: kept only without time retention.
    const std::string input =
        kafka_test::make_topic("punctuate-in", 1, {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}});
    strata::kafka::producer p({kafka_test::bootstrap(), std::nullopt, {}});
    auto& tracker = p.new_tracker();
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get(), input.c_str(), nullptr));
    // Record time runs from 1,000,000 to 1,055,000 ms in steps of 1 s: stream
    // time crosses 10 s boundaries five times after the first record.
    for (std::int64_t i = 0; i <= 55; ++i) write_at(p, t.get(), 0, "k", i, 1'000'000 + i * 1000, tracker);
    p.wait(tracker);
    REQUIRE_FALSE(tracker.has_failed());

    punctuating proc{std::make_shared<std::atomic<int>>(0), std::make_shared<std::atomic<int>>(0),
                     std::make_shared<std::atomic<std::int64_t>>(0)};
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        config(app_id, {input}, dir),
        [](strata::runtime::task_context&) { return strata::hash_map_store<std::string, std::int64_t>("last"); },
        proc);
    {
        running run(app);
        partitioned_input written(1, std::vector<runtime_test::input>(56));
        REQUIRE(await_committed(app_id, input, written, 60s));
        std::this_thread::sleep_for(300ms);
        run.stop();
    }
    CHECK(proc.wall->load() >= 3);
    CHECK(proc.stream->load() == 5);
    CHECK(proc.last_stream_time->load() == 1'050'000);
}

TEST_CASE("runtime: a processor that throws stops the instance with the record's coordinates",
          "[kafka][runtime][api]") {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("throws");
    const std::string input = kafka_test::make_topic("throws-in", 1, {{"cleanup.policy", "delete"}});
    input_writer in(input, 1);
    for (std::int64_t i = 0; i < 50; ++i) in.write(i, 7);
    in.flush();
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        config(app_id, {input}, dir),
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("s") | t.logged();
        },
        [](auto&, const auto& r) {
            if (r.offset == 17) throw std::runtime_error("no records numbered 17, please");
        });
    running run(app);
    const std::exception_ptr failure = run.failure(60s);
    REQUIRE(failure != nullptr);
    try {
        std::rethrow_exception(failure);
    } catch (const strata::runtime::processing_error& e) {
        CHECK_THAT(e.what(), Catch::Contains("task 0 failed on the record at " + input + "[0]@17") &&
                                 Catch::Contains("no records numbered 17"));
    }
    // Nothing at or after the failing record was committed.
    CHECK(committed(app_id, input, 1)[0] <= 17);
}

namespace {
/// Counts a tick into its store on every wall-clock punctuation, and each
/// record into the same store.
struct ticking {
    std::shared_ptr<std::atomic<int>> ticks;

    template <class Context>
    void init(Context& ctx) {
        ctx.schedule(std::chrono::milliseconds(100), strata::runtime::punctuation_type::wall_clock_time,
                     [t = ticks](Context& c, std::int64_t) {
                         c.stores().put("ticks", ++*t);
                     });
    }
    template <class Context, class Record>
    void operator()(Context& ctx, const Record& r) {
        ctx.stores().put(r.key, r.value.value_or(0));
    }
};
}  // namespace

TEST_CASE("runtime: exactly-once, a punctuation's store writes with no input are committed within the commit "
          "interval, for longer than the transaction timeout, and the producer is never fenced",
          "[kafka][runtime][api][punctuation]") {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("idle-punctuate");
    const std::string input = kafka_test::make_topic("idle-punctuate-in", 1, {{"cleanup.policy", "delete"}});
    input_writer in(input, 1);
    in.write(0, 1);
    in.flush();

    strata::runtime::application_options c = config(app_id, {input}, dir);
    c.guarantee = strata::runtime::processing_guarantee::exactly_once;
    c.transaction_timeout = std::chrono::milliseconds(3'000);
    ticking proc{std::make_shared<std::atomic<int>>(0)};
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        c,
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("ticks") | t.logged();
        },
        proc);
    const std::string changelog = strata::kafka::changelog_topic_name(app_id, "ticks");
    {
        running run(app);
        REQUIRE(await_committed(app_id, input, in.written(), 60s));
        // No input for three transaction timeouts: a transaction the
        // punctuations kept open would be aborted by the broker, the
        // producer fenced, and run() would fail.
        std::this_thread::sleep_for(9s);
        REQUIRE(run.failure(0s) == nullptr);
        // What the ticks wrote is committed (read committed) within about a
        // commit interval of being written.
        const int ticked = proc.ticks->load();
        std::int64_t last = 0;
        for (const auto& [key, value] : read_partition(changelog, 0))
            if (key == "ticks") last = strata::decode<std::int64_t>(strata::bytes_view(value));
        INFO("ticks " << ticked << ", last committed " << last);
        CHECK(ticked >= 60);
        CHECK(last >= ticked - 10);  // 200 ms of commit interval is 2 ticks; read_partition waits too
        run.stop();
    }
    const std::string metrics = strata::metrics::to_prometheus(app.metrics());
    INFO(metrics);
    const auto count = [&](const std::string& series) {
        const auto at = metrics.find(series + " ");
        return at == std::string::npos ? 0.0 : std::stod(metrics.substr(at + series.size() + 1));
    };
    CHECK(count("strata_instance_fenced_total{instance=\"in-process\"}") == 0);
    CHECK(count("strata_instance_commits_failed_total{instance=\"in-process\"}") == 0);
}

TEST_CASE("runtime: two processing threads share the tasks, each with its own transactions, and queries reach the "
          "thread that holds the partition",
          "[kafka][runtime][api][threads]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 40;
    const std::string app_id = kafka_test::unique_name("threads");
    const std::string input = kafka_test::make_topic("threads-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("threads-out", partitions, {{"cleanup.policy", "delete"}});
    input_writer in(input, partitions);

    strata::runtime::application_options c = config(app_id, {input}, dir);
    c.guarantee = strata::runtime::processing_guarantee::exactly_once;
    c.processing_threads = 2;
    c.endpoint = "127.0.0.1:1";  // announced only: nothing listens
    auto threads_seen = std::make_shared<std::mutex>();
    auto processed_on = std::make_shared<std::map<std::int32_t, std::set<std::thread::id>>>();
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        c,
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("counts") | t.logged() | strata::cached();
        },
        [output, threads_seen, processed_on](auto& ctx, const auto& r) {
            auto& counts = ctx.stores();
            const std::int64_t n = counts.get(r.key).value_or(0) + 1;
            counts.put(r.key, n);
            ctx.emit(output, r.key, n);
            const std::lock_guard lock(*threads_seen);
            (*processed_on)[ctx.partition()].insert(std::this_thread::get_id());
        });
    std::map<std::string, std::int64_t> expected;
    {
        running run(app);
        // The input is written once each thread runs its two tasks: the
        // first assignment may come before the second thread joins, and
        // its tasks then move (one thread per task is what is checked).
        REQUIRE(await_metadata(app, 2, 30s));
        for (const auto until = std::chrono::steady_clock::now() + 30s;;) {
            const auto md = app.metadata();
            std::size_t balanced = 0;
            for (const auto& i : md->instances()) balanced += i.active.size() == 2 ? 1 : 0;
            if (balanced == 2 && app.local_tasks().size() == static_cast<std::size_t>(partitions)) break;
            REQUIRE(std::chrono::steady_clock::now() < until);
            std::this_thread::sleep_for(20ms);
        }
        for (std::int64_t i = 0; i < 2'000; ++i) in.write(i, keys);
        in.flush();
        REQUIRE(await_committed(app_id, input, in.written(), 60s));
        // Both threads are members of the group, each running tasks.
        const auto md = app.metadata();
        std::set<std::string> members;
        for (const auto& i : md->instances()) {
            members.insert(i.instance);
            CHECK_FALSE(i.active.empty());
            CHECK(i.endpoint == "127.0.0.1:1");
        }
        CHECK(members == std::set<std::string>{"in-process", "in-process-t1"});
        CHECK(app.runs_as("in-process-t1"));
        CHECK_FALSE(app.runs_as("in-process-t2"));
        for (const auto& each : in.written())
            for (const auto& i : each) ++expected[i.key];
        // Every key answers from whichever thread holds its partition. A
        // partition may still move to the second thread (a warm-up copy
        // handed over after the first assignment): while it moves the answer
        // is `rebalancing` or `restoring`, and is asked again.
        using strata::runtime::query_status;
        for (const auto& [key, n] : expected) {
            auto r = app.get(key);
            for (const auto until = std::chrono::steady_clock::now() + 30s;
                 (r.status == query_status::restoring || r.status == query_status::rebalancing) &&
                 std::chrono::steady_clock::now() < until;
                 r = app.get(key))
                std::this_thread::sleep_for(20ms);
            INFO(key << ": " << strata::runtime::to_string(r.status));
            REQUIRE(r.ok());
            CHECK(r.value == std::optional<std::int64_t>(n));
        }
        CHECK(app.local_tasks().size() == static_cast<std::size_t>(partitions));
        run.stop();
    }
    // One thread per task, and two threads in all.
    std::set<std::thread::id> all;
    for (const auto& [p, ids] : *processed_on) {
        CHECK(ids.size() == 1);
        all.insert(ids.begin(), ids.end());
    }
    CHECK(all.size() == 2);
    // Exactly-once: one output per input, each key's last the count of its inputs.
    std::map<std::string, std::int64_t> last;
    std::size_t outputs = 0;
    for (std::int32_t p = 0; p < partitions; ++p)
        for (const auto& [key, value] : read_partition(output, p)) {
            last[key] = strata::decode<std::int64_t>(strata::bytes_view(value));
            ++outputs;
        }
    CHECK(outputs == 2'000);
    CHECK(last == expected);
    // Each thread has a transactional id of its own: neither fenced the other.
    const std::string metrics = strata::metrics::to_prometheus(app.metrics());
    INFO(metrics);
    CHECK_THAT(metrics, Catch::Contains("strata_instance_tasks{instance=\"in-process\",") &&
                            Catch::Contains("strata_instance_tasks{instance=\"in-process-t1\","));
    CHECK_THAT(metrics, !Catch::Contains("strata_instance_fenced_total") &&
                            !Catch::Contains("strata_instance_transactions_in_doubt_total"));
    // Thread 1 keeps its local state apart.
    CHECK(std::filesystem::exists(dir / "state" / "thread-1" / app_id));
}

namespace {
/// Keeps each record's amount under its key.
struct storing {
    template <class Context, class Record>
    void operator()(Context& ctx, const Record& r) {
        ctx.stores().put(r.key, r.value.value_or(0));
    }
};
}  // namespace

TEST_CASE("runtime: a commit comes early rather than cover more than max_partitions_per_commit partitions",
          "[kafka][runtime][api][commit-width]") {
    // Four tasks with a record each, a logged store (a changelog and an
    // output partition: two partitions a task), a limit of two and a commit
    // interval of ten minutes: only commits that come early, each covering
    // one task, commit the records of three of them within the test's wait.
    // (The last one's commit waits for the interval: nothing comes after it.)
    const auto guarantee = GENERATE(strata::runtime::processing_guarantee::at_least_once,
                                    strata::runtime::processing_guarantee::exactly_once);
    INFO("exactly-once: " << (guarantee == strata::runtime::processing_guarantee::exactly_once));
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("commit-width");
    constexpr std::int32_t partitions = 4;
    const std::string input = kafka_test::make_topic("commit-width-in", partitions, {{"cleanup.policy", "delete"}});
    input_writer in(input, partitions);
    std::set<std::int32_t> fed;
    for (std::int64_t i = 0; fed.size() < static_cast<std::size_t>(partitions); ++i) {
        const std::int32_t p = partition_of(key_of(i, 1000), partitions);
        if (fed.insert(p).second) in.write(i, 1000);
    }
    in.flush();

    strata::runtime::application_options c = config(app_id, {input}, dir);
    c.guarantee = guarantee;
    c.commit_interval = std::chrono::minutes(10);
    c.max_partitions_per_commit = 2;
    auto app = strata::runtime::make_application<std::string, std::int64_t>(
        c,
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("kept") | t.logged();
        },
        storing{});
    running run(app);
    int committed_partitions = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (committed_partitions < partitions - 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);
        const std::vector<std::int64_t> offsets = committed(app_id, input, partitions);
        committed_partitions = static_cast<int>(std::count(offsets.begin(), offsets.end(), 1));
    }
    CHECK(committed_partitions >= partitions - 1);
    REQUIRE(run.failure(0s) == nullptr);
    run.stop();
}
