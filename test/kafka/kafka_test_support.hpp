#pragma once
// What every test against the real broker needs: the bootstrap address (the
// test command starts the broker and exports it; a test fails, never skips,
// when it is missing), unique topic names, and topics made to order.

#include <catch2/catch.hpp>

#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include <unistd.h>

namespace kafka_test {

/// The value of an environment variable the test command exports; fails the
/// test with `how` (how to set it) when it is missing or empty.
inline std::string required_env(const char* name, const char* how) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') FAIL(name << " is not set: " << how);
    return v;
}

/// The broker the test command started, from STRATA_KAFKA_BOOTSTRAP.
inline std::string bootstrap() {
    return required_env("STRATA_KAFKA_BOOTSTRAP",
                        "start a broker with `scripts/kafka-broker.sh start` and "
                        "`eval \"$(scripts/kafka-broker.sh env)\"`, or run the project's test command, which does both");
}

/// A topic name no other test run used: test name, pid, time, counter.
inline std::string unique_name(const std::string& what) {
    static std::atomic<int> counter{0};
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return "strata-test-" + what + "-" + std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) + "-" +
           std::to_string(counter++);
}

/// The broker script the test command exports, for tests that stop and
/// restart the broker.
inline std::string broker_script() {
    return required_env("STRATA_KAFKA_BROKER_SCRIPT",
                        "export it as <repo>/scripts/kafka-broker.sh (the project's test command does) so this "
                        "test can stop and restart the broker");
}

/// Runs the broker script with `args`, its output to stderr; its exit status.
inline int run_broker_script(const std::string& script, const std::string& args) {
    const std::string cmd = "'" + script + "' " + args + " >&2";
    return std::system(cmd.c_str());
}

/// Starts the broker again (keeping its data) whenever the test leaves,
/// passing or failing, so that it never stays down for the tests after it.
struct broker_comes_back {
    std::string script;
    ~broker_comes_back() {
        if (run_broker_script(script, "status") != 0) (void)run_broker_script(script, "start --keep-data");
    }
};

/// Creates a fresh compacted topic and returns its name.
inline std::string make_topic(const std::string& what, std::int32_t partitions = 1,
                              strata::kafka::settings configs = {}) {
    const std::string topic = unique_name(what);
    strata::kafka::topic_options o;
    o.bootstrap_servers = bootstrap();
    o.partitions = partitions;
    o.topic_configs = std::move(configs);
    REQUIRE(strata::kafka::ensure_topic(topic, o) == strata::kafka::topic_status::created);
    return topic;
}

/// Sets a topic's cleanup.policy (AlterConfigs: its other settings go back to their defaults).
inline void set_cleanup_policy(const std::string& topic, const std::string& policy) {
    namespace k = strata::kafka;
    k::topic_options o;
    o.bootstrap_servers = bootstrap();
    const k::client admin = k::detail::admin_client(o);
    rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
    REQUIRE(rd_kafka_ConfigResource_set_config(res, "cleanup.policy", policy.c_str()) == RD_KAFKA_RESP_ERR_NO_ERROR);
    const k::unique_queue q(rd_kafka_queue_new(admin.get()));
    rd_kafka_AlterConfigs(admin.get(), &res, 1, nullptr, q.get());
    rd_kafka_ConfigResource_destroy(res);
    const k::unique_event ev =
        k::detail::await_admin(q.get(), RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, o.timeout, "alter configs of " + topic);
    std::size_t n = 0;
    const rd_kafka_ConfigResource_t** r =
        rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev.get()), &n);
    REQUIRE(n == 1);
    REQUIRE(rd_kafka_ConfigResource_error(r[0]) == RD_KAFKA_RESP_ERR_NO_ERROR);
}

/// Deletes the records of topic[partition] below `before` (the log start
/// offset moves there), as an operator's DeleteRecords does. The broker
/// deletes records only of a topic with the delete policy: a compacted one
/// is `compact,delete` meanwhile.
inline void delete_records_before(const std::string& topic, std::int32_t partition, std::int64_t before) {
    namespace k = strata::kafka;
    set_cleanup_policy(topic, "compact,delete");
    k::topic_options o;
    o.bootstrap_servers = bootstrap();
    const k::client admin = k::detail::admin_client(o);
    const k::unique_partition_list l(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), partition)->offset = before;
    rd_kafka_DeleteRecords_t* request = rd_kafka_DeleteRecords_new(l.get());
    const k::unique_queue q(rd_kafka_queue_new(admin.get()));
    rd_kafka_DeleteRecords(admin.get(), &request, 1, nullptr, q.get());
    rd_kafka_DeleteRecords_destroy(request);
    const k::unique_event ev =
        k::detail::await_admin(q.get(), RD_KAFKA_EVENT_DELETERECORDS_RESULT, o.timeout, "delete records of " + topic);
    const rd_kafka_topic_partition_list_t* done =
        rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev.get()));
    REQUIRE(done != nullptr);
    REQUIRE(done->cnt == 1);
    REQUIRE(done->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR);
    REQUIRE(done->elems[0].offset == before);
    set_cleanup_policy(topic, "compact");
}

inline strata::kafka::changelog_options log_options(const std::string& topic, std::int32_t partition = 0) {
    strata::kafka::changelog_options o;
    o.bootstrap_servers = bootstrap();
    o.topic = topic;
    o.partition = partition;
    return o;
}

}  // namespace kafka_test
