#pragma once
/// @file
/// @brief The name and the topic configs of a repartition topic, as Kafka
/// Streams makes them: `<application_id>-<name>-repartition`, deleted by
/// time never (retention.ms -1: the topology purges what its readers
/// committed, see topology.hpp), 50 MB segments so that a purge frees
/// space soon.

#include <strata/kafka/handles.hpp>

#include <string>
#include <string_view>

namespace strata::runtime {

/// @brief `<application_id>-<name>-repartition` (Kafka Streams' naming).
[[nodiscard]] inline std::string repartition_topic_name(std::string_view application_id, std::string_view name) {
    std::string t;
    t.reserve(application_id.size() + name.size() + 13);
    t.append(application_id).append("-").append(name).append("-repartition");
    return t;
}

/// @brief The configs Kafka Streams gives a repartition topic
/// (RepartitionTopicConfig): cleanup.policy delete, retention.ms -1,
/// segment.bytes 52428800.
[[nodiscard]] inline kafka::settings repartition_topic_configs() {
    return {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}, {"segment.bytes", "52428800"}};
}

}  // namespace strata::runtime
