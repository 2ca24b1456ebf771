#pragma once
/// @file
/// @brief `timestamped_kv_codec<K, V>`: the changelog codec of a timestamped
/// key-value store (values `timestamped<V>`), in Kafka Streams' format.
///
/// One record per key, as kv_codec writes it, except that the value's time
/// travels as the record's timestamp, not in its bytes: Kafka Streams'
/// ChangeLoggingTimestampedKeyValueBytesStore logs the plain value and the
/// time that way, and its restore puts them back together. So a Kafka
/// Streams timestamped store (String keys, Long values, say) and a strata
/// store of `timestamped<std::int64_t>` restore each other's changelogs.
/// A tombstone carries no time.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/timestamped.hpp>

#include <concepts>
#include <cstdint>
#include <span>
#include <utility>

namespace strata {

/// @brief The changelog codec of every kv store with keys K and values timestamped<V>.
template <class K, class V>
class timestamped_kv_codec {
    static constexpr bool has_serdes = detail::serdes::require_serde<K>() & detail::serdes::require_serde<V>();

public:
    using key_type = K;
    using mapped_type = timestamped<V>;

    template <class S>
        requires kv_store<S> && std::same_as<typename S::mapped_type, timestamped<V>>
    [[nodiscard]] std::span<const K, 1> touched(const S&, const put_op<K, timestamped<V>>& u) const noexcept {
        return std::span<const K, 1>(&u.key, 1);
    }
    template <class S>
        requires kv_store<S> && std::same_as<typename S::mapped_type, timestamped<V>>
    [[nodiscard]] std::span<const K, 1> touched(const S&, const erase_op<K>& u) const noexcept {
        return std::span<const K, 1>(&u.key, 1);
    }

    void write_key(const K& k, byte_buffer& out) const { encode(k, out); }

    /// @brief The record value of a value the logged layer holds: the plain value.
    void write_mapped(const timestamped<V>& v, byte_buffer& out) const { encode(v.value, out); }
    /// @brief The record's timestamp for that value.
    [[nodiscard]] std::int64_t mapped_timestamp(const timestamped<V>& v) const noexcept { return v.timestamp; }

    template <class S>
        requires kv_store<S> && std::same_as<typename S::mapped_type, timestamped<V>>
    [[nodiscard]] bool write_value(const S& s, const K& k, byte_buffer& out) const {
        const auto v = s.get(k);
        if (!v) return false;
        encode(v->value, out);
        return true;
    }
    /// @brief The time of k's value, for its record (none once k is gone).
    template <class S>
        requires kv_store<S> && std::same_as<typename S::mapped_type, timestamped<V>>
    [[nodiscard]] std::int64_t record_timestamp(const S& s, const K& k) const {
        const auto v = s.get(k);
        return v ? v->timestamp : no_timestamp;
    }

    /// @brief Puts the record's value with the record's timestamp; a tombstone erases.
    /// @throws serde_error the record's key or value is not a K or a V
    template <class S>
        requires kv_store<S> && std::same_as<typename S::mapped_type, timestamped<V>>
    void restore(S& s, const record_view& r) const {
        K k = decode<K>(r.key);
        if (r.is_tombstone()) static_cast<void>(s.erase(k));
        else s.put(k, timestamped<V>{decode<V>(*r.value), r.timestamp});
    }
};

}  // namespace strata
