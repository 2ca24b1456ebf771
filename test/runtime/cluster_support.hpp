#pragma once
// Three brokers on loopback (scripts/kafka-cluster.sh, beside the broker
// script the test command exports), for the tests where one broker dies and
// the cluster goes on.

#include "runtime_test_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace runtime_test {

/// Started once per test process (the first call), stopped when the process
/// ends, so that the tests after it have the machine's cores. While it
/// runs, kafka_test::bootstrap() (and so the instances) name the cluster.
class three_brokers {
public:
    static constexpr const char* bootstrap = "127.0.0.1:9192,127.0.0.1:9193,127.0.0.1:9194";

    static three_brokers& get() {
        static three_brokers cluster;
        return cluster;
    }
    three_brokers(const three_brokers&) = delete;
    three_brokers& operator=(const three_brokers&) = delete;
    ~three_brokers() {
        if (single_.empty()) ::unsetenv("STRATA_KAFKA_BOOTSTRAP");
        else ::setenv("STRATA_KAFKA_BOOTSTRAP", single_.c_str(), 1);
        (void)run("stop");
    }

    /// Runs the cluster script with `args`; its exit status.
    int run(const std::string& args) const { return kafka_test::run_broker_script(script_, args); }

    /// The node that leads partition 0 of `topic` (-1 while none does).
    int leader_of(const std::string& topic) const {
        const std::string cmd = "'" + script_ + "' leader '" + topic + "'";
        FILE* p = ::popen(cmd.c_str(), "r");
        REQUIRE(p != nullptr);
        char buf[32] = {};
        const bool read = std::fgets(buf, sizeof buf, p) != nullptr;
        (void)::pclose(p);
        return read ? std::atoi(buf) : -1;
    }

    /// Starts node `n` again (on its data) if it is down.
    void ensure_up(int n) const {
        if (run("node " + std::to_string(n) + " status") != 0) REQUIRE(run("start-node " + std::to_string(n)) == 0);
    }

private:
    three_brokers()
        : script_((std::filesystem::path(kafka_test::broker_script()).parent_path() / "kafka-cluster.sh").string()),
          single_(std::getenv("STRATA_KAFKA_BOOTSTRAP") != nullptr ? std::getenv("STRATA_KAFKA_BOOTSTRAP") : "") {
        REQUIRE(run("start") == 0);
        ::setenv("STRATA_KAFKA_BOOTSTRAP", bootstrap, 1);
    }

    std::string script_, single_;
};

/// A topic with a replica on each broker: it outlives any one of them.
inline std::string replicated_topic(const std::string& what, std::int32_t partitions) {
    const std::string topic = kafka_test::unique_name(what);
    strata::kafka::topic_options o;
    o.bootstrap_servers = kafka_test::bootstrap();
    o.partitions = partitions;
    o.replication_factor = 3;
    o.topic_configs = {{"cleanup.policy", "delete"}};
    REQUIRE(strata::kafka::ensure_topic(topic, o) == strata::kafka::topic_status::created);
    return topic;
}

}  // namespace runtime_test
