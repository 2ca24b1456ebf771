package io.strata.peer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.QueryableStoreType;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * Restores a key-value store from an existing changelog topic into a fresh
 * Kafka Streams instance.
 *
 * Kafka Streams derives a store's changelog name from the application id and
 * the store name (<application.id>-<store>-changelog) and never takes a topic
 * name, so this reuses both: a topology with a store of that name and logging
 * on, under that application id, with an empty local state directory. With no
 * local state (and no checkpoint) Kafka Streams restores the store from the
 * changelog's first offset to its end before it processes anything.
 *
 * A store only lives in a task, and a task needs a source topic: the topology
 * reads an empty topic (<application.id>-<store>-restore-source, created here
 * with as many partitions as the changelog, as Kafka Streams requires) through
 * a processor that touches nothing. The input of whoever wrote the changelog
 * is not needed and not read.
 */
final class Restore {
    final Kafka kafka;
    final String applicationId;
    final String storeName;
    final String changelog;
    final String sourceTopic;
    final int partitions;

    final AtomicLong firstStart = new AtomicLong(Long.MAX_VALUE);
    final AtomicLong lastEnd = new AtomicLong();
    final AtomicLong restored = new AtomicLong();
    final Map<TopicPartition, Long> ended = new ConcurrentHashMap<>();
    final Set<TopicPartition> withData = new HashSet<>();
    long startNanos;
    long readyNanos;
    Path stateDir;
    KafkaStreams streams;

    Restore(Kafka kafka, String applicationId, String storeName) throws Exception {
        this.kafka = kafka;
        this.applicationId = applicationId;
        this.storeName = storeName;
        this.changelog = Kafka.changelogTopic(applicationId, storeName);
        this.sourceTopic = applicationId + "-" + storeName + "-restore-source";
        this.partitions = kafka.partitions(changelog);
        if (partitions < 0) {
            throw new IllegalStateException("changelog topic " + changelog + " does not exist (application id '"
                    + applicationId + "', store '" + storeName + "')");
        }
    }

    /** Splits <application.id>-<store>-changelog; the store name must be known, the id may contain '-'. */
    static String applicationIdOf(String changelogTopic, String storeName) {
        String suffix = "-" + storeName + "-changelog";
        if (!changelogTopic.endsWith(suffix) || changelogTopic.length() == suffix.length()) {
            throw new Args.UsageException("changelog topic '" + changelogTopic + "' is not <application.id>" + suffix
                    + " (give --store-name, or --application-id instead)");
        }
        return changelogTopic.substring(0, changelogTopic.length() - suffix.length());
    }

    /** Starts Kafka Streams and returns once every non-empty changelog partition is restored. */
    <K, V> void start(String storeKind, Serde<K> keys, Serde<V> values, String stateDirArg, long timeoutMs,
                      Properties extra) throws Exception {
        start(StoreKind.builder(storeKind, storeName, keys, values, false), stateDirArg, timeoutMs, extra);
    }

    /** The same for a store of any kind (window, session) named storeName, with logging on. */
    void start(StoreBuilder<?> store, String stateDirArg, long timeoutMs, Properties extra) throws Exception {
        Map<TopicPartition, Long> begin = kafka.offsets(changelog, OffsetSpec.earliest());
        Map<TopicPartition, Long> end = kafka.offsets(changelog, OffsetSpec.latest());
        for (var e : end.entrySet()) {
            if (e.getValue() > begin.get(e.getKey())) withData.add(e.getKey());
        }
        kafka.createTopic(sourceTopic, partitions, Map.of());

        ProcessorSupplier<byte[], byte[], Void, Void> touchNothing = new ProcessorSupplier<>() {
            @Override
            public Set<StoreBuilder<?>> stores() {
                return Set.of(store);
            }

            @Override
            public Processor<byte[], byte[], Void, Void> get() {
                // A new object per task, as Kafka Streams checks.
                return new Processor<>() {
                    @Override
                    public void process(Record<byte[], byte[]> r) {
                    }
                };
            }
        };
        StreamsBuilder sb = new StreamsBuilder();
        sb.stream(sourceTopic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray())).process(touchNothing);

        // The writer under this application id may have left a member behind.
        kafka.leaveGroup(applicationId);
        stateDir = Kafka.freshStateDir(stateDirArg);
        Properties props = kafka.streamsProps(applicationId, stateDir, 1, "at_least_once", -1, 0);
        props.putAll(extra);
        streams = new KafkaStreams(sb.build(), props);
        AtomicReference<Throwable> error = Kafka.watchErrors(streams);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long startOffset, long endOffset) {
                firstStart.accumulateAndGet(System.nanoTime(), Math::min);
                Kafka.log("restoring " + tp + " offsets " + startOffset + ".." + endOffset);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEndOffset, long numRestored) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
                restored.addAndGet(totalRestored);
                lastEnd.accumulateAndGet(System.nanoTime(), Math::max);
                ended.put(tp, totalRestored);
            }
        });
        startNanos = System.nanoTime();
        streams.start();
        Kafka.await("the restore of " + changelog, streams, error, timeoutMs,
                () -> streams.state() == KafkaStreams.State.RUNNING && ended.keySet().containsAll(withData));
        readyNanos = System.nanoTime();
    }

    /** The restored store, through interactive queries (retried while a task is still being set up). */
    <K, V> ReadOnlyKeyValueStore<K, V> store(long timeoutMs) throws InterruptedException {
        return store(QueryableStoreTypes.<K, V>keyValueStore(), timeoutMs);
    }

    /** The restored store of any queryable type. */
    <T> T store(QueryableStoreType<T> type, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            try {
                return streams.store(StoreQueryParameters.fromNameAndType(storeName, type));
            } catch (InvalidStateStoreException e) {
                if (System.nanoTime() > deadline) throw e;
                Thread.sleep(10);
            }
        }
    }

    double restoreSeconds() {
        return withData.isEmpty() ? 0 : (lastEnd.get() - firstStart.get()) / 1e9;
    }

    void close() throws Exception {
        try {
            if (streams != null) {
                streams.close(Duration.ofSeconds(60));
                kafka.leaveGroup(applicationId);
            }
        } finally {
            if (stateDir != null) Kafka.deleteTree(stateDir);
        }
    }

    /**
     * --guarantee: under exactly_once_v2 the restore consumer reads committed
     * records only; a changelog written with transactions needs it, or records
     * of aborted transactions are restored too.
     */
    static Properties guarantee(Args a) {
        Properties p = new Properties();
        p.put(org.apache.kafka.streams.StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                a.oneOf("guarantee", "at_least_once", "at_least_once", "exactly_once_v2"));
        return p;
    }

    /** The `restore` subcommand. */
    static Json run(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String storeKind = a.oneOf("store", null, StoreKind.NAMES);
        String storeName = a.str("store-name", "kv");
        String applicationId = a.has("application-id") ? a.str("application-id")
                : applicationIdOf(a.str("changelog-topic"), storeName);
        if (a.has("application-id") && a.has("changelog-topic")
                && !Kafka.changelogTopic(applicationId, storeName).equals(a.str("changelog-topic"))) {
            throw new Args.UsageException("--changelog-topic does not match --application-id and --store-name");
        }
        String stateDirArg = a.str("state-dir", null);
        long timeoutMs = a.num("timeout-s", 1800) * 1000;
        long maxPollRecords = a.num("restore-max-poll-records", -1);
        Properties extra = guarantee(a);
        a.checkAllUsed();

        if (maxPollRecords > 0) {
            extra.put(org.apache.kafka.streams.StreamsConfig.restoreConsumerPrefix("max.poll.records"), (int) maxPollRecords);
        }
        try (Kafka kafka = new Kafka(bootstrap)) {
            Restore r = new Restore(kafka, applicationId, storeName);
            long logBytes = kafka.logBytes(r.changelog);
            long span = kafka.offsetSpan(r.changelog);
            Json out = new Json().put("peer", "kafka-streams")
                    .put("kafka_version", org.apache.kafka.common.utils.AppInfoParser.getVersion())
                    .put("command", "restore").put("store", storeKind)
                    .put("application_id", applicationId).put("changelog_topic", r.changelog)
                    .put("partitions", r.partitions).put("changelog_offsets", span).put("changelog_log_bytes", logBytes);
            double cpu0 = Kafka.cpuSeconds();
            try {
                r.start(storeKind, Serdes.Bytes(), Serdes.Bytes(), stateDirArg, timeoutMs, extra);
                double cpu1 = Kafka.cpuSeconds();
                long entries = r.<Object, Object>store(60_000).approximateNumEntries();
                double secs = r.restoreSeconds();
                out.put("records", r.restored.get())
                        .put("restore_s", secs)
                        .put("records_per_s", r.restored.get() / secs)
                        .put("mb_per_s", logBytes / 1e6 / secs)
                        .put("ready_s", (r.readyNanos - r.startNanos) / 1e9)
                        .put("cpu_s", cpu1 - cpu0)
                        .put("entries", entries);
            } finally {
                r.close();
            }
            return out;
        }
    }
}
