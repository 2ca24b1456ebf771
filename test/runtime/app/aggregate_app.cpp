// One instance of the runtime tests' application: reads (string key, int64
// amount) records, keeps per-key totals in a store logged to Kafka, and
// writes one `update` per input to the output topic. The tests start several
// of these as separate processes, kill some, restart others.
//
// It reports on stdout, one line each, for the tests to read:
//   restored task=<p> store=<name> records=<n> from=<offset> to=<offset>
//   started task=<p> restored=<n> previous_owner=<instance> previous_commit_ms=<ms> noticed_ms=<ms> assigned_ms=<ms> restored_ms=<ms> first_record_ms=<ms>
//   rebalance at_ms=<ms>      (the leader saw the group's membership change)
//   stopped
// and on SIGUSR1 its metrics (Prometheus text, histogram buckets left out)
// between the lines "metrics of <instance>:" and "end of metrics": what a
// stalled test prints, to tell a task that runs nowhere from one that
// lags or one whose commits do not land.
//
// With --audit TOPIC, each input also writes one record to partition p of
// TOPIC (p: the task's partition), keyed by who wrote it,
// `<instance>/<pid>/<build>` (build: how many times this process has built
// the task's stores, so a task released and taken again is a new writer),
// its value the input's offset and when it was processed (wall clock, µs:
// the processes share a machine). Under exactly-once it commits with the
// output. The chaos test reads it to tell which copy of a task wrote when.
//
// Usage: aggregate_app --bootstrap B --app ID --input T --output T --state DIR
//          --instance NAME [--exactly-once] [--persistent | --rocksdb] [--dead-letter]
//          [--commit-ms N] [--session-ms N] [--liveness-ms N] [--transaction-ms N] [--delay-us N] [--no-cache]
//          [--standbys N] [--acceptable-lag N] [--standby-fetch-ms N] [--broker-timeout-ms N] [--audit TOPIC] [--threads N]
//          [--consumer-debug CONTEXTS] [--notes (the runtime's notes on coordination, on stderr)] [--ten-stores (built with STRATA_APP_TEN_STORES only)]

#include "aggregate.hpp"
#include "snapshot_store.hpp"

#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>
#if STRATA_APP_WITH_ROCKSDB
#include <strata/stores/rocksdb_store.hpp>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <unistd.h>

namespace {

/// How many times this process built each task's stores (see --audit), for
/// inputs of up to 4,096 partitions (the scale benchmark runs 1,024).
std::array<std::atomic<int>, 4096> builds{};

/// The writer of an audit record: this process's copy of task `p`.
std::string writer_of(const std::string& instance, std::int32_t p) {
    return instance + "/" + std::to_string(::getpid()) + "/" +
           std::to_string(builds.at(static_cast<std::size_t>(p)).load());
}

std::function<void()> stop_app;
volatile std::sig_atomic_t stop_before_run = 0;  // a signal came before run() set stop_app
void on_signal(int) {
    if (stop_app) stop_app();
    else stop_before_run = 1;
}
std::atomic<bool> metrics_asked{false};
void on_metrics_signal(int) { metrics_asked.store(true); }

/// Prints the metrics each time SIGUSR1 asks, until `done`.
void serve_metrics_dumps(strata::metrics::registry& r, const std::string& instance, const std::atomic<bool>& done) {
    while (!done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!metrics_asked.exchange(false)) continue;
        std::string text = "metrics of " + instance + ":\n";
        const std::string all = strata::metrics::to_prometheus(r);
        for (std::size_t at = 0; at < all.size();) {
            const std::size_t end = std::min(all.find('\n', at), all.size());
            const std::string_view line(all.data() + at, end - at);
            if (line.find("_bucket{") == std::string_view::npos && line.rfind("# ", 0) != 0) {
                text.append(line);
                text += '\n';
            }
            at = end + 1;
        }
        text += "end of metrics\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    }
}

struct options {
    std::map<std::string, std::string> values;
    [[nodiscard]] std::string get(const std::string& name, const std::string& fallback = "") const {
        const auto it = values.find(name);
        return it == values.end() ? fallback : it->second;
    }
    [[nodiscard]] bool flag(const std::string& name) const { return values.contains(name); }
};

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--", 0) != 0) continue;
        if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) o.values[a.substr(2)] = argv[++i];
        else o.values[a.substr(2)] = "";
    }
    return o;
}

template <bool Cache, class Store>
auto make_app(const strata::runtime::application_options& c, Store make_store, std::chrono::microseconds delay,
              const std::string& output, const std::string& audit) {
    return strata::runtime::make_application<std::string, std::int64_t>(
        c,
        [make_store](strata::runtime::task_context& t) {
            builds.at(static_cast<std::size_t>(t.partition())).fetch_add(1);
            // Without the cache every update writes its record at once, so a
            // kill leaves records after the last checkpoint.
            if constexpr (Cache) return make_store(t) | t.logged() | strata::cached();
            else return make_store(t) | t.logged();
        },
        [output, delay, audit, instance = c.instance_id](auto& ctx, const auto& r) {
            auto& store = ctx.stores();
            runtime_test::totals now = store.get(r.key).value_or(runtime_test::totals{0, 0});
            now.count += 1;
            now.sum += r.value.value_or(0);
            store.put(r.key, now);
            ctx.emit(output, r.key, runtime_test::update{r.offset, now.count, now.sum});
            if (!audit.empty()) {
                const std::int64_t processed_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                                      std::chrono::system_clock::now().time_since_epoch())
                                                      .count();
                ctx.emit(audit, writer_of(instance, ctx.partition()), std::vector<std::int64_t>{r.offset, processed_us},
                         ctx.partition());
            }
            if (delay.count() > 0) std::this_thread::sleep_for(delay);
        });
}

#if STRATA_APP_TEN_STORES
/// --ten-stores (benchmarks/runtime builds it; the tests' build does not pay
/// for its compile): the totals and nine more logged stores a task, each
/// updated by every record, so that an instance holds ten changelogs per task.
auto make_ten_store_app(const strata::runtime::application_options& c, const std::string& output) {
    return strata::runtime::make_application<std::string, std::int64_t>(
        c,
        [](strata::runtime::task_context& t) {
            using counts = strata::hash_map_store<std::string, std::int64_t>;
            return std::make_tuple(strata::hash_map_store<std::string, runtime_test::totals>("totals") | t.logged(),
                                   counts("extra1") | t.logged(), counts("extra2") | t.logged(),
                                   counts("extra3") | t.logged(), counts("extra4") | t.logged(),
                                   counts("extra5") | t.logged(), counts("extra6") | t.logged(),
                                   counts("extra7") | t.logged(), counts("extra8") | t.logged(),
                                   counts("extra9") | t.logged());
        },
        [output](auto& ctx, const auto& r) {
            auto& stores = ctx.stores();
            auto& totals = std::get<0>(stores);
            runtime_test::totals now = totals.get(r.key).value_or(runtime_test::totals{0, 0});
            now.count += 1;
            now.sum += r.value.value_or(0);
            totals.put(r.key, now);
            std::apply([&](auto&, auto&... extra) { (extra.put(r.key, now.count), ...); }, stores);
            ctx.emit(output, r.key, runtime_test::update{r.offset, now.count, now.sum});
        });
}
#endif

template <class App>
int run(App&& app) {
    app.on_restore([](const strata::runtime::restore_event& e) {
        if (e.what != strata::runtime::restore_event::phase::end) return;
        std::printf("restored task=%s store=%.*s records=%llu from=%llu to=%llu\n", e.task.c_str(),
                    static_cast<int>(e.progress.store.size()), e.progress.store.data(),
                    static_cast<unsigned long long>(e.progress.records_done),
                    static_cast<unsigned long long>(e.progress.from), static_cast<unsigned long long>(e.progress.to));
        std::fflush(stdout);
    });
    app.on_takeover([](const strata::runtime::task& t) {
        const auto& tl = t.timeline;
        std::printf("started task=%s restored=%llu previous_owner=%s previous_commit_ms=%lld noticed_ms=%lld "
                    "assigned_ms=%lld restored_ms=%lld first_record_ms=%lld\n",
                    t.id().c_str(), static_cast<unsigned long long>(tl.records_restored),
                    tl.previous_owner.empty() ? "-" : tl.previous_owner.c_str(),
                    static_cast<long long>(tl.previous_commit_ms), static_cast<long long>(tl.noticed_ms),
                    static_cast<long long>(tl.assigned_ms),
                    static_cast<long long>(tl.restored_ms), static_cast<long long>(tl.first_record_ms));
        std::fflush(stdout);
    });
    app.on_rebalance_noticed([](std::int64_t at_ms) {
        std::printf("rebalance at_ms=%lld\n", static_cast<long long>(at_ms));
        std::fflush(stdout);
    });
    stop_app = [&app] { app.stop(); };
    if (stop_before_run != 0) app.stop();  // run() then stops cleanly at once
    std::atomic<bool> done{false};
    std::thread dumps(serve_metrics_dumps, std::ref(app.metrics()), app.options().instance_id, std::cref(done));
    struct join_dumps {
        std::atomic<bool>& done;
        std::thread& t;
        ~join_dumps() {
            done.store(true);
            t.join();
        }
    } joined{done, dumps};
    app.run();
    std::printf("stopped\n");
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // First: a test may stop an instance the moment it started.
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    std::signal(SIGUSR1, on_metrics_signal);
    const options o = parse(argc, argv);
    strata::runtime::application_options c;
    c.application_id = o.get("app");
    c.bootstrap_servers = o.get("bootstrap");
    c.input_topics = {o.get("input")};
    c.state_dir = o.get("state");
    c.instance_id = o.get("instance");
    if (o.flag("exactly-once")) c.guarantee = strata::runtime::processing_guarantee::exactly_once;
    if (o.flag("dead-letter")) c.on_bad_record = strata::runtime::bad_record_action::dead_letter;
    c.commit_interval = std::chrono::milliseconds(std::stoll(o.get("commit-ms", "0")));
    c.session_timeout = std::chrono::milliseconds(std::stoll(o.get("session-ms", "6000")));
    c.liveness_timeout = std::chrono::milliseconds(std::stoll(o.get("liveness-ms", "600")));
    // The standbys' pacing (standby_fetch_interval, standby_pacing_from_partitions): the library's unless given.
    if (o.flag("standby-fetch-ms"))
        c.standby_fetch_interval = std::chrono::milliseconds(std::stoll(o.get("standby-fetch-ms")));
    if (o.flag("standby-pacing-from")) c.standby_pacing_from_partitions = std::stoull(o.get("standby-pacing-from"));
    // librdkafka's debug contexts for the group consumer (e.g. "cgrp"), on stderr.
    if (const std::string debug = o.get("consumer-debug"); !debug.empty()) c.consumer_settings["debug"] = debug;
    c.transaction_timeout = std::chrono::milliseconds(std::stoll(o.get("transaction-ms", "10000")));
    c.standby_replicas = std::stoi(o.get("standbys", "0"));
    c.processing_threads = std::stoi(o.get("threads", "1"));
    c.acceptable_standby_lag = std::stoll(o.get("acceptable-lag", "10000"));
    c.broker_timeout = std::chrono::milliseconds(std::stoll(o.get("broker-timeout-ms", "60000")));
    // The runtime's notes on coordination (on_note), on stderr with the wall clock's ms.
    if (o.flag("notes"))
        c.on_note = [](const std::string& line) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch());
            std::fprintf(stderr, "note at_ms=%lld %s\n", static_cast<long long>(ms.count()), line.c_str());
        };
    const std::chrono::microseconds delay(std::stoll(o.get("delay-us", "0")));
    const std::string output = o.get("output");
    const std::string audit = o.get("audit");
    try {
        const auto in_memory = [](strata::runtime::task_context&) {
            return strata::hash_map_store<std::string, runtime_test::totals>("totals");
        };
        const auto persistent = [](strata::runtime::task_context& t) {
            return runtime_test::snapshot_store<std::string, runtime_test::totals>("totals",
                                                                                 t.directory() / "totals.snapshot");
        };
        const bool cache = !o.flag("no-cache");
#if STRATA_APP_TEN_STORES
        if (o.flag("ten-stores")) return run(make_ten_store_app(c, output));
#else
        if (o.flag("ten-stores")) throw std::invalid_argument("--ten-stores: built without STRATA_APP_TEN_STORES");
#endif
#if STRATA_APP_WITH_ROCKSDB
        if (o.flag("rocksdb")) {
            const auto rocks = [](strata::runtime::task_context& t) {
                return strata::rocksdb_store<std::string, runtime_test::totals>("totals", t.directory() / "totals");
            };
            if (cache) return run(make_app<true>(c, rocks, delay, output, audit));
            return run(make_app<false>(c, rocks, delay, output, audit));
        }
#else
        if (o.flag("rocksdb")) throw std::invalid_argument("--rocksdb: built without strata::rocksdb");
#endif
        if (o.flag("persistent")) {
            if (cache) return run(make_app<true>(c, persistent, delay, output, audit));
            return run(make_app<false>(c, persistent, delay, output, audit));
        }
        if (cache) return run(make_app<true>(c, in_memory, delay, output, audit));
        return run(make_app<false>(c, in_memory, delay, output, audit));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "aggregate_app failed: %s\n", e.what());
        try {
            std::rethrow_if_nested(e);
        } catch (const std::exception& inner) {
            std::fprintf(stderr, "  because: %s\n", inner.what());
        }
        return 2;
    }
}
