#pragma once
/// @file
/// @brief The options and statistics of the cache layer.

#include <cstddef>
#include <cstdint>

namespace strata {

/// @brief Whether the cache answers reads (kv stores).
enum class read_caching {
    /// Only over a persistent store. Over an in-memory store a read of the
    /// store beneath costs no more than the cache's own lookup, and the store
    /// is always current (the cache writes through), so caching reads would
    /// only add work: an entry per key read, and evictions.
    automatic,
    on,   ///< always: reads fill the cache and count hits and misses
    off,  ///< never: reads go to the store beneath and count nothing
};

/// @brief Options of the cache layer.
struct cached_options {
    /// Bound on the bytes the cache holds (keys, cached values, bookkeeping).
    /// Kafka Streams' default statestore.cache.max.bytes is 10 MiB.
    std::size_t max_bytes = 10 * 1024 * 1024;
    /// Whether get() is answered from the cache.
    read_caching reads = read_caching::automatic;
};

/// @brief What the cache has done since it was built.
struct cache_stats {
    std::uint64_t hits = 0;             ///< reads answered from the cache
    std::uint64_t misses = 0;           ///< reads that went to the inner store
    std::uint64_t evictions = 0;        ///< entries dropped to stay within max_bytes
    std::uint64_t dirty_evictions = 0;  ///< of those, ones that first wrote their record
    std::uint64_t flushed_records = 0;  ///< records written by flush()
    /// Puts and erases that passed the cache by, writing their record at
    /// once: first writes of a key while the cache was not coalescing (see
    /// cached_store).
    std::uint64_t bypassed = 0;
    std::size_t entries = 0;
    std::size_t bytes = 0;

    [[nodiscard]] double hit_ratio() const noexcept {
        const auto reads = hits + misses;
        return reads == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(reads);
    }
};

}  // namespace strata
