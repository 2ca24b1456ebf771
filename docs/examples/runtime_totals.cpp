// docs/runtime.md's example: an application that keeps the running total of
// payments per account, run as any number of instances.
//
//   runtime_totals --bootstrap 127.0.0.1:9092 --feed 100000    create the topics, write payments
//   runtime_totals --bootstrap 127.0.0.1:9092 --state /tmp/a --instance a     one instance; Ctrl-C stops it
//   runtime_totals --bootstrap 127.0.0.1:9092 --state /tmp/b --instance b     another, elsewhere
//   runtime_totals --bootstrap 127.0.0.1:9092 --quick          a self-check on fresh topics (a test)

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

struct settings {
    std::string bootstrap = "127.0.0.1:9092";
    std::string app = "totals-example";
    std::string payments = "payments";
    std::string totals = "totals";
    std::filesystem::path state = std::filesystem::temp_directory_path() / "strata-totals";
    std::string instance;
    long feed = 0;
    bool quick = false;
};

// [make-options]
strata::runtime::application_options options_of(const settings& s) {
    strata::runtime::application_options c;
    c.application_id = s.app;                 // the group, and the changelogs' prefix
    c.bootstrap_servers = s.bootstrap;
    c.input_topics = {s.payments};            // one task per partition of it
    c.state_dir = s.state;                    // this instance's own folder
    c.instance_id = s.instance;               // stable across restarts: fences a predecessor
    c.guarantee = strata::runtime::processing_guarantee::exactly_once;
    c.standby_replicas = 1;                   // a warm copy of each task on another instance
    return c;
}
// [make-options]

// [make-app]
auto make_totals(const settings& s) {
    return strata::runtime::make_application<std::string, std::int64_t>(
        options_of(s),
        // Once per task: its stores. Changelog: totals-example-totals-changelog.
        [](strata::runtime::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("totals") | t.logged() | strata::cached() |
                   t.metered();
        },
        // Once per payment: the account's new total, to the totals topic.
        [out = s.totals](auto& ctx, const strata::runtime::record<std::string, std::int64_t>& payment) {
            auto& totals = ctx.stores();
            const std::int64_t total = totals.get(payment.key).value_or(0) + payment.value.value_or(0);
            totals.put(payment.key, total);
            ctx.emit(out, payment.key, total);
        });
}
// [make-app]

// [signals]
std::atomic<bool> stop_requested{false};
extern "C" void on_stop_signal(int) { stop_requested = true; }

template <class App>
void run_until_signalled(App& app) {
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    std::thread watcher([&app] {
        while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        app.stop();  // commits, closes the tasks, leaves the group at once
    });
    app.run();
    stop_requested = true;
    watcher.join();
}
// [signals]

std::string account(long i) { return "account-" + std::to_string(i % 97); }
std::int64_t amount(long i) { return i % 50 + 1; }

void create_topics(const settings& s) {
    strata::kafka::topic_options o;
    o.bootstrap_servers = s.bootstrap;
    o.partitions = 6;
    o.topic_configs = {{"cleanup.policy", "delete"}};
    o.require_compaction = false;
    (void)strata::kafka::ensure_topic(s.payments, o);
    (void)strata::kafka::ensure_topic(s.totals, o);
}

/// Writes payments 0..n-1, each to the partition of its account.
void feed(const settings& s, long n) {
    strata::kafka::producer p({s.bootstrap, std::nullopt, {}});
    auto& tracker = p.new_tracker();
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get(), s.payments.c_str(), nullptr));
    for (long i = 0; i < n; ++i) {
        const std::string key = account(i);
        const strata::byte_buffer value = strata::encode(amount(i));
        p.produce(t.get(), strata::kafka::default_partition(strata::as_bytes(key), 6), strata::as_bytes(key),
                  strata::bytes_view(value), tracker);
    }
    p.wait(tracker);
    if (tracker.has_failed()) throw std::runtime_error("feed: " + tracker.first_error_text);
}

// [query]
/// An account's total, read from the running application on any thread.
template <class App>
std::optional<std::int64_t> total_of(const App& app, const std::string& account) {
    const auto r = app.get(account);  // store 0 of the account's partition
    switch (r.status) {
        case strata::runtime::query_status::ok:
            return r.value.value();  // itself an optional: nullopt for an account without payments
        case strata::runtime::query_status::not_owned:
            // Another instance runs the partition: ask it, at r.owner_endpoint
            // (the query gateway, strata::gateway, does exactly that).
            throw std::runtime_error(account + " is kept by " + r.owner + " at " + r.owner_endpoint);
        default:
            // not_running, restoring (r.restored of r.to_restore records),
            // rebalancing: nothing to answer from yet. Ask again shortly.
            throw std::runtime_error(account + ": " + strata::runtime::to_string(r.status));
    }
}

/// Accounts with a total of at least `min` in one partition: a read-only
/// function over the store, run under the task's lock.
template <class App>
long accounts_over(const App& app, std::int32_t partition, std::int64_t min) {
    const auto r = app.query(partition, [&](const auto& totals) {
        long n = 0;
        for (const auto& [account, total] : totals.all()) n += total >= min ? 1 : 0;
        return n;
    });
    return r.ok() ? *r : -1;
}
// [query]

/// Runs one instance on fresh topics until every payment's total is out,
/// then checks each account's last total.
int quick_check(settings s) {
    const std::string suffix = std::to_string(::getpid()) + "-" +
                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    s.app += "-" + suffix;
    s.payments += "-" + suffix;
    s.totals += "-" + suffix;
    s.state /= suffix;
    s.instance = "quick";
    constexpr long n = 2000;
    create_topics(s);
    feed(s, n);
    auto app = make_totals(s);
    std::thread runner([&app] { app.run(); });
    // Read the totals as they come; the last one per account must be its sum.
    std::map<std::string, std::int64_t> expected, last;
    for (long i = 0; i < n; ++i) expected[account(i)] += amount(i);
    long seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (seen < n && std::chrono::steady_clock::now() < deadline) {
        seen = 0;
        last.clear();
        for (int p = 0; p < 6; ++p) {
            strata::kafka::changelog_options o;
            o.bootstrap_servers = s.bootstrap;
            o.topic = s.totals;
            o.partition = p;
            strata::kafka::changelog out(o);
            for (const strata::record_view r : out.replay(0)) {
                last[std::string(strata::as_chars(r.key))] = strata::decode<std::int64_t>(*r.value);
                ++seen;
            }
        }
        if (seen < n) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // The same totals, asked of the running application.
    long answered = 0, over = 0;
    for (const auto& [acct, total] : expected) answered += total_of(app, acct) == total ? 1 : 0;
    for (std::int32_t p = 0; p < 6; ++p) over += accounts_over(app, p, 0);
    app.stop();
    runner.join();
    std::error_code ec;
    std::filesystem::remove_all(s.state, ec);
    if (seen != n || last != expected) {
        std::printf("RUNTIME EXAMPLE FAILED: %ld totals of %ld payments\n", seen, n);
        return 1;
    }
    if (answered != static_cast<long>(expected.size()) || over != answered) {
        std::printf("RUNTIME EXAMPLE FAILED: queries answered %ld of %zu totals right, %ld accounts listed\n", answered,
                    expected.size(), over);
        return 1;
    }
    std::printf("RUNTIME EXAMPLE PASSED: %ld payments, %zu accounts, every total right\n", n, last.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
        if (a == "--bootstrap") s.bootstrap = value();
        else if (a == "--state") s.state = value();
        else if (a == "--instance") s.instance = value();
        else if (a == "--feed") s.feed = std::stol(value());
        else if (a == "--quick") s.quick = true;
        else {
            std::fprintf(stderr, "usage: runtime_totals [--bootstrap B] [--feed N | --state DIR --instance NAME | --quick]\n");
            return 2;
        }
    }
    try {
        if (s.quick) return quick_check(s);
        if (s.feed > 0) {
            create_topics(s);
            feed(s, s.feed);
            std::printf("wrote %ld payments to %s\n", s.feed, s.payments.c_str());
            return 0;
        }
        auto app = make_totals(s);
        run_until_signalled(app);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runtime_totals: %s\n", e.what());
        return 1;
    }
}
