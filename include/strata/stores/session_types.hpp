#pragma once
/// @file
/// @brief The vocabulary of session stores: a key's session, the updates a
/// session store takes, and how long it keeps its sessions. Times are
/// milliseconds, as Kafka's record timestamps are.

#include <strata/core/hash.hpp>
#include <strata/core/memory_size.hpp>
#include <strata/stores/window_types.hpp>

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>

#include <boost/container_hash/hash.hpp>

namespace strata {

/// @brief One key's session: the times of its first and last records, both
/// inclusive (a session of one record starts and ends at its time). The
/// unit of state of a session store, and the key of one changelog record.
template <class K>
struct session_window {
    K key;
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;  ///< >= start_ms

    friend bool operator==(const session_window&, const session_window&) = default;
    friend auto operator<=>(const session_window&, const session_window&) = default;
    friend std::size_t hash_value(const session_window& s) {
        std::size_t h = default_hash_t<K>{}(s.key);
        boost::hash_combine(h, s.start_ms);
        boost::hash_combine(h, s.end_ms);
        return h;
    }
};

/// @brief Sets the value (the aggregate) of one key's session.
template <class K, class V>
struct session_put {
    session_window<K> session;
    V value;
};

/// @brief Removes one key's session (Kafka Streams' remove, as when a
/// session merges into a longer one).
template <class K>
struct session_erase {
    session_window<K> session;
};

/// @brief A session and its value, as a session store's reads yield them.
template <class K, class V>
struct session_entry {
    session_window<K> session;
    V value;
    friend bool operator==(const session_entry&, const session_entry&) = default;
};

/// @brief How long a session store keeps its sessions.
struct session_store_options {
    /// How far behind the store's stream time (the latest session end it has
    /// seen) a session's end may be and the session still kept; older
    /// sessions are dropped, and a put of one is ignored. Positive.
    std::chrono::milliseconds retention{0};
};

template <class K>
struct memory_size_of<session_window<K>> {
    static std::size_t of(const session_window<K>& s) noexcept { return sizeof(s) - sizeof(K) + memory_size(s.key); }
};

}  // namespace strata
