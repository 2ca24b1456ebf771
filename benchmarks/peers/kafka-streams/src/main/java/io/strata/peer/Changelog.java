package io.strata.peer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads a changelog topic to the end and counts what is in it. */
final class Changelog {
    long records;
    long tombstones;
    long keyBytes;
    long valueBytes;

    static Changelog count(Kafka kafka, String topic) throws Exception {
        List<TopicPartition> tps = kafka.topicPartitions(topic);
        Map<TopicPartition, Long> end = kafka.offsets(topic, OffsetSpec.latest());
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10_000);
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 64 << 20);
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 16 << 20);
        Changelog c = new Changelog();
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + 600_000_000_000L;
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (consumer.position(tp) < end.get(tp)) done = false;
                }
                if (done) break;
                if (System.nanoTime() > deadline) throw new IllegalStateException("timed out reading " + topic);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    c.records++;
                    if (r.key() != null) c.keyBytes += r.key().length;
                    if (r.value() == null) c.tombstones++;
                    else c.valueBytes += r.value().length;
                }
            }
        }
        return c;
    }
}
