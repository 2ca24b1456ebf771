#pragma once
/// @file
/// @brief The vocabulary of window stores: a key's window, the updates a
/// window store takes, and how long it keeps its windows. Times are
/// milliseconds, as Kafka's record timestamps are.

#include <strata/core/hash.hpp>
#include <strata/core/memory_size.hpp>

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>

#include <boost/container_hash/hash.hpp>

namespace strata {

/// @brief One key's window: the unit of state of a window store (and the key
/// of one changelog record).
template <class K>
struct windowed {
    K key;
    std::int64_t start_ms = 0;  ///< the window's start; its end is start + the store's window size

    friend bool operator==(const windowed&, const windowed&) = default;
    friend auto operator<=>(const windowed&, const windowed&) = default;
    friend std::size_t hash_value(const windowed& w) {
        std::size_t h = default_hash_t<K>{}(w.key);
        boost::hash_combine(h, w.start_ms);
        return h;
    }
};

/// @brief Sets the value of one key's window.
template <class K, class V>
struct window_put {
    windowed<K> window;
    V value;
};

/// @brief Removes one key's window (Kafka Streams' put of a null value).
template <class K>
struct window_erase {
    windowed<K> window;
};

/// @brief A window and its value, as a window store's range reads yield them.
template <class K, class V>
struct window_entry {
    windowed<K> window;
    V value;
    friend bool operator==(const window_entry&, const window_entry&) = default;
};

/// @brief How a window store is shaped. Kafka Streams asks the same of its
/// window stores (Stores.inMemoryWindowStore): the retention must cover at
/// least one window.
struct window_store_options {
    std::chrono::milliseconds window_size{0};  ///< each window's length, > 0
    /// How far behind the store's stream time (the latest window start it
    /// has seen) a window is still kept; older windows are dropped, and a
    /// put into one is ignored. At least window_size.
    std::chrono::milliseconds retention{0};
};

template <class K>
struct memory_size_of<windowed<K>> {
    static std::size_t of(const windowed<K>& w) noexcept { return sizeof(w) - sizeof(K) + memory_size(w.key); }
};

}  // namespace strata
