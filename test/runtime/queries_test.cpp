// Interactive queries against running applications: answers read while the
// tasks process are never torn between two records, a store that cannot
// answer says why (not running, restoring, owned elsewhere, position not
// reached), a standby answers with its lag when allowed, and every
// instance's metadata names the instance that answers for a key.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

using namespace runtime_test;
namespace rt = strata::runtime;

namespace {

rt::application_options config(const std::string& app, const std::string& input, const test_support::temp_dir& dir,
                              const std::string& instance) {
    rt::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {input};
    c.state_dir = dir / instance;
    c.instance_id = instance;
    c.endpoint = "127.0.0.1:" + std::to_string(7000 + instance.back());  // announced, never dialled here
    c.commit_interval = std::chrono::milliseconds(100);
    c.session_timeout = std::chrono::milliseconds(6000);
    return c;
}

/// Per key: how many records, and their sum, as of the whole input.
std::map<std::string, std::pair<std::int64_t, std::int64_t>> totals_of(const partitioned_input& written) {
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> t;
    for (const auto& part : written)
        for (const input& i : part) {
            t[i.key].first += 1;
            t[i.key].second += i.amount;
        }
    return t;
}

/// The store keeps per key a count and, under "<key>/sum", the sum: every
/// record changes both, so a reader that sees them disagree on the record
/// count has seen half an update.
struct counting {
    void operator()(auto& ctx, const auto& r) const {
        auto& s = ctx.stores();
        const std::int64_t n = s.get(r.key).value_or(0) + 1;
        s.put(r.key, n);
        s.put(r.key + "/sum", s.get(r.key + "/sum").value_or(0) + r.value.value_or(0));
        s.put(r.key + "/count", n);
    }
};

auto counting_store() {
    return [](rt::task_context& t) {
        return strata::ordered_map_store<std::string, std::int64_t>("counts") | t.logged() | strata::cached() |
               t.metered();
    };
}

/// Asks for `key` until the answer is ok (or the timeout passes).
template <class App>
auto await_ok(const App& app, const std::string& key, std::chrono::seconds timeout, rt::read_options o = {}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto r = app.get(key, o);
        if (r.ok() || std::chrono::steady_clock::now() > deadline) return r;
        std::this_thread::sleep_for(20ms);
    }
}

/// Asks for `key` until the answer has status s (or 10 s pass); the last answer.
template <class App>
auto app_wait_status(const App& app, const std::string& key, rt::query_status s) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
        auto r = app.get(key);
        if (r.status == s || std::chrono::steady_clock::now() > deadline) return r;
        std::this_thread::sleep_for(10ms);
    }
}

}  // namespace

TEST_CASE("queries: reads from other threads see whole records and the final state", "[kafka][runtime][queries]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 3;
    constexpr int keys = 40;
    const std::string app_id = kafka_test::unique_name("iq-local");
    const std::string input = kafka_test::make_topic("iq-in", partitions, {{"cleanup.policy", "delete"}});
    auto app = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a"), counting_store(),
                                                              counting{});

    const auto before = app.get(std::string("k1"));
    CHECK(before.status == rt::query_status::not_running);
    CHECK_FALSE(before.value);

    input_writer w(input, partitions);
    std::atomic<bool> done{false};
    std::atomic<std::int64_t> answered{0}, torn{0};
    {
        running run(app);
        // Readers race the processing thread for the whole run.
        std::vector<std::thread> readers;
        for (int r = 0; r < 2; ++r)
            readers.emplace_back([&, r] {
                for (std::int64_t i = r; !done.load(); ++i) {
                    const std::string key = key_of(i, keys);
                    const std::int32_t p = partition_of(key, partitions);
                    const auto res = app.query(p, [&](const auto& s) {
                        return std::pair(s.get(key).value_or(0), s.get(key + "/count").value_or(0));
                    });
                    if (!res.ok()) continue;
                    ++answered;
                    if (res->first != res->second) ++torn;
                }
            });
        // A failed REQUIRE below throws: the readers stop and are joined on
        // the way out, or their destructors would end the process without
        // Catch2's report of the failure.
        struct stop_readers {
            std::atomic<bool>& done;
            std::vector<std::thread>& readers;
            ~stop_readers() {
                done = true;
                for (auto& t : readers)
                    if (t.joinable()) t.join();
            }
        } stopper{done, readers};
        for (std::int64_t i = 0; i < 20'000; ++i) w.write(i, keys);
        w.flush();
        REQUIRE(await_committed(app_id, input, w.written(), 60s));

        // The final state, key by key.
        for (const auto& [key, expected] : totals_of(w.written())) {
            const auto count = app.get(key);
            REQUIRE(count.status == rt::query_status::ok);
            CHECK(count.value == std::optional<std::int64_t>(expected.first));
            CHECK(count.owner == "a");
            CHECK(count.position == static_cast<std::int64_t>(w.written()[static_cast<std::size_t>(count.partition)].size()));
            const std::string sum_key = key + "/sum";
            const auto sum = app.query(count.partition, [&](const auto& s) { return s.get(sum_key); });
            REQUIRE(sum.ok());
            CHECK(*sum == std::optional<std::int64_t>(expected.second));
        }
        // A custom read-only function over the whole store: a range, copied out.
        std::int64_t keys_seen = 0;
        for (std::int32_t p = 0; p < partitions; ++p) {
            const auto listed = app.query(p, [](const auto& s) {
                std::vector<std::string> out;
                for (const auto& [k, v] : s.all())
                    if (k.find('/') == std::string::npos) out.push_back(k);
                return out;
            });
            REQUIRE(listed.ok());
            for (const std::string& k : *listed) CHECK(partition_of(k, partitions) == p);
            keys_seen += static_cast<std::int64_t>(listed->size());
        }
        CHECK(keys_seen == keys);

        // Read your writes: a position already processed answers at once, one
        // not yet written waits for it and then says so.
        const std::string key = key_of(7, keys);
        const std::int32_t p = partition_of(key, partitions);
        rt::read_options at;
        at.min_position = static_cast<std::int64_t>(w.written()[static_cast<std::size_t>(p)].size()) - 1;
        CHECK(app.get(key, at).ok());
        at.min_position += 1;
        at.position_wait = 300ms;
        const auto t0 = std::chrono::steady_clock::now();
        const auto late = app.get(key, at);
        CHECK(late.status == rt::query_status::position_not_reached);
        CHECK(std::chrono::steady_clock::now() - t0 >= 300ms);
        CHECK_FALSE(late.value);
        // ... and is answered once the record arrives.
        std::thread writer([&] {
            std::this_thread::sleep_for(100ms);
            w.write(7, keys);
            w.flush();
        });
        at.position_wait = 10s;
        const auto fresh = app.get(key, at);
        writer.join();
        REQUIRE(fresh.ok());
        CHECK(*fresh == std::optional<std::int64_t>(totals_of(w.written())[key].first));

        CHECK(app.query(partitions, [](const auto&) { return 0; }).status == rt::query_status::unknown_partition);
        done = true;
        for (auto& t : readers) t.join();
        run.stop();
    }
    CHECK(answered.load() > 0);
    CHECK(torn.load() == 0);
    CHECK(app.get(std::string("k1")).status == rt::query_status::not_running);
}

TEST_CASE("queries: a restoring store says so with its progress, then answers", "[kafka][runtime][queries]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 5'000;
    const std::string app_id = kafka_test::unique_name("iq-restore");
    const std::string input = kafka_test::make_topic("iq-restore-in", partitions, {{"cleanup.policy", "delete"}});
    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 20'000; ++i) w.write(i, keys);
    w.flush();
    {
        auto first = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a"), counting_store(),
                                                                    counting{});
        running run(first);
        REQUIRE(await_committed(app_id, input, w.written(), 60s));
        run.stop();
    }
    std::filesystem::remove_all(dir / "a");  // the next instance restores everything from the changelog

    // The restore is held at its first batch until the test has asked.
    std::mutex m;
    std::condition_variable cv;
    bool seen = false, holding = false;
    auto again = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a"), counting_store(),
                                                                counting{});
    again.on_restore([&](const rt::restore_event& e) {
        if (e.what != rt::restore_event::phase::batch) return;
        std::unique_lock lock(m);
        holding = true;
        cv.notify_all();
        cv.wait_for(lock, 30s, [&] { return seen; });
    });
    running run(again);
    {
        std::unique_lock lock(m);
        REQUIRE(cv.wait_for(lock, 60s, [&] { return holding; }));
    }
    const std::string key = key_of(3, keys);
    const auto restoring = app_wait_status(again, key, rt::query_status::restoring);
    CHECK(restoring.status == rt::query_status::restoring);
    CHECK_FALSE(restoring.value);
    CHECK(restoring.to_restore > 0);
    CHECK(restoring.restored <= restoring.to_restore);
    {
        const std::lock_guard lock(m);
        seen = true;
    }
    cv.notify_all();
    const auto answered = await_ok(again, key, 60s);
    REQUIRE(answered.ok());
    CHECK(*answered == std::optional<std::int64_t>(totals_of(w.written())[key].first));
    run.stop();
}

TEST_CASE("queries: two instances agree on who answers for a key, and a standby answers with its lag",
          "[kafka][runtime][queries]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 200;
    const std::string app_id = kafka_test::unique_name("iq-two");
    const std::string input = kafka_test::make_topic("iq-two-in", partitions, {{"cleanup.policy", "delete"}});
    auto with_standby = [&](const std::string& id) {
        rt::application_options c = config(app_id, input, dir, id);
        c.standby_replicas = 1;
        return c;
    };
    auto a = rt::make_application<std::string, std::int64_t>(with_standby("a"), counting_store(), counting{});
    auto b = rt::make_application<std::string, std::int64_t>(with_standby("b"), counting_store(), counting{});
    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 10'000; ++i) w.write(i, keys);
    w.flush();
    running run_a(a);
    running run_b(b);
    REQUIRE(await_committed(app_id, input, w.written(), 60s));
    REQUIRE(await_metadata(a, 2, 60s));
    REQUIRE(await_metadata(b, 2, 60s));
    const auto totals = totals_of(w.written());

    // Every key: one instance answers, the other names it and its endpoint,
    // and both instances' metadata agree with the one that answered.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    std::set<std::string> owners;
    for (const auto& [key, expected] : totals) {
        for (;;) {
            const auto ra = a.get(key);
            const auto rb = b.get(key);
            const bool settled = (ra.ok() && rb.status == rt::query_status::not_owned) ||
                                 (rb.ok() && ra.status == rt::query_status::not_owned);
            if (!settled) {
                REQUIRE(std::chrono::steady_clock::now() < deadline);
                std::this_thread::sleep_for(20ms);
                continue;
            }
            const auto& answer = ra.ok() ? ra : rb;
            const auto& other = ra.ok() ? rb : ra;
            const auto& owner_app = ra.ok() ? a : b;
            CHECK(*answer == std::optional<std::int64_t>(expected.first));
            CHECK(other.owner == owner_app.options().instance_id);
            CHECK(other.owner_endpoint == owner_app.options().endpoint);
            CHECK_FALSE(other.value);
            CHECK(a.metadata()->for_key(key).active == owner_app.options().instance_id);
            CHECK(b.metadata()->for_key(key).active_endpoint == owner_app.options().endpoint);
            CHECK(a.metadata()->for_key(key).partition == partition_of(key, partitions));
            owners.insert(owner_app.options().instance_id);
            break;
        }
    }
    CHECK(owners.size() == 2);  // both instances run partitions

    // The metadata lists both instances, their endpoints and all partitions once.
    const auto md = b.metadata();
    std::set<std::int32_t> active, standby;
    for (const auto& i : md->instances()) {
        CHECK((i.instance == "a" || i.instance == "b"));
        CHECK(i.endpoint == (i.instance == "a" ? a : b).options().endpoint);
        for (std::int32_t p : i.active) CHECK(active.insert(p).second);
        for (std::int32_t p : i.standbys) standby.insert(p);
    }
    CHECK(active.size() == static_cast<std::size_t>(partitions));
    CHECK(standby.size() == static_cast<std::size_t>(partitions));  // one standby per partition

    // A standby read answers on the instance that does not own the key,
    // with its lag, and converges on the final value as it tails the changelog.
    rt::read_options stale;
    stale.allow_standby = true;
    for (const auto& [key, expected] : totals) {
        auto& non_owner = a.metadata()->for_key(key).active == "a" ? b : a;
        const auto until = std::chrono::steady_clock::now() + 30s;
        for (;;) {
            const auto r = non_owner.get(key, stale);
            if (r.ok()) {  // (a standby answers only once it has looked at its changelog)
                REQUIRE(r.from_standby);
                REQUIRE(r.standby_lag >= 0);
                if (*r == std::optional<std::int64_t>(expected.first)) break;
            }
            REQUIRE(std::chrono::steady_clock::now() < until);
            std::this_thread::sleep_for(50ms);
        }
        // With a bound the standby cannot meet, it names the owner instead.
        rt::read_options strict = stale;
        strict.max_standby_lag = -1;
        CHECK(non_owner.get(key, strict).status == rt::query_status::not_owned);
    }
    run_b.stop();
    run_a.stop();
}
