// The network between strata and the broker misbehaves: every byte passes a
// local TCP proxy (test/support/tcp_proxy.py) that the test switches between
// passing, delaying, stalling, dropping every connection and refusing new
// ones. The test starts its own broker (ports 19892/19893) that advertises the
// proxy's address (19894), so that after bootstrapping the clients still talk
// through the proxy. flush() either returns (every record below the returned
// offset is then in the log) or throws kafka::error; no acknowledged record is
// lost and, with the idempotent producer, none is written twice. A replay
// that stalls mid-way waits and reads every record once. A stall longer than
// message.timeout.ms makes flush() throw, and every later call with it; a
// fresh changelog then reads every acknowledged record once. The broker and
// the proxy are stopped on every path.

#include "kafka_test_support.hpp"
#include "../support/fault_proxy.hpp"
#include "../support/temp_dir.hpp"

#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/transaction.hpp>

#include <chrono>
#include <exception>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace kafka = strata::kafka;

namespace {

constexpr int broker_port = 19892;
constexpr int controller_port = 19893;
constexpr int proxy_port = 19894;
const std::string proxy_bootstrap = "127.0.0.1:" + std::to_string(proxy_port);

std::string key_of(int i) { return "r" + std::to_string(i); }

/// The dedicated broker: the broker script with this test's ports and run
/// dir, advertising the proxy. Stopped when it goes out of scope.
class dedicated_broker {
public:
    dedicated_broker(std::string script, const std::filesystem::path& run_dir)
        : prefix_("STRATA_KAFKA_PORT=" + std::to_string(broker_port) +
                  " STRATA_KAFKA_CONTROLLER_PORT=" + std::to_string(controller_port) + " STRATA_KAFKA_RUN_DIR='" +
                  run_dir.string() + "' STRATA_KAFKA_STOP_TIMEOUT=10" +
                  " STRATA_KAFKA_EXTRA_PROPERTIES='advertised.listeners=PLAINTEXT://" + proxy_bootstrap + "' '" +
                  script + "' ") {}
    dedicated_broker(const dedicated_broker&) = delete;
    dedicated_broker& operator=(const dedicated_broker&) = delete;
    ~dedicated_broker() { (void)run("stop"); }

    int run(const std::string& command) const {
        const std::string cmd = prefix_ + command + " >&2";
        return std::system(cmd.c_str());
    }

private:
    std::string prefix_;
};

strata::kafka::changelog_options options(const std::string& topic) {
    strata::kafka::changelog_options o;
    o.bootstrap_servers = proxy_bootstrap;
    o.topic = topic;
    o.request_timeout = std::chrono::milliseconds(30'000);
    // Reconnect quickly after a drop or a refusal; a stall (4 s) is far
    // shorter than the message timeout.
    o.producer_settings = {{"message.timeout.ms", "20000"},
                           {"linger.ms", "5"},
                           {"reconnect.backoff.ms", "50"},
                           {"reconnect.backoff.max.ms", "1000"}};
    o.consumer_settings = {{"reconnect.backoff.ms", "50"}, {"reconnect.backoff.max.ms", "1000"}};
    return o;
}

std::string make_topic(const std::string& what) {
    const std::string topic = kafka_test::unique_name(what);
    strata::kafka::topic_options o;
    o.bootstrap_servers = proxy_bootstrap;
    o.partitions = 1;
    REQUIRE(strata::kafka::ensure_topic(topic, o) == strata::kafka::topic_status::created);
    return topic;
}

void append(kafka::changelog& log, int i) {
    const std::string k = key_of(i);
    log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
}

/// Runs `f` on a thread after `after`; joined when it goes out of scope. An
/// exception from `f` is kept and rethrown by done().
struct later {
    std::thread t;
    std::exception_ptr error;
    template <class F>
    later(std::chrono::milliseconds after, F f)
        : t([this, after, f = std::move(f)] {
              std::this_thread::sleep_for(after);
              try {
                  f();
              } catch (...) {
                  error = std::current_exception();
              }
          }) {}
    later(const later&) = delete;
    later& operator=(const later&) = delete;
    ~later() {
        if (t.joinable()) t.join();
    }
    void done() {
        if (t.joinable()) t.join();
        if (error) std::rethrow_exception(error);
    }
};

}  // namespace

TEST_CASE("network faults through a proxy: flush returns or throws, nothing acknowledged is lost or doubled",
          "[kafka][network-faults]") {
    using namespace std::chrono_literals;
    const std::string script = kafka_test::broker_script();
    test_support::temp_dir dir;
    // The proxy first, in pass mode: the broker's readiness probe asks the
    // broker for metadata, which names the proxy's address.
    test_support::fault_proxy::options proxied;
    proxied.port = proxy_port;
    proxied.target = broker_port;
    proxied.control = dir / "proxy.sock";
    proxied.log = dir / "proxy.log";
    const test_support::fault_proxy proxy(proxied);
    dedicated_broker broker(script, dir / "kafka-run");
    REQUIRE(broker.run("start") == 0);

    // One broker start for both parts: it is the slow step.
    {  // writes under delay, stall, drop and refusal
        const std::string topic = make_topic("net-faults");
        const auto o = options(topic);
        int appended = 0;
        std::uint64_t acknowledged_end = 0;
        bool flush_failed = false;
        std::string failure;
        {
            kafka::changelog log(o);
            auto write = [&](int n) {
                for (int j = 0; j < n; ++j) append(log, appended++);
            };
            auto flush = [&] {
                const std::uint64_t end = log.flush();
                REQUIRE(end >= acknowledged_end);
                acknowledged_end = end;
            };
            try {
                write(300);  // pass
                flush();
                REQUIRE(acknowledged_end == 300);

                proxy.set("delay 50");
                for (int k = 0; k < 3; ++k) {
                    write(300);
                    flush();
                }

                proxy.set("stall");  // flush waits until the proxy passes again
                write(300);
                {
                    const auto t0 = std::chrono::steady_clock::now();
                    later pass(4000ms, [&] { proxy.set("pass"); });
                    flush();
                    pass.done();
                    CHECK(std::chrono::steady_clock::now() - t0 >= 3000ms);  // it did wait for the stall
                }

                write(300);  // every connection dropped while the records are in flight
                {
                    later drop(20ms, [&] { proxy.set("drop"); });
                    flush();
                    drop.done();
                }
                for (int k = 0; k < 2; ++k) {
                    proxy.set("drop");  // dropped between flushes
                    write(300);
                    flush();
                }

                proxy.set("drop");  // dropped, then refused for a while
                proxy.set("refuse");
                write(300);
                {
                    later pass(1500ms, [&] { proxy.set("pass"); });
                    flush();
                    pass.done();
                }

                write(300);  // stalled, then dropped
                proxy.set("stall");
                {
                    later drop(2000ms, [&] { proxy.set("drop"); });
                    flush();
                    drop.done();
                }

                proxy.set("pass");
                write(300);
                flush();
            } catch (const strata::kafka::error& e) {
                // Allowed: the failure is reported, never swallowed. Writing
                // stops here; what was acknowledged before must be there.
                flush_failed = true;
                failure = e.what();
                WARN("flush threw kafka::error: " << e.what());
            }
        }
        proxy.set("pass");
        INFO("appended " << appended << ", acknowledged " << acknowledged_end
                         << (flush_failed ? ", a flush threw: " + failure : std::string()));

        // Read everything back, through the proxy.
        kafka::changelog reader(o);
        std::map<int, int> seen;
        int last = -1;
        strata::offset_t next = 0;
        for (const strata::record_view r : reader.replay(0)) {
            REQUIRE(r.offset >= next);
            next = r.offset + 1;
            const std::string k(strata::as_chars(r.key));
            REQUIRE(strata::as_chars(*r.value) == k);
            const int i = std::stoi(k.substr(1));
            REQUIRE(i > last);  // in order, none twice
            last = i;
            ++seen[i];
        }
        for (int i = 0; i < static_cast<int>(acknowledged_end); ++i) {
            INFO("record " << key_of(i));
            REQUIRE(seen[i] == 1);
        }
        for (const auto& [i, count] : seen) REQUIRE(count == 1);
        if (!flush_failed) {
            REQUIRE(acknowledged_end == static_cast<std::uint64_t>(appended));
            REQUIRE(seen.size() == static_cast<std::size_t>(appended));
        }
    }

    {  // a replay that stalls mid-way waits and reads every record once
        const std::string topic = make_topic("net-faults-restore");
        auto o = options(topic);
        constexpr int n = 20'000;
        {
            kafka::changelog log(o);
            for (int i = 0; i < n; ++i) append(log, i);
            REQUIRE(log.flush() == static_cast<std::uint64_t>(n));
        }
        // Fetch little ahead, so that most of the topic is read after the stall.
        o.consumer_settings["queued.max.messages.kbytes"] = "16";
        o.consumer_settings["fetch.message.max.bytes"] = "16384";
        kafka::changelog reader(o);
        int seen = 0;
        bool stalled = false;
        std::optional<later> resume;
        const auto replay_began = std::chrono::steady_clock::now();
        for (const strata::record_view r : reader.replay(0)) {
            REQUIRE(r.offset == static_cast<strata::offset_t>(seen));
            REQUIRE(std::string(strata::as_chars(r.key)) == key_of(seen));
            ++seen;
            if (seen == 500 && !stalled) {
                stalled = true;
                proxy.set("stall");
                resume.emplace(3000ms, [&] { proxy.set("pass"); });
            }
        }
        if (resume) resume->done();
        const auto took = std::chrono::steady_clock::now() - replay_began;
        CHECK(stalled);
        CHECK(seen == n);
        CHECK(took >= 3000ms);  // the replay did wait for the stalled proxy
    }

    {  // a stall longer than message.timeout.ms: flush throws and the changelog stays failed
        const std::string topic = make_topic("net-faults-timeout");
        auto o = options(topic);
        o.producer_settings["message.timeout.ms"] = "2000";
        constexpr int acknowledged = 500, unacknowledged = 300;
        {
            kafka::changelog log(o);
            for (int i = 0; i < acknowledged; ++i) append(log, i);
            REQUIRE(log.flush() == static_cast<std::uint64_t>(acknowledged));

            proxy.set("stall");
            for (int i = acknowledged; i < acknowledged + unacknowledged; ++i) append(log, i);
            const auto t0 = std::chrono::steady_clock::now();
            std::string failure;
            try {
                (void)log.flush();
            } catch (const strata::kafka::error& e) {
                failure = e.what();
            }
            const auto waited = std::chrono::steady_clock::now() - t0;
            INFO("flush failed after " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                                       << " ms: " << failure);
            REQUIRE(failure.find("not acknowledged") != std::string::npos);
            CHECK(waited >= 1500ms);   // it waited for the message timeout
            CHECK(waited < 25'000ms);  // and not for the request timeout
            proxy.set("pass");
            // Every later call reports the loss instead of writing past it.
            CHECK_THROWS_AS(append(log, acknowledged + unacknowledged), strata::kafka::error);
            CHECK_THROWS_AS(log.flush(), strata::kafka::error);
        }
        // A fresh changelog reads every acknowledged record once, in order;
        // the stalled ones may have reached the broker after all, at most once.
        kafka::changelog reader(o);
        std::map<int, int> seen;
        int last = -1;
        for (const strata::record_view r : reader.replay(0)) {
            const int i = std::stoi(std::string(strata::as_chars(r.key)).substr(1));
            REQUIRE(i > last);
            REQUIRE(i < acknowledged + unacknowledged);
            last = i;
            ++seen[i];
        }
        for (int i = 0; i < acknowledged; ++i) {
            INFO("record " << key_of(i));
            REQUIRE(seen[i] == 1);
        }
        WARN(seen.size() - static_cast<std::size_t>(acknowledged) << " of " << unacknowledged
                                        << " unacknowledged records reached the broker after the stall");
    }

    {  // a transaction whose commit times out (the coordinator's connection stalled) ends, and the next begins
        const std::string topic = make_topic("net-faults-transaction");
        strata::kafka::producer_options po;
        po.bootstrap_servers = proxy_bootstrap;
        po.transactional_id = kafka_test::unique_name("net-faults-txn");
        po.extra = {{"reconnect.backoff.ms", "50"}, {"reconnect.backoff.max.ms", "1000"}};
        strata::kafka::exactly_once eos(po, 2000ms);
        const strata::kafka::unique_group_metadata group(rd_kafka_consumer_group_metadata_new("net-faults-txn"));
        const strata::kafka::unique_partition_list none(rd_kafka_topic_partition_list_new(0));
        const std::string k = "k";
        eos.begin();
        eos.send(topic, 0, strata::as_bytes(k), strata::as_bytes(k));
        eos.commit(none.get(), group.get());

        eos.begin();
        eos.send(topic, 0, strata::as_bytes(k), strata::as_bytes(k));
        proxy.set("stall");
        later pass(3000ms, [&] { proxy.set("pass"); });
        std::string failure;
        try {
            eos.commit(none.get(), group.get());  // 2 s for the commit: it times out, or ends once the proxy passes
        } catch (const strata::kafka::error& e) {
            failure = e.what();
        }
        pass.done();
        INFO("the stalled commit: " << (failure.empty() ? "committed" : failure));
        CHECK_FALSE(eos.in_transaction());
        // Either the transaction ended (committed or aborted) and the next
        // begins, or the object says the producer is to be made anew, and a
        // new one with the transactional id goes on. Before, the timed-out
        // commit was taken for an end and the next begin failed (_STATE).
        std::optional<strata::kafka::exactly_once> fresh;
        if (eos.needs_new_producer()) fresh.emplace(po, 10'000ms);
        strata::kafka::exactly_once& next = fresh ? *fresh : eos;
        next.begin();
        next.send(topic, 0, strata::as_bytes(k), strata::as_bytes(k));
        next.commit(none.get(), group.get());
        CHECK(next.commits() >= 1);
    }
}
