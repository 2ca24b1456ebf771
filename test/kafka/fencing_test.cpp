// Two producers with one transactional id: the second fences the first. The
// first then stops with an error that says it was fenced, and nothing it
// wrote after its last commit becomes visible: no output and no changelog
// record appears twice or from the fenced side.

#include <strata/kafka/changelog.hpp>
#include <strata/kafka/transaction.hpp>

#include <catch2/catch.hpp>

#include "kafka/kafka_test_support.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace kafka = strata::kafka;
using strata::kafka::exactly_once;
using strata::kafka::producer_options;

namespace {

std::vector<std::string> committed_keys(const std::string& topic) {
    kafka::changelog log(kafka_test::log_options(topic));  // read_committed
    std::vector<std::string> keys;
    for (const strata::record_view r : log.replay(0)) keys.emplace_back(strata::as_chars(r.key));
    return keys;
}

/// A group's metadata for a commit that carries no input offsets.
struct group_metadata {
    rd_kafka_consumer_group_metadata_t* p = rd_kafka_consumer_group_metadata_new("fencing-test");
    ~group_metadata() { rd_kafka_consumer_group_metadata_destroy(p); }
};

void commit(exactly_once& eos) {
    const strata::kafka::unique_partition_list none(rd_kafka_topic_partition_list_new(0));
    const group_metadata group;
    eos.commit(none.get(), group.p);
}

void write(exactly_once& eos, kafka::changelog& log, const std::string& output, const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
        const std::string k = prefix + std::to_string(i);
        eos.send(output, 0, strata::as_bytes(k), strata::as_bytes(k));
        log.append(strata::record_view{strata::as_bytes(k), strata::as_bytes(k)});
    }
    log.flush();  // acknowledged, but visible only once the transaction commits
}

}  // namespace

TEST_CASE("a second producer with the same transactional id fences the first, which stops with a clear error",
          "[kafka][exactly-once][fencing]") {
    const std::string output = kafka_test::make_topic("fencing-out");
    const std::string changelog = kafka_test::make_topic("fencing-log");
    const std::string id = kafka_test::unique_name("fencing-txn");

    exactly_once first(producer_options{kafka_test::bootstrap(), id, {}});
    kafka::changelog first_log(kafka_test::log_options(changelog), first.shared_producer());
    first.begin();
    write(first, first_log, output, "first-committed-", 5);
    commit(first);
    first.begin();
    write(first, first_log, output, "first-open-", 5);  // left open when the second producer starts

    // The second producer: its start fences the first and aborts its open transaction.
    exactly_once second(producer_options{kafka_test::bootstrap(), id, {}});
    kafka::changelog second_log(kafka_test::log_options(changelog), second.shared_producer());

    // The first producer cannot commit, nor go on: the error says why.
    try {
        first.send(output, 0, strata::as_bytes(std::string("first-late")), strata::as_bytes(std::string("x")));
        commit(first);
        FAIL("a fenced producer committed");
    } catch (const kafka::error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK((what.find("fenced") != std::string::npos || what.find("FENCED") != std::string::npos ||
               what.find("epoch") != std::string::npos));
        CHECK_FALSE(first.in_transaction());
    }

    second.begin();
    write(second, second_log, output, "second-", 5);
    commit(second);

    const std::vector<std::string> want{"first-committed-0", "first-committed-1", "first-committed-2",
                                        "first-committed-3", "first-committed-4", "second-0",
                                        "second-1",          "second-2",          "second-3",
                                        "second-4"};
    CHECK(committed_keys(output) == want);
    CHECK(committed_keys(changelog) == want);
}

TEST_CASE("a broker restart in the middle of a transaction: the commit makes all of it visible, or none",
          "[kafka][exactly-once][broker-restart]") {
    const std::string script = kafka_test::broker_script();
    const std::string output = kafka_test::make_topic("restart-txn-out");
    const std::string changelog = kafka_test::make_topic("restart-txn-log");
    const std::string id = kafka_test::unique_name("restart-txn");
    bool committed = false;
    {
        kafka_test::broker_comes_back guard{script};
        exactly_once eos(producer_options{kafka_test::bootstrap(), id, {}}, std::chrono::seconds(90));
        kafka::changelog log(kafka_test::log_options(changelog), eos.shared_producer());
        eos.begin();
        write(eos, log, output, "half-", 500);
        REQUIRE(kafka_test::run_broker_script(script, "kill") == 0);
        REQUIRE(kafka_test::run_broker_script(script, "start --keep-data") == 0);
        try {
            write(eos, log, output, "rest-", 500);
            commit(eos);
            committed = true;
        } catch (const kafka::error& e) {
            INFO("the commit failed: " << e.what());  // allowed: the transaction is then aborted
        }
    }
    // Whatever the commit said, a reader sees all 1,000 records of the
    // transaction or none; a commit that returned means all.
    const auto out = committed_keys(output);
    const auto logged = committed_keys(changelog);
    INFO("committed: " << committed << ", visible outputs: " << out.size());
    CHECK((out.size() == 0 || out.size() == 1000));
    CHECK(logged.size() == out.size());
    if (committed) CHECK(out.size() == 1000);
}

TEST_CASE("an aborted transaction's outputs and changelog records are never read, and the next transaction commits",
          "[kafka][exactly-once]") {
    const std::string output = kafka_test::make_topic("abort-out");
    const std::string changelog = kafka_test::make_topic("abort-log");
    exactly_once eos(producer_options{kafka_test::bootstrap(), kafka_test::unique_name("abort-txn"), {}});
    {
        kafka::changelog log(kafka_test::log_options(changelog), eos.shared_producer());
        eos.begin();
        write(eos, log, output, "kept-", 3);
        commit(eos);
        eos.begin();
        write(eos, log, output, "aborted-", 3);  // acknowledged by the broker, then aborted
        eos.abort();
        CHECK_FALSE(eos.in_transaction());
        CHECK_FALSE(eos.needs_new_producer());
    }
    // The next transaction goes on with the same producer (a store rebuilt from the changelog would log again).
    kafka::changelog log(kafka_test::log_options(changelog), eos.shared_producer());
    eos.begin();
    write(eos, log, output, "after-", 2);
    commit(eos);

    const std::vector<std::string> want{"kept-0", "kept-1", "kept-2", "after-0", "after-1"};
    CHECK(committed_keys(output) == want);
    CHECK(committed_keys(changelog) == want);
}
