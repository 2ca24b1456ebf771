#pragma once
/// @file
/// @brief `timestamped<V>`: a value and the time of the record that wrote
/// it, the value type of a timestamped key-value store (Kafka Streams'
/// ValueAndTimestamp).

#include <strata/core/bytes.hpp>
#include <strata/core/memory_size.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace strata {

/// @brief A value and its time (ms since the epoch, or no_timestamp).
///
/// A key-value store whose values are `timestamped<V>` (any of them:
/// `hash_map_store<K, timestamped<V>>`, `ordered_map_store`, ...) is a
/// timestamped key-value store: `logged` uses timestamped_kv_codec for it,
/// whose changelog is Kafka Streams' timestamped store's (the plain value,
/// with the time as the record's timestamp).
template <class V>
struct timestamped {
    using value_type = V;
    V value;
    std::int64_t timestamp = no_timestamp;

    friend bool operator==(const timestamped&, const timestamped&) = default;
};

template <class V>
timestamped(V, std::int64_t) -> timestamped<V>;

/// @brief Whether T is a timestamped<V>.
template <class T>
inline constexpr bool is_timestamped_v = false;
template <class V>
inline constexpr bool is_timestamped_v<timestamped<V>> = true;

template <class V>
struct memory_size_of<timestamped<V>> {
    static std::size_t of(const timestamped<V>& t) noexcept {
        return sizeof(t) - sizeof(V) + memory_size(t.value);
    }
};

}  // namespace strata
