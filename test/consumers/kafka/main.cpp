// Uses strata::kafka from an installed strata: picks partitions the way
// Kafka's Java producer does and links librdkafka through strata::kafka.
// Exits non-zero on a wrong result.
#include <strata/core/bytes.hpp>
#include <strata/kafka/murmur2.hpp>

#include <librdkafka/rdkafka.h>

#include <iostream>

int main() {
    // Values from Kafka's own Java client (see test/kafka/murmur2_test.cpp).
    const bool ok = strata::kafka::murmur2(strata::as_bytes("key-1")) == 193331640 &&
                    strata::kafka::default_partition(strata::as_bytes("hello world"), 12) == 7 &&
                    strata::kafka::default_partition(strata::as_bytes(""), 6) == 3;
    if (!ok) {
        std::cerr << "FAILED: strata::kafka::default_partition disagrees with Kafka\n";
        return 1;
    }
    std::cout << "strata::kafka consumer: partitions ok, librdkafka " << rd_kafka_version_str() << '\n';
    return 0;
}
