// detail::group_watch, the leader's request for the group's members, alone
// against a real broker: the members as the coordinator lists them, and a
// request given up after retry_after (a coordinator that died with it on its
// way may never answer it) replaced by a new one whose answer is the one
// read; and, on three brokers, the members listed again once the group's
// coordinator died, came back and is no longer the coordinator. The
// campaign's stalls after a broker death were leaders that never had a
// member list asked for after their election.

#include "cluster_support.hpp"

#include <strata/runtime/detail/group_watch.hpp>

using namespace runtime_test;
namespace detail = strata::runtime::detail;

namespace {

/// A member of `group` with client.id `name`, subscribed to `topic`, polled
/// until the group gave it its member id.
strata::kafka::client member_of(const std::string& group, const std::string& name, const std::string& topic) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", kafka_test::bootstrap());
    c.set("group.id", group);
    c.set("client.id", name);
    strata::kafka::client k(RD_KAFKA_CONSUMER, std::move(c));
    rd_kafka_poll_set_consumer(k.get());
    const strata::kafka::unique_partition_list topics = strata::kafka::one_partition(topic, RD_KAFKA_PARTITION_UA);
    strata::kafka::check(rd_kafka_subscribe(k.get(), topics.get()), "subscribe");
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
        const strata::kafka::unique_message m(rd_kafka_consumer_poll(k.get(), 100));
        char* id = rd_kafka_memberid(k.get());
        const bool joined = id != nullptr && *id != '\0';
        if (id != nullptr) rd_kafka_mem_free(k.get(), id);
        if (joined) break;
        REQUIRE(std::chrono::steady_clock::now() < deadline);
    }
    return k;
}

/// The next answer of `w` within `timeout`.
std::optional<std::vector<detail::group_member>> answer(detail::group_watch& w, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto m = w.poll()) return m;
        std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
}

}  // namespace

TEST_CASE("group watch: lists the group's members, and a request unanswered past retry_after is replaced by one "
          "whose answer is read",
          "[kafka][runtime]") {
    const std::string group = kafka_test::unique_name("group-watch");
    const std::string topic = kafka_test::make_topic("group-watch-in", 1, {{"cleanup.policy", "delete"}});
    const strata::kafka::client member = member_of(group, "instance-x", topic);
    detail::group_watch w(kafka_test::bootstrap(), group);
    const auto t0 = detail::group_watch::clock::now();

    SECTION("one request, one answer: the member by its client.id and member id") {
        REQUIRE(w.request(t0));
        CHECK_FALSE(w.request(t0 + 1s));  // on its way, and not old enough to give up
        const auto m = answer(w, 30s);
        REQUIRE(m);
        REQUIRE(m->size() == 1);
        CHECK(m->front().instance == "instance-x");
        char* id = rd_kafka_memberid(member.get());
        REQUIRE(id != nullptr);
        CHECK(m->front().member_id == id);
        rd_kafka_mem_free(member.get(), id);
        CHECK(w.abandoned() == 0);
    }

    SECTION("a request older than retry_after is given up: a new one goes out, and only its answer is read") {
        REQUIRE(w.request(t0));
        REQUIRE(w.request(t0 + detail::group_watch::retry_after));
        CHECK(w.abandoned() == 1);
        REQUIRE(answer(w, 30s));
        // The first request's answer came too, to the queue given up: poll
        // reads nothing more, and a new request may go out at once.
        std::this_thread::sleep_for(1s);
        CHECK_FALSE(answer(w, 500ms));
        CHECK(w.request(t0 + detail::group_watch::retry_after));
        CHECK(w.abandoned() == 1);
        REQUIRE(answer(w, 30s));
    }
}

TEST_CASE("group watch: after the group coordinator's broker dies and comes back, the members are listed again",
          "[kafka][runtime][cluster]") {
    // Idle through the outage (a follower's watch, or a leader's deposed
    // meanwhile), librdkafka still has the dead coordinator in mind when the
    // broker is back; asking meanwhile, it sometimes has too.
    const bool asking_meanwhile = GENERATE(false, true);
    INFO((asking_meanwhile ? "asking during the outage" : "idle during the outage"));
    const three_brokers& cluster = three_brokers::get();
    for (int n = 1; n <= 3; ++n) cluster.ensure_up(n);
    const std::string group = kafka_test::unique_name("group-watch-failover");
    const std::string topic = replicated_topic("group-watch-failover-in", 1);
    const strata::kafka::client member = member_of(group, "instance-y", topic);
    detail::group_watch w(kafka_test::bootstrap(), group);

    // Asks as the leader does, every 250 ms, and says when members came.
    const auto listed_within = [&](std::chrono::seconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            (void)w.request(detail::group_watch::clock::now());
            if (const auto m = w.poll(); m && m->size() == 1 && m->front().instance == "instance-y") return true;
            std::this_thread::sleep_for(250ms);
        }
        return false;
    };
    REQUIRE(listed_within(30s));

    // The coordinator is the leader of __consumer_offsets' only partition.
    const int coordinator = cluster.leader_of("__consumer_offsets");
    REQUIRE(coordinator > 0);
    // Killed, asked meanwhile, and started again once another broker
    // coordinates the group (the controller notices the death after the
    // broker session, 4 s in the test cluster): the restarted broker is up
    // and no longer the coordinator.
    REQUIRE(cluster.run("kill " + std::to_string(coordinator)) == 0);
    const auto killed = std::chrono::steady_clock::now();
    for (;;) {
        if (asking_meanwhile) {
            (void)w.request(detail::group_watch::clock::now());
            (void)w.poll();
        }
        const int now = cluster.leader_of("__consumer_offsets");
        if (now > 0 && now != coordinator) break;
        REQUIRE(std::chrono::steady_clock::now() - killed < 60s);
        std::this_thread::sleep_for(250ms);
    }
    REQUIRE(cluster.run("start-node " + std::to_string(coordinator)) == 0);
    const bool listed = listed_within(60s);
    INFO("coordinator before: broker " << coordinator << "; now: broker " << cluster.leader_of("__consumer_offsets")
                                       << "; " << w.refused() << " refusals, the last: " << w.last_refusal() << "; "
                                       << w.abandoned() << " requests given up");
    CHECK(listed);
}
