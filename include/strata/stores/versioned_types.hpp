#pragma once
/// @file
/// @brief The vocabulary of versioned key-value stores: a key's version at a
/// time, the updates a versioned store takes, and what a read returns.
/// Times are milliseconds, as Kafka's record timestamps are.

#include <strata/core/hash.hpp>
#include <strata/core/memory_size.hpp>

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <boost/container_hash/hash.hpp>

namespace strata {

/// @brief One key's version at one time: the unit of state of a versioned
/// store (and of one changelog record: the key, with the time as the
/// record's timestamp).
template <class K>
struct versioned_key {
    K key;
    std::int64_t timestamp = 0;

    friend bool operator==(const versioned_key&, const versioned_key&) = default;
    friend auto operator<=>(const versioned_key&, const versioned_key&) = default;
    friend std::size_t hash_value(const versioned_key& v) {
        std::size_t h = default_hash_t<K>{}(v.key);
        boost::hash_combine(h, v.timestamp);
        return h;
    }
};

/// @brief key's value from `timestamp` on (until its next version).
template <class K, class V>
struct versioned_put {
    K key;
    V value;
    std::int64_t timestamp = 0;
};

/// @brief key has no value from `timestamp` on (until its next version): a
/// tombstone in its history.
template <class K>
struct versioned_erase {
    K key;
    std::int64_t timestamp = 0;
};

/// @brief A value read from a versioned store, with the span it was valid
/// for: from `valid_from` (its timestamp) to `valid_to` (the next version's,
/// exclusive), or to now when it is the latest.
template <class V>
struct versioned_value {
    V value;
    std::int64_t valid_from = 0;
    std::optional<std::int64_t> valid_to;

    friend bool operator==(const versioned_value&, const versioned_value&) = default;
};

/// @brief How much history a versioned store keeps.
struct versioned_store_options {
    /// How far behind the store's stream time (the latest timestamp it has
    /// been given) reads as of a time are answered, and puts accepted; older
    /// versions are dropped once a newer one is valid at stream time -
    /// history_retention. The latest version of a key is always kept. At
    /// least 0 (0: the latest versions only).
    std::chrono::milliseconds history_retention{0};
};

template <class K>
struct memory_size_of<versioned_key<K>> {
    static std::size_t of(const versioned_key<K>& v) noexcept { return sizeof(v) - sizeof(K) + memory_size(v.key); }
};

}  // namespace strata
