package io.strata.peer;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * The Kafka Streams side of the changelog interoperability test: a store with
 * Serdes.String() keys and Serdes.Long() values, logging on, caching off.
 *
 * Records file: one line per operation, `key<TAB>value` (a decimal long) puts,
 * `key<TAB>` (nothing after the tab) deletes. Keys are UTF-8 and hold no tab
 * or newline. Dump file: the store's contents as `key<TAB>value` lines,
 * sorted by the key's UTF-8 bytes (unsigned), as `LC_ALL=C sort` would.
 */
final class Interop {
    private Interop() {}

    record Op(String key, Long value) {}

    static List<Op> readRecords(Path file) throws Exception {
        List<Op> ops = new ArrayList<>();
        int lineNo = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isEmpty()) continue;
            int tab = line.indexOf('\t');
            if (tab < 0 || line.indexOf('\t', tab + 1) >= 0) {
                throw new IllegalArgumentException(file + ":" + lineNo + ": expected key<TAB>value or key<TAB>");
            }
            String key = line.substring(0, tab);
            String v = line.substring(tab + 1);
            try {
                ops.add(new Op(key, v.isEmpty() ? null : Long.parseLong(v)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(file + ":" + lineNo + ": value '" + v + "' is not a long");
            }
        }
        return ops;
    }

    /**
     * Runs a writer topology until it has processed n records, closes it
     * (which flushes its changelog producer), and waits until the changelog
     * holds at least n records (every operation is one when caching is off).
     * @return the changelog's offset span
     */
    static long runWriter(Kafka kafka, StreamsBuilder sb, String applicationId, String changelog, AtomicLong processed,
                          long n, long timeoutMs) throws Exception {
        Path stateDir = Kafka.freshStateDir(null);
        try {
            KafkaStreams streams = new KafkaStreams(sb.build(),
                    kafka.streamsProps(applicationId, stateDir, 1, "at_least_once", 1000, 0));
            AtomicReference<Throwable> error = Kafka.watchErrors(streams);
            try {
                streams.start();
                Kafka.await(n + " operations", streams, error, timeoutMs, () -> processed.get() >= n);
            } finally {
                streams.close(Duration.ofSeconds(60)); // flushes the changelog producer
            }
            kafka.leaveGroup(applicationId);
            if (error.get() != null) throw new IllegalStateException("Kafka Streams failed: " + error.get(), error.get());
        } finally {
            Kafka.deleteTree(stateDir);
        }
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        long span;
        while ((span = kafka.offsetSpan(changelog)) < n) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(changelog + " holds " + span + " records, expected " + n);
            }
            Thread.sleep(50);
        }
        return span;
    }

    /** `interop-write`: Kafka Streams applies the file to store S, writing A-S-changelog itself. */
    static Json write(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        String storeName = a.str("store");
        Path file = Path.of(a.str("records"));
        String storeKind = a.oneOf("store-type", "inmemory", StoreKind.NAMES);
        int partitions = (int) a.num("partitions", 1);
        String inputTopic = a.str("input-topic", applicationId + "-" + storeName + "-interop-input");
        long timeoutMs = a.num("timeout-s", 300) * 1000;
        a.checkAllUsed();

        List<Op> ops = readRecords(file);
        String changelog = Kafka.changelogTopic(applicationId, storeName);
        try (Kafka kafka = new Kafka(bootstrap)) {
            for (String t : List.of(changelog, inputTopic)) {
                if (kafka.topicExists(t)) throw new IllegalStateException("topic " + t + " already exists: pick a new --application-id");
            }
            kafka.createTopic(inputTopic, partitions, Map.of());
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            // In file order: one partition keeps the operations on a key in order either way.
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (Op op : ops) {
                    producer.send(new ProducerRecord<>(inputTopic, op.key(), op.value() == null ? null : op.value().toString())).get();
                }
            }

            StoreBuilder<KeyValueStore<String, Long>> store =
                    StoreKind.builder(storeKind, storeName, Serdes.String(), Serdes.Long(), false);
            AtomicLong processed = new AtomicLong();
            ProcessorSupplier<String, String, Void, Void> apply = new ProcessorSupplier<>() {
                @Override
                public Set<StoreBuilder<?>> stores() {
                    return Set.of(store);
                }

                @Override
                public Processor<String, String, Void, Void> get() {
                    return new Processor<>() {
                        private KeyValueStore<String, Long> kv;

                        @Override
                        public void init(ProcessorContext<Void, Void> context) {
                            kv = context.getStateStore(storeName);
                        }

                        @Override
                        public void process(Record<String, String> r) {
                            if (r.value() == null) kv.delete(r.key());
                            else kv.put(r.key(), Long.parseLong(r.value()));
                            processed.incrementAndGet();
                        }
                    };
                }
            };
            StreamsBuilder sb = new StreamsBuilder();
            sb.stream(inputTopic, Consumed.with(Serdes.String(), Serdes.String())).process(apply);
            // Caching is off: every put and delete is one changelog record.
            long span = Interop.runWriter(kafka, sb, applicationId, changelog, processed, ops.size(), timeoutMs);
            return new Json().put("peer", "kafka-streams").put("command", "interop-write")
                    .put("application_id", applicationId).put("store", storeName).put("changelog_topic", changelog)
                    .put("operations", ops.size()).put("changelog_records", span);
        }
    }

    /** `interop-read`: restores store S from an existing A-S-changelog and dumps it sorted. */
    static Json read(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        String storeName = a.str("store");
        Path outFile = Path.of(a.str("out"));
        String storeKind = a.oneOf("store-type", "inmemory", StoreKind.NAMES);
        long timeoutMs = a.num("timeout-s", 300) * 1000;
        Properties extra = Restore.guarantee(a);
        a.checkAllUsed();

        try (Kafka kafka = new Kafka(bootstrap)) {
            Restore r = new Restore(kafka, applicationId, storeName);
            List<KeyValue<String, Long>> rows = new ArrayList<>();
            try {
                r.start(storeKind, Serdes.String(), Serdes.Long(), null, timeoutMs, extra);
                ReadOnlyKeyValueStore<String, Long> kv = r.store(timeoutMs);
                try (KeyValueIterator<String, Long> it = kv.all()) {
                    while (it.hasNext()) rows.add(it.next());
                }
            } finally {
                r.close();
            }
            rows.sort((x, y) -> Arrays.compareUnsigned(x.key.getBytes(StandardCharsets.UTF_8),
                    y.key.getBytes(StandardCharsets.UTF_8)));
            Path tmp = outFile.resolveSibling(outFile.getFileName() + ".tmp");
            try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                for (KeyValue<String, Long> kv : rows) {
                    w.write(kv.key);
                    w.write('\t');
                    w.write(Long.toString(kv.value));
                    w.write('\n');
                }
            }
            Files.move(tmp, outFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            return new Json().put("peer", "kafka-streams").put("command", "interop-read")
                    .put("application_id", applicationId).put("store", storeName).put("changelog_topic", r.changelog)
                    .put("partitions", r.partitions).put("restored_records", r.restored.get())
                    .put("entries", rows.size()).put("out", outFile.toString());
        }
    }
}
