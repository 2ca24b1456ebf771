// strata's demo: a relational table, which is not a key-value store, made
// fault tolerant by its codec alone, on the embedded file changelog.
//
//   1. a worker process applies a workload of inserts, multi-row updates and
//      deletes through  table | logged(file_log) | cached | metered,
//      committing (flush) every few thousand updates;
//   2. it crashes: SIGKILL, with updates applied since its last commit;
//   3. a fresh process-side store restores from the changelog, with progress;
//   4. the restored table is checked against the state computed
//      independently from the committed part of the workload;
//   5. the metrics, and changelog records written against updates applied.
//
// Usage: demo [--quick] [--updates N] [--dir PATH] [--keep] [--kafka BOOTSTRAP]
//   --kafka 127.0.0.1:9092 runs the same scenario with the changelog in Kafka
//   (a compacted topic strata-demo-<pid>-employees-changelog) instead of files.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>

#include "demo_workload.hpp"
#include "relational_table.hpp"

#if STRATA_DEMO_WITH_KAFKA
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#endif

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using example::delete_where;
using example::employee;
using example::employee_table;
using example::insert_row;
using example::table_codec;
using example::update_where;
using example::where;

namespace {

using demo::apply_to_model;
using demo::departments;
using demo::in_team;
using demo::operation;
using demo::settings;
using demo::workload;

template <class Store>
void apply_to_table(Store& store, const operation& op) {
    switch (op.kind) {
        case operation::hire:
            store.apply(insert_row{employee{op.id, "employee-" + std::to_string(op.id), op.department, op.amount}});
            break;
        case operation::raise_group: {
            const std::int64_t team = op.id, amount = op.amount;
            store.apply(update_where{where{.department = op.department,
                                           .predicate = [team](const employee& e) { return in_team(e, team); }},
                                     [amount](employee& e) { e.salary += amount; }});
            break;
        }
        case operation::pay_change: {
            const std::int64_t amount = op.amount;
            store.apply(update_where{where{.id = op.id}, [amount](employee& e) { e.salary += amount; }});
            break;
        }
        case operation::fire_low_paid: {
            const std::int64_t limit = op.amount;
            store.apply(delete_where{where{.department = op.department,
                                           .predicate = [limit](const employee& e) { return e.salary < limit; }}});
            break;
        }
        case operation::fire:
            store.apply(delete_where{where{.id = op.id}});
            break;
    }
}

// ---- the worker: runs the workload and commits until it is killed
template <class Log>
[[noreturn]] void run_worker(const settings& s, int report_fd, Log& log) {
    strata::metrics::registry registry;
    auto store = employee_table("employees") | strata::logged(log, table_codec{}) | strata::cached() |
                 strata::metered(registry);
    workload w(s);
    const auto report = [&](const std::string& line) { demo::report_line(report_fd, line); };
    const std::int64_t crash_at = s.updates - s.commit_every / 2;  // mid-way between two commits
    for (std::int64_t i = 1; i <= s.updates; ++i) {
        apply_to_table(store, w.next());
        if (i % s.commit_every == 0) {
            const strata::offset_t durable = store.flush();
            report("committed " + std::to_string(i) + " " + std::to_string(durable));
            if (i + s.commit_every > crash_at) {
                std::ofstream(s.dir / "worker-metrics.prom") << strata::metrics::to_prometheus(registry);
            }
        }
        if (i == crash_at) {
            report("crashing " + std::to_string(i));
            ::raise(SIGKILL);  // no destructor, no flush: the process state is gone
        }
    }
    std::_Exit(4);  // not reached: the worker always crashes
}

// ---- progress on the terminal while the store restores
struct progress_bar {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    int printed_tenths = -1;
    void on_restore_start(const strata::restore_progress& p) {
        std::cout << "  restoring '" << p.store << "' from offset " << p.from << " to " << p.to << " ("
                  << p.records_total << " records at most)\n";
    }
    void on_batch_restored(const strata::restore_progress& p) {
        const double frac = p.records_total ? static_cast<double>(p.position - p.from) / static_cast<double>(p.records_total) : 1.0;
        const int filled = static_cast<int>(frac * 40);
        if (filled / 4 == printed_tenths) return;  // one line per tenth of the way
        printed_tenths = filled / 4;
        std::cout << "  [" << std::string(static_cast<std::size_t>(filled), '#')
                  << std::string(static_cast<std::size_t>(40 - filled), '.') << "] " << p.records_done
                  << " records\n";
    }
    void on_restore_end(const strata::restore_progress& p) {
        const std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
        std::cout << "  restored " << p.records_done << " records in " << t.count() << " s ("
                  << static_cast<std::uint64_t>(static_cast<double>(p.records_done) / std::max(t.count(), 1e-9))
                  << " records/s)\n";
    }
};

void print_metrics(const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find("_bucket{") == std::string::npos && !line.starts_with("# HELP"))
            std::cout << "    " << line << "\n";
}

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&] {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return std::string(argv[++i]);
        };
        if (a == "--quick") s.updates = 20'000, s.employees = 2'000, s.commit_every = 1'000;
        else if (a == "--updates") s.updates = std::stoll(value());
        else if (a == "--dir") s.dir = value();
        else if (a == "--keep") s.keep = true;
        else if (a == "--kafka") s.kafka = value();
        else throw std::invalid_argument("unknown argument " + a +
                                         " (usage: demo [--quick] [--updates N] [--dir PATH] [--keep] [--kafka BOOTSTRAP])");
    }
    if (s.updates < 2 * s.commit_every) throw std::invalid_argument("--updates must be at least " + std::to_string(2 * s.commit_every));
    if (s.dir.empty()) s.dir = std::filesystem::temp_directory_path() / ("strata-demo-" + std::to_string(::getpid()));
#if !STRATA_DEMO_WITH_KAFKA
    if (!s.kafka.empty()) throw std::invalid_argument("--kafka: this demo was built without strata::kafka (librdkafka)");
#endif
    return s;
}

/// Runs f with the demo's changelog: the file log in s.dir, or Kafka.
template <class F>
decltype(auto) with_changelog(const settings& s, F&& f) {
#if STRATA_DEMO_WITH_KAFKA
    if (!s.kafka.empty()) {
        strata::kafka::changelog log(strata::kafka::changelog_options{
            .bootstrap_servers = s.kafka, .topic = s.kafka_topic, .partition = 0,
            .producer_settings = {{"linger.ms", "5"}}, .consumer_settings = {}});
        return f(log);
    }
#endif
    strata::file_log log(s.dir / "changelog");
    return f(log);
}

}  // namespace

int main(int argc, char** argv) try {
    settings s = parse(argc, argv);
    std::filesystem::remove_all(s.dir);
    std::filesystem::create_directories(s.dir);
    std::string where_logged = (s.dir / "changelog").string();
#if STRATA_DEMO_WITH_KAFKA
    if (!s.kafka.empty()) {
        // A fresh compacted topic per run. Created before the fork: no Kafka
        // client may be alive when the worker process is forked.
        strata::kafka::topic_options topic;
        topic.bootstrap_servers = s.kafka;
        s.kafka_topic = strata::kafka::ensure_changelog_topic("strata-demo-" + std::to_string(::getpid()),
                                                              "employees", topic);
        where_logged = "Kafka topic " + s.kafka_topic + " at " + s.kafka;
    }
#endif
    std::cout << "strata demo: a relational table made fault tolerant by its codec\n"
              << "  store:     employees (primary key id, secondary index on department)\n"
              << "  stack:     employee_table | logged(" << (s.kafka.empty() ? "file_log" : "kafka::changelog")
              << ") | cached(10 MiB) | metered(registry)\n"
              << "  changelog: " << where_logged << "\n\n";

    // 1-2. the worker runs, commits, and is killed
    std::cout << "1. workload: " << s.updates << " updates (inserts, multi-row UPDATE/DELETE), commit every "
              << s.commit_every << "\n";
    const demo::worker_report worker = demo::run_worker_until_killed(
        [&](int fd) { with_changelog(s, [&](auto& log) -> int { run_worker(s, fd, log); }); });
    const std::int64_t committed = worker.committed, applied = worker.applied;
    const strata::offset_t durable = worker.durable;
    std::cout << "2. crash: worker killed by SIGKILL after " << applied << " updates; the last commit covered "
              << committed << " (changelog durable up to offset " << durable << "),\n"
              << "   so " << applied - committed << " uncommitted updates are lost with the process, as they must be\n\n";

    // 3. restore a fresh store from the changelog
    std::cout << "3. restore into a fresh store\n";
    return with_changelog(s, [&](auto& log) {
    strata::metrics::registry registry;
    auto store = employee_table("employees") |
                 strata::logged(log, table_codec{}, {.restore_progress_every = 1'000}) | strata::cached() |
                 strata::metered(registry);
    store.restore(progress_bar{});

    // 4. check against the independently computed state of the committed updates
    std::map<std::int64_t, employee> expected;
    workload w(s);
    std::int64_t rows_touched = 0;
    for (std::int64_t i = 0; i < committed; ++i) rows_touched += apply_to_model(expected, w.next());
    const auto& restored = strata::innermost(store).rows();
    const bool equal = restored == expected;
    std::cout << "\n4. check: restored table " << (equal ? "EQUALS" : "DIFFERS FROM")
              << " the state computed from the " << committed << " committed updates (" << restored.size()
              << " rows, expected " << expected.size() << ")\n";
    std::int64_t payroll_ok = 0;
    for (const char* d : departments) {
        std::int64_t sum = 0;
        for (const auto& [id, e] : expected)
            if (e.department == d) sum += e.salary;
        payroll_ok += strata::innermost(store).payroll(d) == sum;
    }
    std::cout << "   secondary index: payroll per department matches in " << payroll_ok << " of 5 departments\n\n";

    // 5. metrics and records against updates
    std::cout << "5. metrics of the worker at its last commit (Prometheus text, buckets omitted; full text in "
              << (s.dir / "worker-metrics.prom").string() << ")\n";
    std::ifstream prom(s.dir / "worker-metrics.prom");
    print_metrics(std::string(std::istreambuf_iterator<char>(prom), {}));
    std::cout << "   metrics of the restoring store:\n";
    print_metrics(strata::metrics::to_prometheus(registry));
    std::cout << "\n   changelog records written: " << durable << " for " << committed << " committed updates ("
              << static_cast<double>(durable) / static_cast<double>(committed) << " records per update)\n"
              << "   without the cache, every touched row of every update is a record: " << rows_touched << " ("
              << static_cast<double>(rows_touched) / static_cast<double>(committed) << " per update);\n"
              << "   the cache wrote each row once per commit instead\n";

    if (!s.keep) std::filesystem::remove_all(s.dir);
    const bool ok = equal && payroll_ok == 5;
    std::cout << "\n" << (ok ? "RESTORE CHECK PASSED" : "RESTORE CHECK FAILED") << "\n";
    return ok ? 0 : 1;
    });
} catch (const std::exception& e) {
    std::cerr << "demo: " << e.what() << "\n";
    return 2;
}
