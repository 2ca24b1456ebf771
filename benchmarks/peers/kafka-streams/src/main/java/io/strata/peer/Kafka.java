package io.strata.peer;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

/** Admin calls, Kafka Streams settings and process measurements shared by the subcommands. */
final class Kafka implements AutoCloseable {
    final String bootstrap;
    final Admin admin;

    Kafka(String bootstrap) {
        this.bootstrap = bootstrap;
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        this.admin = Admin.create(p);
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(10));
    }

    static void log(String msg) {
        System.err.println("peer: " + msg);
    }

    // --- topics ---------------------------------------------------------------

    boolean topicExists(String topic) throws Exception {
        return admin.listTopics().names().get().contains(topic);
    }

    /** Partition count, or -1 when the topic does not exist. */
    int partitions(String topic) throws Exception {
        try {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            return d.partitions().size();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) return -1;
            throw e;
        }
    }

    /** Creates the topic; an existing one is fine if it has the same partition count. */
    void createTopic(String topic, int partitions, Map<String, String> configs) throws Exception {
        try {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw e;
            int have = partitions(topic);
            if (have != partitions) {
                throw new IllegalStateException("topic " + topic + " exists with " + have + " partitions, need " + partitions);
            }
        }
    }

    List<TopicPartition> topicPartitions(String topic) throws Exception {
        int n = partitions(topic);
        if (n < 0) throw new IllegalStateException("topic " + topic + " does not exist");
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) tps.add(new TopicPartition(topic, i));
        return tps;
    }

    Map<TopicPartition, Long> offsets(String topic, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (TopicPartition tp : topicPartitions(topic)) req.put(tp, spec);
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listOffsets(req).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    /** Sum over partitions of (end offset - log start offset). */
    long offsetSpan(String topic) throws Exception {
        Map<TopicPartition, Long> start = offsets(topic, OffsetSpec.earliest());
        Map<TopicPartition, Long> end = offsets(topic, OffsetSpec.latest());
        long n = 0;
        for (var e : end.entrySet()) n += e.getValue() - start.get(e.getKey());
        return n;
    }

    /** Bytes of the topic's log on the broker (record batches as stored), all partitions. */
    long logBytes(String topic) throws Exception {
        List<Integer> brokers = new ArrayList<>();
        for (Node n : admin.describeCluster().nodes().get()) brokers.add(n.id());
        long bytes = 0;
        for (Map<String, LogDirDescription> dirs : admin.describeLogDirs(brokers).allDescriptions().get().values()) {
            for (LogDirDescription d : dirs.values()) {
                for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                    if (r.getKey().topic().equals(topic)) bytes += r.getValue().size();
                }
            }
        }
        return bytes;
    }

    // --- Kafka Streams --------------------------------------------------------

    /**
     * Removes every member of the application's consumer group. Kafka Streams
     * does not leave the group when it closes (its consumers skip the
     * LeaveGroup request), so the next instance under the same application id
     * would wait out the old member's session (45 s) before it gets its tasks.
     * Called after close, and before a start that reuses an application id.
     */
    void leaveGroup(String applicationId) {
        try {
            var groups = admin.describeConsumerGroups(List.of(applicationId)).all().get();
            var g = groups.get(applicationId);
            if (g == null || g.members().isEmpty()) return;
            admin.removeMembersFromConsumerGroup(applicationId,
                    new org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions()).all().get();
        } catch (Exception e) {
            log("could not remove the members of group " + applicationId + ": " + e);
        }
    }

    static String changelogTopic(String applicationId, String store) {
        return applicationId + "-" + store + "-changelog";
    }

    Properties streamsProps(String applicationId, Path stateDir, int threads, String guarantee,
                            long commitMs, long cacheBytes) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        // Negative: Kafka Streams' default for the guarantee (30 s, or 100 ms under exactly-once).
        if (commitMs >= 0) p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cacheBytes);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        return p;
    }

    /** Records the first fatal error of a Kafka Streams instance and shuts it down. */
    static AtomicReference<Throwable> watchErrors(KafkaStreams streams) {
        AtomicReference<Throwable> error = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(e -> {
            error.compareAndSet(null, e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return error;
    }

    /** Polls until done() holds; fails on a Streams error, a dead instance or the timeout. */
    static void await(String what, KafkaStreams streams, AtomicReference<Throwable> error,
                      long timeoutMs, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!done.getAsBoolean()) {
            Throwable t = error.get();
            if (t != null) throw new IllegalStateException("Kafka Streams failed while waiting for " + what + ": " + t, t);
            KafkaStreams.State s = streams.state();
            if (s == KafkaStreams.State.ERROR || s == KafkaStreams.State.NOT_RUNNING || s == KafkaStreams.State.PENDING_ERROR) {
                throw new IllegalStateException("Kafka Streams is " + s + " while waiting for " + what);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what + " (state " + s + ")");
            }
            Thread.sleep(2);
        }
    }

    // --- the process ----------------------------------------------------------

    /** CPU time of the whole JVM (all threads, GC and JIT included), in seconds. */
    static double cpuSeconds() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime() / 1e9;
        }
        return ProcessHandle.current().info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(Double.NaN);
    }

    static Path freshStateDir(String given) throws IOException {
        if (given != null) {
            Path p = Path.of(given);
            deleteTree(p);
            Files.createDirectories(p);
            return p;
        }
        return Files.createTempDirectory("strata-peer-state-");
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) return;
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                Files.delete(f);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
