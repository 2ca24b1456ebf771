package io.strata.peer;

/**
 * Kafka Streams running strata's benchmark workloads, and the Kafka Streams
 * side of the changelog interoperability test. Each subcommand prints one
 * JSON object on one line on stdout (`runtime` prints event lines instead);
 * everything else goes to stderr.
 */
public final class Peer {
    private Peer() {}

    static final String USAGE = """
            usage: Peer COMMAND --bootstrap HOST:PORT [OPTIONS]

              write          fill an input topic, then time Kafka Streams putting every record
                             into a logged key-value store
                --updates N --keys K [--dist uniform|zipf] [--zipf-s 0.99]
                --store inmemory|rocksdb [--store-name kv] [--cache-bytes 10MiB] [--commit-ms 30000 (100 under exactly_once_v2)]
                [--value-type string|long] [--value-bytes 100] [--guarantee at_least_once|exactly_once_v2]
                [--input-topic T [--reuse-input]] [--application-id A] [--partitions 1] [--threads 1]
                [--seed 42] [--count-changelog true|false] [--state-dir D [--keep-state]] [--timeout-s 1800]
              restore        restore a store from an existing changelog into a fresh instance
                --changelog-topic A-kv-changelog | --application-id A   [--store-name kv]
                --store inmemory|rocksdb [--restore-max-poll-records N] [--timeout-s 1800]
                [--guarantee at_least_once|exactly_once_v2]  (exactly_once_v2: restore committed records only)
              interop-write  apply a records file (key<TAB>value, key<TAB> deletes) to store S
                             (String keys, Long values) so Kafka Streams writes A-S-changelog
                --application-id A --store S --records FILE [--store-type inmemory|rocksdb] [--partitions 1]
              interop-read   restore store S from an existing A-S-changelog and dump it sorted
                --application-id A --store S --out FILE [--store-type inmemory|rocksdb]
                [--guarantee at_least_once|exactly_once_v2]  (exactly_once_v2 for a transactional changelog)
              interop-kind-write  apply a records file to a window, session, timestamped or versioned store S
                             (String keys, Long values) so Kafka Streams writes A-S-changelog; window lines
                             key<TAB>start<TAB>value, session lines key<TAB>start<TAB>end<TAB>value, timestamped
                             and versioned lines key<TAB>timestamp<TAB>value; an empty value deletes
                --application-id A --store S --kind window|session|timestamped|versioned --records FILE
                [--retention-ms R (window, session: retention; versioned: history)] [--window-size-ms 1000]
              interop-kind-read   restore such a store S from A-S-changelog and dump it sorted (versioned: its
                             answers as of each time of --as-of for every key of --records)
                --application-id A --store S --kind ... --out FILE [--retention-ms R] [--window-size-ms 1000]
                [--records FILE --as-of T1,T2,...]
              runtime        one long-lived instance of the runtime benchmark's app (per-key count and sum in
                             store "totals", one 24-byte output record per input) until SIGTERM/SIGINT; prints
                             state/restored/started/standby/stopped lines instead of JSON
                --application-id A --input T --output T --state-dir D [--instance NAME (peer-<pid>)]
                [--guarantee at_least_once|exactly_once_v2] [--standbys 0] [--threads 1]
                [--session-ms 10000] [--commit-ms 30000 (100 under exactly_once_v2)] [--transaction-ms 10000]
                [--store inmemory|rocksdb] [--cache-bytes 10MiB (0: caching off)]
              remove-members remove every member from the group of application A at once (Kafka Streams
                             does not leave its group on close); prints how many and how long it took
                --application-id A
              runtime-feed   input for runtime: record i has key k<i % keys>, Long value (i % 13) + 1,
                             partition murmur2(key) % partitions
                --topic T --records N [--keys 100] [--first 0] [--partitions P (create T if missing)]

            Numbers take suffixes k, M, G (x1000) and KiB, MiB, GiB (x1024).
            """;

    public static void main(String[] argv) {
        if (argv.length == 0 || argv[0].equals("-h") || argv[0].equals("--help") || argv[0].equals("help")) {
            System.out.print(USAGE);
            System.exit(argv.length == 0 ? 2 : 0);
        }
        int rc = 0;
        try {
            Args a = new Args(argv, 1);
            Json result = switch (argv[0]) {
                case "write" -> Write.run(a);
                case "restore" -> Restore.run(a);
                case "interop-write" -> Interop.write(a);
                case "interop-read" -> Interop.read(a);
                case "interop-kind-write" -> KindsInterop.write(a);
                case "interop-kind-read" -> KindsInterop.read(a);
                case "runtime" -> StreamRuntime.run(a);
                case "runtime-feed" -> StreamRuntime.feed(a);
                case "remove-members" -> StreamRuntime.removeMembers(a);
                default -> throw new Args.UsageException("unknown command '" + argv[0] + "'");
            };
            if (result != null) { // runtime has printed its lines already
                System.out.println(result);
                System.out.flush();
            }
        } catch (Args.UsageException e) {
            System.err.println("peer: " + e.getMessage());
            System.err.print(USAGE);
            rc = 2;
        } catch (Throwable t) {
            System.err.println("peer: error: " + t);
            t.printStackTrace(System.err);
            rc = 1;
        }
        // Kafka client threads may linger; the result is out, so leave now.
        System.exit(rc);
    }
}
