#pragma once
/// @file
/// @brief `repartition_purger`: deletes the records of repartition topics
/// that the sub-topology reading them has committed, as Kafka Streams does
/// every repartition.purge.interval.ms. A repartition topic keeps records
/// forever (retention.ms -1: nothing may go before it is read), so without
/// a purge it grows by every record ever re-keyed.
///
/// Only committed offsets are cut at: under exactly-once, an offset the
/// group holds is one whose processing committed with it, so no record a
/// restarted task would read again is deleted; under at-least-once, the
/// same holds of the group's commit. Each instance purges the partitions
/// of the tasks it runs; a partition is cut again only when its offset
/// moved on.

#include <strata/kafka/admin.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/runtime/application_options.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// @brief Cuts one sub-topology's repartition inputs at its group's committed offsets.
class repartition_purger {
public:
    /// @param c the options of the reading sub-topology (its group is read)
    /// @param topics the repartition topics it reads
    repartition_purger(const application_options& c, std::vector<std::string> topics)
        : topics_(std::move(topics)), consumer_(RD_KAFKA_CONSUMER, consumer_conf(c)) {
        admin_.bootstrap_servers = c.bootstrap_servers;
        admin_.client_settings = c.client_settings;
        admin_.timeout = c.broker_timeout;
    }

    [[nodiscard]] const std::vector<std::string>& topics() const noexcept { return topics_; }

    /// @brief One pass over `partitions` (the tasks this instance runs):
    /// reads the group's committed offsets on every repartition topic and
    /// deletes what lies before each offset not cut at already.
    /// @returns the cuts made
    /// @throws kafka::error the broker could not be asked or refused a cut
    std::vector<kafka::record_cut> purge(const std::vector<std::int32_t>& partitions) {
        std::vector<kafka::record_cut> cuts;
        if (partitions.empty() || topics_.empty()) return cuts;
        kafka::unique_partition_list l(
            rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size() * topics_.size())));
        for (const std::string& topic : topics_)
            for (const std::int32_t p : partitions) rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), p);
        kafka::check(rd_kafka_committed(consumer_.get(), l.get(), kafka::timeout_ms(admin_.timeout)),
                     "read the committed offsets of " + topics_.front());
        for (int i = 0; i < l->cnt; ++i) {
            const rd_kafka_topic_partition_t& e = l->elems[i];
            if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset <= 0) continue;  // nothing committed yet
            std::int64_t& done = purged_[{e.topic, e.partition}];
            if (e.offset <= done) continue;
            cuts.push_back({e.topic, e.partition, e.offset});
        }
        kafka::delete_records_before(cuts, admin_);
        for (const kafka::record_cut& c : cuts) purged_[{c.topic, c.partition}] = c.offset;
        return cuts;
    }

private:
    static kafka::conf consumer_conf(const application_options& c) {
        kafka::conf k(c.client_settings);
        k.set("bootstrap.servers", c.bootstrap_servers);
        k.set("group.id", c.group_name());
        k.set("enable.auto.commit", "false");
        // The offsets of open transactions are not stable yet: ask for the committed ones.
        k.set("isolation.level", "read_committed");
        return k;
    }

    std::vector<std::string> topics_;
    kafka::client consumer_;  // never subscribes: it only reads the group's offsets
    kafka::topic_options admin_;
    std::map<std::pair<std::string, std::int32_t>, std::int64_t> purged_;  // the last cut of each partition
};

}  // namespace strata::runtime::detail
