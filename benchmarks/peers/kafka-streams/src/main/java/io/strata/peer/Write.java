package io.strata.peer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * Logged writes: fill an input topic with N updates, then let a Kafka Streams
 * app put every one of them into a key-value store with logging on.
 *
 * Input records: key "k<id>" (String serde), id drawn uniform or Zipf over
 * --keys ids. Value: with --value-type string (default) a String of exactly
 * --value-bytes ASCII digits (the update's sequence number, zero-padded, its
 * last digits if it does not fit); with --value-type long a Long (8 bytes, the
 * sequence number). The store has the same serdes, so the changelog carries
 * the input's key and value bytes unchanged.
 */
final class Write {
    private Write() {}

    static Json run(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        long updates = a.num("updates");
        long keys = a.num("keys");
        String dist = a.oneOf("dist", "uniform", "uniform", "zipf");
        double zipfS = a.real("zipf-s", 0.99);
        long valueBytes = a.num("value-bytes", 100);
        String valueType = a.oneOf("value-type", "string", "string", "long");
        String store = a.oneOf("store", null, StoreKind.NAMES);
        String storeName = a.str("store-name", "kv");
        long cacheBytes = a.num("cache-bytes", 10L << 20);
        String guarantee = a.oneOf("guarantee", "at_least_once", "at_least_once", "exactly_once_v2");
        // Kafka Streams' defaults: 30 s, or 100 ms under exactly-once.
        long commitMs = a.num("commit-ms", guarantee.equals("at_least_once") ? 30_000 : 100);
        int partitions = (int) a.num("partitions", 1);
        int threads = (int) a.num("threads", 1);
        long seed = a.num("seed", 42);
        String applicationId = a.str("application-id",
                "peer-ks-" + store + "-" + System.currentTimeMillis() + "-" + ProcessHandle.current().pid());
        String inputTopic = a.str("input-topic", applicationId + "-input");
        boolean reuseInput = a.flag("reuse-input");
        boolean countChangelog = a.flag("count-changelog") || !a.has("count-changelog");
        String stateDirArg = a.str("state-dir", null);
        boolean keepState = a.flag("keep-state");
        long timeoutMs = a.num("timeout-s", 1800) * 1000;
        a.checkAllUsed();
        if (updates <= 0 || keys <= 0) throw new Args.UsageException("--updates and --keys must be positive");
        if (valueType.equals("string") && (valueBytes < 0 || valueBytes > 1 << 20)) {
            throw new Args.UsageException("--value-bytes must be in 0..1MiB");
        }

        Json out = new Json().put("peer", "kafka-streams").put("kafka_version", org.apache.kafka.common.utils.AppInfoParser.getVersion())
                .put("command", "write").put("store", store).put("updates", updates).put("keys", keys).put("dist", dist);
        if (dist.equals("zipf")) out.put("zipf_s", zipfS);
        out.put("value_type", valueType).put("value_bytes", valueType.equals("long") ? 8 : valueBytes)
                .put("cache_bytes", cacheBytes).put("commit_ms", commitMs).put("guarantee", guarantee)
                .put("partitions", partitions).put("threads", threads)
                .put("application_id", applicationId).put("input_topic", inputTopic);

        if (valueType.equals("long")) {
            return measure(a, out, bootstrap, updates, keys, dist, zipfS, seed, Serdes.Long(), i -> i,
                    store, storeName, cacheBytes, commitMs, guarantee, partitions, threads, applicationId, inputTopic,
                    reuseInput, countChangelog, stateDirArg, keepState, timeoutMs);
        }
        int vb = (int) valueBytes;
        return measure(a, out, bootstrap, updates, keys, dist, zipfS, seed, Serdes.String(), i -> fixedWidth(i, vb),
                store, storeName, cacheBytes, commitMs, guarantee, partitions, threads, applicationId, inputTopic,
                reuseInput, countChangelog, stateDirArg, keepState, timeoutMs);
    }

    static String fixedWidth(long i, int width) {
        String s = Long.toString(i);
        if (s.length() >= width) return s.substring(s.length() - width);
        StringBuilder sb = new StringBuilder(width);
        for (int k = s.length(); k < width; k++) sb.append('0');
        return sb.append(s).toString();
    }

    /** Key ids, uniform or Zipf(s) by rank (id 0 the hottest), from a seeded generator. */
    static final class KeyGen {
        private final SplittableRandom rnd;
        private final long keys;
        private final double[] cdf;

        KeyGen(String dist, long keys, double s, long seed) {
            this.rnd = new SplittableRandom(seed);
            this.keys = keys;
            if (dist.equals("zipf")) {
                if (keys > 100_000_000) throw new Args.UsageException("--keys too large for the Zipf table");
                cdf = new double[(int) keys];
                double sum = 0;
                for (int i = 0; i < keys; i++) {
                    sum += 1.0 / Math.pow(i + 1, s);
                    cdf[i] = sum;
                }
                for (int i = 0; i < keys; i++) cdf[i] /= sum;
            } else {
                cdf = null;
            }
        }

        long next() {
            if (cdf == null) return rnd.nextLong(keys);
            double u = rnd.nextDouble();
            int lo = 0, hi = cdf.length - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cdf[mid] < u) lo = mid + 1;
                else hi = mid;
            }
            return lo;
        }
    }

    /** Puts every input record into the store; counts them for the main thread. */
    static final class PutAll<V> implements ProcessorSupplier<String, V, Void, Void> {
        final StoreBuilder<KeyValueStore<String, V>> storeBuilder;
        final AtomicLong processed = new AtomicLong();
        final AtomicLong firstNanos = new AtomicLong();

        PutAll(StoreBuilder<KeyValueStore<String, V>> storeBuilder) {
            this.storeBuilder = storeBuilder;
        }

        @Override
        public Set<StoreBuilder<?>> stores() {
            return Set.of(storeBuilder);
        }

        @Override
        public Processor<String, V, Void, Void> get() {
            return new Processor<>() {
                private KeyValueStore<String, V> kv;

                @Override
                public void init(ProcessorContext<Void, Void> context) {
                    kv = context.getStateStore(storeBuilder.name());
                }

                @Override
                public void process(Record<String, V> r) {
                    kv.put(r.key(), r.value());
                    if (processed.getAndIncrement() == 0) firstNanos.set(System.nanoTime());
                }
            };
        }
    }

    private static <V> Json measure(Args a, Json out, String bootstrap, long updates, long keys, String dist,
                                    double zipfS, long seed, Serde<V> valueSerde, LongFunction<V> valueOf,
                                    String store, String storeName, long cacheBytes, long commitMs, String guarantee,
                                    int partitions, int threads, String applicationId, String inputTopic,
                                    boolean reuseInput, boolean countChangelog, String stateDirArg, boolean keepState,
                                    long timeoutMs) throws Exception {
        String changelog = Kafka.changelogTopic(applicationId, storeName);
        try (Kafka kafka = new Kafka(bootstrap)) {
            if (kafka.topicExists(changelog)) {
                throw new IllegalStateException("changelog " + changelog + " already exists: pick a new --application-id");
            }
            // --- fill the input topic --------------------------------------------
            if (kafka.topicExists(inputTopic)) {
                long have = kafka.offsetSpan(inputTopic);
                if (!reuseInput) {
                    throw new IllegalStateException("input topic " + inputTopic + " exists (" + have
                            + " records); pass --reuse-input to use it as it is, or name a new one");
                }
                if (have != updates) {
                    throw new IllegalStateException("input topic " + inputTopic + " holds " + have + " records, not " + updates);
                }
                if (kafka.partitions(inputTopic) != partitions) {
                    throw new IllegalStateException("input topic " + inputTopic + " has " + kafka.partitions(inputTopic)
                            + " partitions, not " + partitions);
                }
                Kafka.log("reusing " + have + " records in " + inputTopic);
                out.put("fill_s", null);
            } else {
                kafka.createTopic(inputTopic, partitions, Map.of());
                Kafka.log("filling " + inputTopic + " with " + updates + " updates over " + keys + " keys (" + dist + ")");
                long t0 = System.nanoTime();
                fill(bootstrap, inputTopic, updates, new KeyGen(dist, keys, zipfS, seed), valueSerde, valueOf);
                double fillS = (System.nanoTime() - t0) / 1e9;
                out.put("fill_s", fillS).put("fill_records_per_s", updates / fillS);
            }
            out.put("input_bytes", kafka.logBytes(inputTopic));

            // --- run Kafka Streams -----------------------------------------------
            PutAll<V> putAll = new PutAll<>(StoreKind.builder(store, storeName, Serdes.String(), valueSerde, cacheBytes > 0));
            StreamsBuilder sb = new StreamsBuilder();
            sb.stream(inputTopic, Consumed.with(Serdes.String(), valueSerde)).process(putAll);
            Path stateDir = Kafka.freshStateDir(stateDirArg);
            Properties props = kafka.streamsProps(applicationId, stateDir, threads, guarantee, commitMs, cacheBytes);
            try {
                KafkaStreams streams = new KafkaStreams(sb.build(), props);
                AtomicReference<Throwable> error = Kafka.watchErrors(streams);
                Kafka.log("running Kafka Streams (" + store + ", cache " + cacheBytes + " B, commit " + commitMs + " ms)");
                double cpu0 = Kafka.cpuSeconds();
                long t0 = System.nanoTime();
                long tDone, tClosed;
                double cpuDone, cpuClosed;
                try {
                    streams.start();
                    Kafka.await(updates + " processed records", streams, error, timeoutMs,
                            () -> putAll.processed.get() >= updates);
                    tDone = System.nanoTime();
                    cpuDone = Kafka.cpuSeconds();
                } finally {
                    // close() flushes the cache and the changelog producer and commits.
                    streams.close(Duration.ofSeconds(120));
                }
                kafka.leaveGroup(applicationId);
                tClosed = System.nanoTime();
                cpuClosed = Kafka.cpuSeconds();
                if (error.get() != null) throw new IllegalStateException("Kafka Streams failed: " + error.get(), error.get());

                double elapsed = (tDone - t0) / 1e9;
                double steady = (tDone - putAll.firstNanos.get()) / 1e9;
                double withClose = (tClosed - t0) / 1e9;
                out.put("processed", putAll.processed.get())
                        .put("elapsed_s", elapsed)
                        .put("updates_per_s", updates / elapsed)
                        .put("startup_s", (putAll.firstNanos.get() - t0) / 1e9)
                        .put("steady_updates_per_s", updates / steady)
                        .put("elapsed_with_close_s", withClose)
                        .put("updates_per_s_with_close", updates / withClose)
                        .put("cpu_s", cpuDone - cpu0)
                        .put("cpu_s_per_million", (cpuDone - cpu0) / (updates / 1e6))
                        .put("cpu_s_with_close", cpuClosed - cpu0);
            } finally {
                if (!keepState) Kafka.deleteTree(stateDir);
            }

            // --- what reached the changelog --------------------------------------
            long span = kafka.offsetSpan(changelog);
            out.put("changelog_topic", changelog)
                    .put("changelog_offsets", span)
                    .put("changelog_offsets_per_update", (double) span / updates)
                    .put("changelog_log_bytes", kafka.logBytes(changelog));
            if (countChangelog) {
                Changelog c = Changelog.count(kafka, changelog);
                out.put("changelog_records", c.records)
                        .put("changelog_records_per_update", (double) c.records / updates)
                        .put("changelog_payload_bytes", c.keyBytes + c.valueBytes)
                        .put("changelog_payload_bytes_per_update", (double) (c.keyBytes + c.valueBytes) / updates)
                        .put("changelog_tombstones", c.tombstones);
            }
        }
        return out;
    }

    private static <V> void fill(String bootstrap, String topic, long updates, KeyGen gen, Serde<V> valueSerde,
                                 LongFunction<V> valueOf) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 << 10);
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L << 20);
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<String, V> producer = new KafkaProducer<>(p, new StringSerializer(), valueSerde.serializer())) {
            for (long i = 0; i < updates; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + gen.next(), valueOf.apply(i)), (md, e) -> {
                    if (e != null) failed.compareAndSet(null, e);
                });
                if (failed.get() != null) break;
            }
            producer.flush();
        }
        if (failed.get() != null) throw new IllegalStateException("filling " + topic + " failed: " + failed.get(), failed.get());
    }
}
