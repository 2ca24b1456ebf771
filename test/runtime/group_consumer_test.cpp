// detail::group_consumer, the instance's membership of its group, alone
// against a real broker.
//
// Closing it must end even when the group has just handed it an assignment
// that it has not taken yet (the processing thread was busy, or stopping):
// librdkafka 2.0.2 then waits in its close, for good, for an assign call
// that it turns into an unassign itself ("waiting for assign call ...
// before terminating"). Three instances of the campaign hung so on SIGTERM.

#include "runtime_test_support.hpp"

#include <strata/runtime/detail/group_consumer.hpp>
#include <strata/runtime/detail/group_watch.hpp>
#include <strata/runtime/detail/leader.hpp>

#include <atomic>
#include <future>
#include <thread>

using namespace runtime_test;
namespace detail = strata::runtime::detail;

TEST_CASE("group consumer: a close with an empty assignment handed over but not taken yet ends, and leaves the group",
          "[kafka][runtime]") {
    strata::runtime::application_options c;
    c.application_id = kafka_test::unique_name("group-consumer");
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {kafka_test::make_topic("group-consumer-in", 1, {{"cleanup.policy", "delete"}})};
    c.session_timeout = 6s;
    c.broker_timeout = 10s;
    const std::string coordination = kafka_test::make_topic("group-consumer-coordination", 1);
    const auto deadline = std::chrono::steady_clock::now() + 60s;

    // a holds the coordination partition, and is polled all along.
    strata::runtime::application_options ca = c;
    ca.instance_id = "instance-a";
    detail::leader la(detail::leader_options{"instance-a", 1, 0, 0, 60s});
    detail::group_consumer a(ca, coordination, la);
    std::atomic<bool> done{false};
    std::thread polling([&] {
        strata::kafka::unique_message m;
        while (!done.load()) (void)a.poll(50, m);
    });
    while (!la.elected()) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(100ms);
    }

    // b joins and is given nothing (the only partition stays with a), and
    // is not polled: that empty assignment waits for the callback.
    strata::runtime::application_options cb = c;
    cb.instance_id = "instance-b";
    detail::leader lb(detail::leader_options{"instance-b", 1, 0, 0, 60s});
    auto b = std::make_unique<detail::group_consumer>(cb, coordination, lb);
    while (b->member_id().empty()) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(100ms);
    }
    std::this_thread::sleep_for(2s);  // the rebalance ends: SyncGroup answers b

    auto closed = std::async(std::launch::async, [&] { b->close(); });
    if (closed.wait_for(30s) != std::future_status::ready) {
        FAIL_CHECK("the close did not end in 30 s");
        std::quick_exit(1);  // the close holds the consumer: nothing else can end
    }
    closed.get();
    b.reset();

    // Gone from the group at once, not after its session: a is alone.
    detail::group_watch watch(c.bootstrap_servers, c.application_id);
    std::optional<std::vector<detail::group_member>> members;
    while (!members || members->size() != 1) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        (void)watch.request(detail::group_watch::clock::now());
        std::this_thread::sleep_for(100ms);
        if (auto m = watch.poll()) members = std::move(m);
    }
    CHECK(members->front().instance == "instance-a");
    done = true;
    polling.join();
    a.close();
}
