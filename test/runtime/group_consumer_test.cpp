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

namespace {

/// A member of `group` that takes what the group gives it (cooperatively),
/// then is dropped without leaving: the group keeps it for `session`, as
/// it keeps a killed process.
class ghost_member {
public:
    ghost_member(const std::string& group, const std::string& topic, std::chrono::milliseconds session)
        : rk_(RD_KAFKA_CONSUMER, conf(group, session, this)) {
        rd_kafka_poll_set_consumer(rk_.get());
        const strata::kafka::unique_partition_list t = strata::kafka::one_partition(topic, RD_KAFKA_PARTITION_UA);
        strata::kafka::check(rd_kafka_subscribe(rk_.get(), t.get()), "subscribe");
    }
    void poll() { const strata::kafka::unique_message m(rd_kafka_consumer_poll(rk_.get(), 0)); }
    /// It has had an assignment from the group (even an empty one): a
    /// consumer destroyed before that aborts the process (librdkafka 2.0.2,
    /// see group_consumer's destructor).
    [[nodiscard]] bool synced() const { return synced_; }
    /// Goes without a word to the group (no LeaveGroup), as a killed process does.
    void vanish() {
        rd_kafka_destroy_flags(rk_.get(), RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        rk_.abandon();
    }

private:
    static strata::kafka::conf conf(const std::string& group, std::chrono::milliseconds session, ghost_member* self) {
        strata::kafka::conf k;
        k.set("bootstrap.servers", kafka_test::bootstrap());
        k.set("group.id", group);
        k.set("client.id", "ghost");
        k.set("session.timeout.ms", std::to_string(session.count()));
        k.set("partition.assignment.strategy", "cooperative-sticky");
        rd_kafka_conf_set_rebalance_cb(k.get(), [](rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                                   rd_kafka_topic_partition_list_t* parts, void* opaque) {
            if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                (void)rd_kafka_incremental_assign(rk, parts);
                static_cast<ghost_member*>(opaque)->synced_ = true;
            } else {
                (void)rd_kafka_incremental_unassign(rk, parts);
            }
        });
        rd_kafka_conf_set_opaque(k.get(), self);
        return k;
    }

    bool synced_ = false;
    strata::kafka::client rk_;
};

/// Closes a group consumer as the instance does before it is destroyed:
/// a member in the middle of a rebalance gives up after a session
/// (librdkafka 2.0.2's own close would wait for good, see above).
struct closed_at_end {
    detail::group_consumer& g;
    ~closed_at_end() {
        try {
            g.close();
        } catch (...) {
        }
    }
};

}  // namespace

TEST_CASE("group consumer: an input assigned while an offset commit waits behind a rebalance is read before the "
          "rebalance ends",
          "[kafka][runtime]") {
    // The rebalance waits for a member that vanished without leaving, until
    // its session ends; the member's commit, sent while it rejoins, waits
    // behind its JoinGroup as long. librdkafka starts no newly assigned
    // partition's fetcher of a handle with a commit unanswered: the inputs
    // have a consumer of their own, so a task taken over meanwhile reads at once.
    strata::runtime::application_options c;
    c.application_id = kafka_test::unique_name("group-consumer-rebalance");
    c.bootstrap_servers = kafka_test::bootstrap();
    const std::string input = kafka_test::make_topic("group-consumer-rebalance-in", 1, {{"cleanup.policy", "delete"}});
    c.input_topics = {input};
    c.session_timeout = 6s;
    c.broker_timeout = 30s;
    c.instance_id = "instance-a";
    const std::string coordination = kafka_test::make_topic("group-consumer-rebalance-coordination", 1);
    input_writer writer(input, 1);
    writer.write(0, 1);
    writer.flush();
    const auto deadline = std::chrono::steady_clock::now() + 90s;

    detail::leader la(detail::leader_options{"instance-a", 1, 0, 0, 60s});
    detail::group_consumer a(c, coordination, la);
    const closed_at_end close_a{a};
    strata::kafka::unique_message m;
    ghost_member ghost(c.application_id, coordination, 25s);
    while (a.member_id().empty() || !ghost.synced() || a.rejoining()) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        REQUIRE(a.poll(20, m) != detail::polled::record);
        ghost.poll();
    }
    std::this_thread::sleep_for(1s);  // the group settles with both
    ghost.vanish();

    // A third member joins: the group rebalances, and waits for the ghost.
    strata::runtime::application_options cb = c;
    cb.instance_id = "instance-b";
    detail::leader lb(detail::leader_options{"instance-b", 1, 0, 0, 60s});
    detail::group_consumer b(cb, coordination, lb);
    const closed_at_end close_b{b};
    while (!a.rejoining()) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        REQUIRE(a.poll(20, m) != detail::polled::record);
        (void)b.poll(1, m);
    }

    // a commits while it waits in its JoinGroup: the answer waits too. Its
    // statistics may say it rejoins a moment before its JoinGroup goes out:
    // a commit answered within half a second went out before it, and
    // another is sent.
    const strata::kafka::unique_partition_list offsets = strata::kafka::one_partition(input, 0);
    offsets->elems[0].offset = 0;
    strata::kafka::unique_queue replies;
    for (int sent = 0;; ++sent) {
        REQUIRE(sent < 20);  // else the premise never held: nothing would wait
        replies.reset(rd_kafka_queue_new(a.get()));
        strata::kafka::check(rd_kafka_commit_queue(a.get(), offsets.get(), replies.get(), nullptr, nullptr),
                             "commit");
        std::this_thread::sleep_for(500ms);
        REQUIRE(a.poll(1, m) != detail::polled::record);
        (void)b.poll(1, m);
        const strata::kafka::unique_event early(rd_kafka_queue_poll(replies.get(), 0));
        if (!early) break;
    }

    a.assign_inputs(0, {0});
    bool read = false;
    while (!read) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        read = a.poll(20, m) == detail::polled::record;
        (void)b.poll(1, m);
        if (!read) {
            // The rebalance ended first (the ghost's session ran out): the
            // input was held back until then.
            const strata::kafka::unique_event answer(rd_kafka_queue_poll(replies.get(), 0));
            REQUIRE_FALSE(answer);
        }
    }
    const strata::kafka::unique_event answer(rd_kafka_queue_poll(replies.get(), 0));
    CHECK_FALSE(answer);  // read while the commit still waited
    CHECK(a.rejoining());
}
