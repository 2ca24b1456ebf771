#pragma once
// What the exactly-once tests share: the input consumer of a processor (a
// group, read_committed, offsets committed only by its transactions) and
// the group's committed input offset.

#include <strata/kafka/handles.hpp>
#include <strata/kafka/transaction.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace kafka_test {

/// A consumer in `group` that reads committed records only and commits
/// nothing by itself.
inline strata::kafka::client eos_input_consumer(const std::string& bootstrap, const std::string& group) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", bootstrap);
    c.set("group.id", group);
    c.set("enable.auto.commit", "false");
    c.set("auto.offset.reset", "earliest");
    c.set("isolation.level", "read_committed");
    strata::kafka::client k(RD_KAFKA_CONSUMER, std::move(c));
    k.close_consumer_on_destroy();
    return k;
}

/// The group's committed offset of partition 0 of `topic` (0 when nothing was committed).
inline std::int64_t committed_input_offset(rd_kafka_t* consumer, const std::string& topic) {
    const strata::kafka::unique_partition_list l = strata::kafka::one_partition(topic, 0);
    strata::kafka::check(rd_kafka_committed(consumer, l.get(), 30'000), "read the committed offset");
    strata::kafka::check(l->elems[0].err, "read the committed offset");
    return l->elems[0].offset < 0 ? 0 : l->elems[0].offset;
}

}  // namespace kafka_test
