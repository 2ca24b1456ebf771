#pragma once
/// @file
/// @brief The topics an instance reads and creates: the input topics'
/// shared partition count, and the changelog, coordination and dead-letter
/// topics, created when missing with the configured replication factor. A
/// topic that ends up with one replica is warned of once: a broker's lost
/// disk then loses the state it held.

#include <strata/core/error.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/coordination.hpp>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace strata::runtime::detail {

class instance_topics {
public:
    explicit instance_topics(const application_options& c) : c_(&c) {}

    /// @brief The partition count the input topics share (the tasks).
    /// @throws usage_error they differ
    std::int32_t check_inputs() {
        // The instance's first contact with the cluster: a wrong password or
        // an untrusted certificate is said here, at start.
        kafka::check_access(c_->bootstrap_servers, c_->client_settings, c_->broker_timeout);
        const kafka::client a = admin();
        std::int32_t count = -1;
        for (const std::string& topic : c_->input_topics) {
            const std::int32_t n = kafka::probe_topic(a.get(), c_->bootstrap_servers, topic, c_->broker_timeout);
            if (count >= 0 && n != count)
                throw usage_error("strata::runtime: input topics are not co-partitioned: " + c_->input_topics[0] +
                                  " has " + std::to_string(count) + " partitions and " + topic + " has " +
                                  std::to_string(n) + "; every input topic needs the same partition count");
            count = n;
        }
        partitions_ = count;
        return count;
    }

    /// @brief The changelog of `store`, created once per run (any thread),
    /// with the store kind's `configs` over the application's (a window
    /// store's retention, say; see task_context.hpp).
    std::string ensure_changelog(std::string_view store, const kafka::settings& configs = {}) {
        const std::lock_guard lock(mutex_);
        std::string topic = kafka::changelog_topic_name(c_->application_id, store);
        if (!ensured_.contains(topic)) {
            kafka::topic_options o = options(partitions_);
            for (const auto& [name, value] : configs) o.topic_configs.insert_or_assign(name, value);
            ensure(topic, o);
            ensured_.insert(topic);
        }
        return topic;
    }

    /// Makes sure the coordination topic exists and returns its name.
    std::string ensure_coordination() {
        std::string topic = coordination_topic_name(c_->group_name());
        kafka::topic_options o = options(1);
        // The broker's append time on each record: the readers' common clock
        // for heartbeats (liveness.hpp).
        o.topic_configs = {{"cleanup.policy", "compact"},
                           {"min.cleanable.dirty.ratio", "0.1"},
                           {"segment.ms", "600000"},
                           {"message.timestamp.type", "LogAppendTime"}};
        const std::lock_guard lock(mutex_);
        ensure(topic, o);
        return topic;
    }

    void ensure_dead_letters() {
        kafka::topic_options o = options(partitions_);
        o.topic_configs = {{"cleanup.policy", "delete"}};
        o.require_compaction = false;
        const std::lock_guard lock(mutex_);
        try {
            ensure(c_->effective_dead_letter_topic(), o);
        } catch (const changelog_error&) {
            // An existing topic with another partition count is fine for dead letters.
            const kafka::client a = admin();
            (void)kafka::probe_topic(a.get(), c_->bootstrap_servers, c_->effective_dead_letter_topic(), c_->broker_timeout);
        }
    }

private:
    kafka::topic_options options(std::int32_t partitions) const {
        kafka::topic_options o;
        o.bootstrap_servers = c_->bootstrap_servers;
        o.client_settings = c_->client_settings;
        o.partitions = partitions;
        o.replication_factor = c_->changelog_replication_factor;
        o.topic_configs = c_->changelog_topic_configs;
        o.timeout = c_->broker_timeout;
        return o;
    }

    kafka::client admin() const {
        kafka::conf c(c_->client_settings);
        c.set("bootstrap.servers", c_->bootstrap_servers);
        return kafka::client(RD_KAFKA_PRODUCER, std::move(c));
    }

    void ensure(const std::string& topic, const kafka::topic_options& o) {
        if (kafka::ensure_topic(topic, o) == kafka::topic_status::created && replicas(topic, o) == 1)
            c_->warn("topic " + topic + " was created with one replica (replication factor " +
                 std::to_string(o.replication_factor) + (o.replication_factor < 0 ? ": the broker's default" : "") +
                 "): it is lost with its broker's disk; set changelog_replication_factor, or the broker's "
                 "default.replication.factor, to 3 in production");
    }

    /// The topic's replicas, or 0 when they could not be read: the count
    /// only decides a warning, and is no reason to stop.
    static int replicas(const std::string& topic, const kafka::topic_options& o) {
        try {
            return kafka::replication_of(topic, o);
        } catch (const kafka::error&) {
            return 0;
        }
    }

    const application_options* c_;
    std::int32_t partitions_ = 0;
    std::mutex mutex_;
    std::set<std::string> ensured_;  // changelogs made sure of in this run
};

}  // namespace strata::runtime::detail
