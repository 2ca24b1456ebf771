package io.strata.peer;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import org.apache.kafka.streams.query.VersionedKeyQuery;

/**
 * The Kafka Streams side of the interoperability test of the store kinds
 * beyond key-value: Kafka Streams' in-memory window store (no duplicates)
 * and session store, its RocksDB timestamped key-value store and its
 * RocksDB versioned key-value store, Serdes.String() keys, Serdes.Long()
 * values, logging on with its default changelog configs, caching off.
 *
 * Records file, one operation per line (an empty value deletes):
 *   window:      key<TAB>start<TAB>value
 *   session:     key<TAB>start<TAB>end<TAB>value
 *   timestamped: key<TAB>timestamp<TAB>value
 *   versioned:   key<TAB>timestamp<TAB>value
 * Dump file: window, session and timestamped stores' contents in the same
 * layout (no deletes), sorted by the key's UTF-8 bytes (unsigned), then
 * start, then end; a versioned store's answers to "key as of t" for every
 * key of the records file and every t of --as-of, one line each:
 * key<TAB>t<TAB>value<TAB>valid_from, with value and valid_from empty when
 * there is none.
 */
final class KindsInterop {
    private KindsInterop() {}

    static final String[] KINDS = {"window", "session", "timestamped", "versioned"};

    record Op(String key, long start, long end, Long value) {}

    static List<Op> readRecords(Path file, boolean session) throws Exception {
        List<Op> ops = new ArrayList<>();
        int lineNo = 0;
        int fields = session ? 4 : 3;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            if (f.length != fields) {
                throw new IllegalArgumentException(file + ":" + lineNo + ": expected " + fields + " tab-separated fields");
            }
            long start = Long.parseLong(f[1]);
            long end = session ? Long.parseLong(f[2]) : start;
            String v = f[fields - 1];
            ops.add(new Op(f[0], start, end, v.isEmpty() ? null : Long.parseLong(v)));
        }
        return ops;
    }

    /** key's version as of t, through interactive queries v2 (versioned stores have no v1 query type). */
    static VersionedRecord<Long> versionAsOf(Restore r, String store, String key, long t, long timeoutMs)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        StateQueryRequest<VersionedRecord<Long>> request = StateQueryRequest.inStore(store)
                .withQuery(VersionedKeyQuery.<String, Long>withKey(key).asOf(Instant.ofEpochMilli(t)));
        while (true) {
            StateQueryResult<VersionedRecord<Long>> result = r.streams.query(request);
            var partitions = result.getPartitionResults();
            if (!partitions.isEmpty() && partitions.values().stream().allMatch(QueryResult::isSuccess)) {
                for (QueryResult<VersionedRecord<Long>> p : partitions.values()) {
                    if (p.getResult() != null) return p.getResult();
                }
                return null;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("versioned query for " + key + " as of " + t + " failed: " + partitions);
            }
            Thread.sleep(10);
        }
    }

    static StoreBuilder<?> builder(String kind, String name, long windowSizeMs, long retentionMs) {
        // Logging with the default changelog configs: Kafka Streams creates
        // <application.id>-<name>-changelog as compact,delete with
        // retention.ms = the store's retention + 1 day.
        return switch (kind) {
            case "window" -> Stores.windowStoreBuilder(
                            Stores.inMemoryWindowStore(name, Duration.ofMillis(retentionMs),
                                    Duration.ofMillis(windowSizeMs), false),
                            Serdes.String(), Serdes.Long())
                    .withLoggingEnabled(Map.of()).withCachingDisabled();
            case "session" -> Stores.sessionStoreBuilder(
                            Stores.inMemorySessionStore(name, Duration.ofMillis(retentionMs)),
                            Serdes.String(), Serdes.Long())
                    .withLoggingEnabled(Map.of()).withCachingDisabled();
            case "timestamped" -> Stores.timestampedKeyValueStoreBuilder(
                            Stores.persistentTimestampedKeyValueStore(name), Serdes.String(), Serdes.Long())
                    .withLoggingEnabled(Map.of()).withCachingDisabled();
            // Compacted, with min.compaction.lag.ms = history retention + 1 day.
            case "versioned" -> Stores.versionedKeyValueStoreBuilder(
                            Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(retentionMs)),
                            Serdes.String(), Serdes.Long())
                    .withLoggingEnabled(Map.of());
            default -> throw new Args.UsageException("unknown kind '" + kind + "'");
        };
    }

    /** `interop-kind-write`: Kafka Streams applies the file to store S, writing A-S-changelog itself. */
    static Json write(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        String storeName = a.str("store");
        String kind = a.oneOf("kind", null, KINDS);
        Path file = Path.of(a.str("records"));
        long windowSizeMs = a.num("window-size-ms", 1000);
        long retentionMs = a.num("retention-ms", 0);
        long timeoutMs = a.num("timeout-s", 300) * 1000;
        a.checkAllUsed();
        boolean session = kind.equals("session");

        List<Op> ops = readRecords(file, session);
        String changelog = Kafka.changelogTopic(applicationId, storeName);
        String inputTopic = applicationId + "-" + storeName + "-interop-input";
        try (Kafka kafka = new Kafka(bootstrap)) {
            for (String t : List.of(changelog, inputTopic)) {
                if (kafka.topicExists(t)) throw new IllegalStateException("topic " + t + " already exists: pick a new --application-id");
            }
            kafka.createTopic(inputTopic, 1, Map.of());
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            // The record value carries the operation's line number: the processor reads the op from the list.
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < ops.size(); i++) {
                    producer.send(new ProducerRecord<>(inputTopic, ops.get(i).key(), Integer.toString(i))).get();
                }
            }

            StoreBuilder<?> store = builder(kind, storeName, windowSizeMs, retentionMs);
            AtomicLong processed = new AtomicLong();
            ProcessorSupplier<String, String, Void, Void> apply = new ProcessorSupplier<>() {
                @Override
                public Set<StoreBuilder<?>> stores() {
                    return Set.of(store);
                }

                @Override
                public Processor<String, String, Void, Void> get() {
                    return new Processor<>() {
                        private ProcessorContext<Void, Void> context;

                        @Override
                        public void init(ProcessorContext<Void, Void> c) {
                            context = c;
                        }

                        @Override
                        public void process(Record<String, String> r) {
                            Op op = ops.get(Integer.parseInt(r.value()));
                            switch (kind) {
                                case "session" -> {
                                    SessionStore<String, Long> sessions = context.getStateStore(storeName);
                                    Windowed<String> k = new Windowed<>(op.key(), new SessionWindow(op.start(), op.end()));
                                    if (op.value() == null) sessions.remove(k);
                                    else sessions.put(k, op.value());
                                }
                                case "window" -> {
                                    WindowStore<String, Long> windows = context.getStateStore(storeName);
                                    windows.put(op.key(), op.value(), op.start()); // null deletes
                                }
                                case "timestamped" -> {
                                    TimestampedKeyValueStore<String, Long> kv = context.getStateStore(storeName);
                                    if (op.value() == null) kv.delete(op.key());
                                    else kv.put(op.key(), ValueAndTimestamp.make(op.value(), op.start()));
                                }
                                default -> {
                                    VersionedKeyValueStore<String, Long> versions = context.getStateStore(storeName);
                                    if (op.value() == null) versions.delete(op.key(), op.start());
                                    else versions.put(op.key(), op.value(), op.start());
                                }
                            }
                            processed.incrementAndGet();
                        }
                    };
                }
            };
            StreamsBuilder sb = new StreamsBuilder();
            sb.stream(inputTopic, Consumed.with(Serdes.String(), Serdes.String())).process(apply);
            // Caching is off: every operation is one changelog record, even
            // a put into an expired window (the store drops it, its logging
            // layer does not).
            long span = Interop.runWriter(kafka, sb, applicationId, changelog, processed, ops.size(), timeoutMs);
            return new Json().put("peer", "kafka-streams").put("command", "interop-kind-write").put("kind", kind)
                    .put("application_id", applicationId).put("store", storeName).put("changelog_topic", changelog)
                    .put("operations", ops.size()).put("changelog_records", span);
        }
    }

    /** `interop-kind-read`: restores store S from an existing A-S-changelog and dumps it sorted. */
    static Json read(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        String storeName = a.str("store");
        String kind = a.oneOf("kind", null, KINDS);
        Path outFile = Path.of(a.str("out"));
        long windowSizeMs = a.num("window-size-ms", 1000);
        long retentionMs = a.num("retention-ms", 0);
        Path keysFrom = a.has("records") ? Path.of(a.str("records")) : null;
        String asOf = a.str("as-of", "");
        long timeoutMs = a.num("timeout-s", 300) * 1000;
        a.checkAllUsed();
        boolean session = kind.equals("session");

        List<Op> rows = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        try (Kafka kafka = new Kafka(bootstrap)) {
            Restore r = new Restore(kafka, applicationId, storeName);
            try {
                r.start(builder(kind, storeName, windowSizeMs, retentionMs), null, timeoutMs, new Properties());
                switch (kind) {
                    case "versioned" -> {
                        if (keysFrom == null) throw new Args.UsageException("--kind versioned needs --records (the keys)");
                        java.util.TreeSet<String> keys = new java.util.TreeSet<>();
                        for (Op op : readRecords(keysFrom, false)) keys.add(op.key());
                        for (String key : keys) {
                            for (String t : asOf.split(",")) {
                                if (t.isEmpty()) continue;
                                VersionedRecord<Long> v = versionAsOf(r, storeName, key, Long.parseLong(t), timeoutMs);
                                lines.add(key + "\t" + t + "\t" + (v == null ? "\t" : v.value() + "\t" + v.timestamp()));
                            }
                        }
                    }
                    case "timestamped" -> {
                        ReadOnlyKeyValueStore<String, ValueAndTimestamp<Long>> kv =
                                r.store(QueryableStoreTypes.<String, Long>timestampedKeyValueStore(), timeoutMs);
                        try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = kv.all()) {
                            while (it.hasNext()) {
                                KeyValue<String, ValueAndTimestamp<Long>> e = it.next();
                                rows.add(new Op(e.key, e.value.timestamp(), e.value.timestamp(), e.value.value()));
                            }
                        }
                    }
                    default -> {
                        KeyValueIterator<Windowed<String>, Long> it;
                        if (session) {
                            ReadOnlySessionStore<String, Long> s = r.store(QueryableStoreTypes.<String, Long>sessionStore(), timeoutMs);
                            it = s.fetch(null, null); // every key (open range)
                        } else {
                            ReadOnlyWindowStore<String, Long> w = r.store(QueryableStoreTypes.<String, Long>windowStore(), timeoutMs);
                            it = w.all();
                        }
                        try (it) {
                            while (it.hasNext()) {
                                KeyValue<Windowed<String>, Long> kv = it.next();
                                rows.add(new Op(kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value));
                            }
                        }
                    }
                }
            } finally {
                r.close();
            }
            rows.sort(Comparator.<Op, byte[]>comparing(o -> o.key().getBytes(StandardCharsets.UTF_8), Arrays::compareUnsigned)
                    .thenComparingLong(Op::start).thenComparingLong(Op::end));
            Path tmp = outFile.resolveSibling(outFile.getFileName() + ".tmp");
            try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                for (Op o : rows) {
                    w.write(o.key() + "\t" + o.start() + (session ? "\t" + o.end() : "") + "\t" + o.value() + "\n");
                }
                for (String line : lines) w.write(line + "\n");
            }
            Files.move(tmp, outFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            return new Json().put("peer", "kafka-streams").put("command", "interop-kind-read").put("kind", kind)
                    .put("application_id", applicationId).put("store", storeName).put("changelog_topic", r.changelog)
                    .put("restored_records", r.restored.get()).put("entries", rows.size() + lines.size())
                    .put("out", outFile.toString());
        }
    }
}
