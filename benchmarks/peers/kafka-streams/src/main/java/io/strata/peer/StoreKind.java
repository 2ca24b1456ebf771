package io.strata.peer;

import java.util.Map;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/** The two key-value stores Kafka Streams ships, always with logging on. */
final class StoreKind {
    private StoreKind() {}

    static final String[] NAMES = {"inmemory", "rocksdb"};

    static <K, V> StoreBuilder<KeyValueStore<K, V>> builder(String kind, String name, Serde<K> keys, Serde<V> values,
                                                           boolean caching) {
        KeyValueBytesStoreSupplier supplier = switch (kind) {
            case "inmemory" -> Stores.inMemoryKeyValueStore(name);
            // The plain (not timestamped) RocksDB store, as a Processor API user gets it.
            case "rocksdb" -> Stores.persistentKeyValueStore(name);
            default -> throw new Args.UsageException("unknown store '" + kind + "'");
        };
        // Logging with the default changelog configs: Kafka Streams creates
        // <application.id>-<name>-changelog with cleanup.policy=compact.
        StoreBuilder<KeyValueStore<K, V>> b = Stores.keyValueStoreBuilder(supplier, keys, values)
                .withLoggingEnabled(Map.of());
        return caching ? b.withCachingEnabled() : b.withCachingDisabled();
    }
}
