package io.strata.peer;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * `runtime`: one long-lived Kafka Streams instance of the runtime benchmark's
 * application, the same topology as strata's (test/runtime/app): per-key
 * totals (count, sum) of Long amounts in a logged store named "totals", and
 * one output record per input record. It runs until SIGTERM or SIGINT; several
 * processes under one application id share the work. What happens to it
 * (state changes, restores, tasks starting) goes to stdout as one line each,
 * for the benchmark driver; everything else goes to stderr.
 *
 * `runtime-feed`: writes test input for it.
 */
final class StreamRuntime {
    private StreamRuntime() {}

    static final String STORE = "totals";

    /** A key's totals; the store's value, 16 bytes: count then sum, int64 big-endian each. */
    record Totals(long count, long sum) {}

    static final class TotalsSerde {
        private TotalsSerde() {}

        static Serde<Totals> serde() {
            Serializer<Totals> ser = (topic, t) -> t == null ? null
                    : ByteBuffer.allocate(16).putLong(t.count()).putLong(t.sum()).array();
            Deserializer<Totals> de = (topic, b) -> {
                if (b == null) return null;
                if (b.length != 16) throw new IllegalArgumentException("Totals: expected 16 bytes, got " + b.length);
                ByteBuffer bb = ByteBuffer.wrap(b);
                return new Totals(bb.getLong(), bb.getLong());
            };
            return Serdes.serdeFrom(ser, de);
        }
    }

    /** Output value, 24 bytes: input offset, count, sum, int64 big-endian each. */
    static byte[] update(long offset, Totals t) {
        return ByteBuffer.allocate(24).putLong(offset).putLong(t.count()).putLong(t.sum()).array();
    }

    /**
     * The driver's lines. stdout is taken over at start (System.out then points
     * at stderr), so nothing else can slip a line in between.
     */
    static final class Lines {
        private final PrintStream out;

        Lines(PrintStream out) {
            this.out = out;
        }

        synchronized void say(String line) {
            out.println(line);
            out.flush();
        }
    }

    /** The aggregate: one processor per task; init() and the first record after it make the `started` line. */
    static final class Aggregate implements ProcessorSupplier<String, Long, String, byte[]> {
        final StoreBuilder<KeyValueStore<String, Totals>> store;
        final Lines lines;

        Aggregate(StoreBuilder<KeyValueStore<String, Totals>> store, Lines lines) {
            this.store = store;
            this.lines = lines;
        }

        @Override
        public Set<StoreBuilder<?>> stores() {
            return Set.of(store);
        }

        @Override
        public Processor<String, Long, String, byte[]> get() {
            return new Processor<>() {
                private ProcessorContext<String, byte[]> context;
                private KeyValueStore<String, Totals> totals;
                private long assignedMs;
                private boolean seenRecord;

                @Override
                public void init(ProcessorContext<String, byte[]> context) {
                    this.context = context;
                    this.totals = context.getStateStore(STORE);
                    // A revived task (after a TaskCorruptedException) calls init()
                    // again on the same object: a new incarnation.
                    this.assignedMs = System.currentTimeMillis();
                    this.seenRecord = false;
                }

                @Override
                public void process(Record<String, Long> r) {
                    if (!seenRecord) {
                        seenRecord = true;
                        lines.say("started task=" + context.taskId().partition() + " assigned_ms=" + assignedMs
                                + " first_record_ms=" + System.currentTimeMillis());
                    }
                    Totals t = totals.get(r.key());
                    long amount = r.value() == null ? 0 : r.value();
                    t = t == null ? new Totals(1, amount) : new Totals(t.count() + 1, t.sum() + amount);
                    totals.put(r.key(), t);
                    long offset = context.recordMetadata().orElseThrow().offset();
                    context.forward(r.withValue(update(offset, t)));
                }
            };
        }
    }

    static Topology topology(String input, String output, StoreBuilder<KeyValueStore<String, Totals>> store, Lines lines) {
        Topology t = new Topology();
        t.addSource("input", new StringDeserializer(), new LongDeserializer(), input);
        t.addProcessor("aggregate", new Aggregate(store, lines), "input");
        // No partitioner: the producer's default, murmur2 of the key bytes.
        t.addSink("output", output, new StringSerializer(), new ByteArraySerializer(), "aggregate");
        return t;
    }

    /** Prints `restored` at each changelog partition's end of restore. */
    static final class RestoreLines implements StateRestoreListener {
        record Started(long from, long to, long startMs, AtomicLong records) {}

        final Lines lines;
        final Map<TopicPartition, Started> running = new ConcurrentHashMap<>();

        RestoreLines(Lines lines) {
            this.lines = lines;
        }

        @Override
        public void onRestoreStart(TopicPartition tp, String store, long startOffset, long endOffset) {
            running.put(tp, new Started(startOffset, endOffset, System.currentTimeMillis(), new AtomicLong()));
        }

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEndOffset, long numRestored) {
            Started s = running.get(tp);
            if (s != null) s.records().addAndGet(numRestored);
        }

        @Override
        public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
            long endMs = System.currentTimeMillis();
            Started s = running.remove(tp);
            if (s == null) {
                Kafka.log("restore of " + tp + " ended without a start (" + totalRestored + " records)");
                return;
            }
            lines.say("restored task=" + tp.partition() + " store=" + store + " records=" + s.records().get()
                    + " from=" + s.from() + " to=" + s.to() + " start_ms=" + s.startMs() + " end_ms=" + endMs);
        }

        @Override
        public void onRestoreSuspended(TopicPartition tp, String store, long totalRestored) {
            running.remove(tp);
            Kafka.log("restore of " + tp + " (" + store + ") suspended after " + totalRestored + " records");
        }
    }

    /** Prints `standby` when a standby stops updating (promoted to active, or moved away): how far behind it was. */
    static final class StandbyLines implements StandbyUpdateListener {
        final Lines lines;

        StandbyLines(Lines lines) {
            this.lines = lines;
        }

        @Override
        public void onUpdateStart(TopicPartition tp, String store, long startingOffset) {
        }

        @Override
        public void onBatchLoaded(TopicPartition tp, String store, TaskId task, long batchEndOffset, long batchSize,
                                  long currentEndOffset) {
        }

        @Override
        public void onUpdateSuspended(TopicPartition tp, String store, long storeOffset, long currentEndOffset,
                                      SuspendReason reason) {
            // Either offset may be unknown (-1); then so is the lag.
            long lag = storeOffset >= 0 && currentEndOffset >= 0 ? Math.max(0, currentEndOffset - storeOffset) : -1;
            Kafka.log("standby " + tp + " (" + store + ") suspended: " + reason + ", store at " + storeOffset
                    + ", end " + currentEndOffset);
            lines.say("standby task=" + tp.partition() + " store=" + store + " lag=" + lag);
        }
    }

    /** The `runtime` subcommand: runs until SIGTERM or SIGINT, then closes; returns no result line. */
    static Json run(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        String input = a.str("input");
        String output = a.str("output");
        String instance = a.str("instance", "peer-" + ProcessHandle.current().pid());
        Path stateDir = Path.of(a.str("state-dir"));
        String guarantee = a.oneOf("guarantee", "at_least_once", "at_least_once", "exactly_once_v2");
        long standbys = a.num("standbys", 0);
        long sessionMs = a.num("session-ms", 10_000);
        long commitMs = a.num("commit-ms", -1); // -1: Kafka Streams' default for the guarantee
        long cacheBytes = a.num("cache-bytes", 10L << 20);
        String storeKind = a.oneOf("store", "inmemory", StoreKind.NAMES);
        long threads = a.num("threads", 1);
        long transactionMs = a.num("transaction-ms", 10_000);
        a.checkAllUsed();
        if (threads < 1 || standbys < 0 || sessionMs < 1 || cacheBytes < 0 || transactionMs < 1) {
            throw new Args.UsageException("--threads, --session-ms and --transaction-ms must be positive, "
                    + "--standbys and --cache-bytes not negative");
        }

        // stdout carries the driver's lines only.
        Lines lines = new Lines(System.out);
        System.setOut(System.err);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, instance);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, (int) standbys);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, (int) threads);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cacheBytes);
        if (commitMs >= 0) p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
        // acceptable.recovery.lag and probing.rebalance.interval.ms stay at their defaults.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), (int) sessionMs);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), (int) Math.max(100, sessionMs / 5));
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (guarantee.equals("exactly_once_v2")) {
            p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), (int) transactionMs);
        }

        StoreBuilder<KeyValueStore<String, Totals>> store =
                StoreKind.builder(storeKind, STORE, Serdes.String(), TotalsSerde.serde(), cacheBytes > 0);
        Files.createDirectories(stateDir);
        KafkaStreams streams = new KafkaStreams(topology(input, output, store, lines), p);
        AtomicReference<Throwable> error = Kafka.watchErrors(streams);
        streams.setStateListener((now, before) ->
                lines.say("state from=" + before + " to=" + now + " at_ms=" + System.currentTimeMillis()));
        streams.setGlobalStateRestoreListener(new RestoreLines(lines));
        streams.setStandbyUpdateListener(new StandbyLines(lines));

        // Our own handlers: the JVM's would run the shutdown hooks and exit
        // with 128+signal, while this closes Kafka Streams and exits 0.
        // sun.misc.Signal (module jdk.unsupported) is the only way in Java 17;
        // javac warns about it. A process that starts with SIGINT ignored (a
        // background job of a non-interactive shell) keeps ignoring it.
        CountDownLatch stop = new CountDownLatch(1);
        for (String sig : List.of("TERM", "INT")) {
            sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> {
                Kafka.log(instance + ": SIG" + s.getName() + ", closing");
                stop.countDown();
            });
        }

        Kafka.log(instance + ": running " + applicationId + " (" + input + " -> " + output + ", " + storeKind + ", "
                + guarantee + ", cache " + cacheBytes + " B, standbys " + standbys + ", state " + stateDir + ")");
        streams.start();
        while (!stop.await(50, TimeUnit.MILLISECONDS)) {
            KafkaStreams.State s = streams.state();
            if (error.get() != null || s == KafkaStreams.State.ERROR || s == KafkaStreams.State.PENDING_ERROR
                    || s == KafkaStreams.State.NOT_RUNNING || s == KafkaStreams.State.PENDING_SHUTDOWN) {
                break;
            }
        }
        // Kafka Streams does not leave the group on close: the others get this
        // instance's tasks after its session times out, as after a kill.
        boolean closed = streams.close(Duration.ofSeconds(60));
        lines.say("stopped");
        if (error.get() != null) throw new IllegalStateException("Kafka Streams failed: " + error.get(), error.get());
        if (streams.state() == KafkaStreams.State.ERROR) throw new IllegalStateException("Kafka Streams ended in ERROR");
        if (!closed) throw new IllegalStateException("Kafka Streams did not close within 60 s");
        return null;
    }

    /**
     * The `remove-members` subcommand: removes every member from the group of
     * an application (Admin#removeMembersFromConsumerGroup with no member
     * named, KIP-571). Kafka Streams does not leave its group on close, so its
     * members stay until their session times out; removed, the group is empty
     * at once and another application (strata) with the same id may join.
     */
    static Json removeMembers(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String applicationId = a.str("application-id");
        a.checkAllUsed();
        try (Kafka k = new Kafka(bootstrap)) {
            long started = System.nanoTime();
            int members = k.admin.describeConsumerGroups(List.of(applicationId)).describedGroups().get(applicationId)
                    .get(60, TimeUnit.SECONDS).members().size();
            if (members > 0) {
                k.admin.removeMembersFromConsumerGroup(applicationId, new RemoveMembersFromConsumerGroupOptions())
                        .all().get(60, TimeUnit.SECONDS);
            }
            return new Json().put("command", "remove-members").put("application_id", applicationId)
                    .put("removed", members).put("ms", (System.nanoTime() - started) / 1_000_000.0);
        }
    }

    /**
     * The `runtime-feed` subcommand: N input records for `runtime`, record i
     * (from --first) with key "k<i % keys>" and Long value (i % 13) + 1, sent
     * to partition murmur2(key) % partitions, as Kafka's default partitioner
     * and strata's do.
     */
    static Json feed(Args a) throws Exception {
        String bootstrap = a.str("bootstrap");
        String topic = a.str("topic");
        long records = a.num("records");
        long keys = a.num("keys", 100);
        long first = a.num("first", 0);
        int createPartitions = (int) a.num("partitions", -1);
        a.checkAllUsed();
        if (records < 0 || keys <= 0 || first < 0) {
            throw new Args.UsageException("--records and --first must not be negative, --keys must be positive");
        }
        if (createPartitions > 0) {
            try (Kafka kafka = new Kafka(bootstrap)) {
                kafka.createTopic(topic, createPartitions, Map.of());
            }
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        AtomicReference<Exception> failed = new AtomicReference<>();
        long t0 = System.nanoTime();
        int partitions;
        try (KafkaProducer<String, Long> producer = new KafkaProducer<>(p, new StringSerializer(), new LongSerializer())) {
            partitions = producer.partitionsFor(topic).size();
            for (long i = first; i < first + records && failed.get() == null; i++) {
                String key = "k" + (i % keys);
                int partition = Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
                producer.send(new ProducerRecord<>(topic, partition, key, (i % 13) + 1), (md, e) -> {
                    if (e != null) failed.compareAndSet(null, e);
                });
            }
            producer.flush();
        }
        if (failed.get() != null) throw new IllegalStateException("writing " + topic + " failed: " + failed.get(), failed.get());
        double secs = (System.nanoTime() - t0) / 1e9;
        return new Json().put("peer", "kafka-streams").put("command", "runtime-feed").put("topic", topic)
                .put("partitions", partitions).put("records", records).put("keys", keys).put("first", first)
                .put("elapsed_s", secs);
    }
}
