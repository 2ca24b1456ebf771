#pragma once
/// @file
/// @brief `window_codec<K, V>`: the changelog codec of a window store, in
/// Kafka Streams' format.
///
/// One record per key and window: the record key is the key's `encode(k)`,
/// the window's start (8 bytes) and a sequence number of 0 (4 bytes), all
/// big-endian, as Kafka Streams' ChangeLoggingWindowBytesStore writes it for
/// a store without duplicates; the record value is `encode(v)`, or a
/// tombstone once the window is erased. With a String key serde, a Long
/// value serde and the same store name, a Kafka Streams application restores
/// the changelog strata writes, and the other way round.

#include <strata/codec/kafka_streams_keys.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/window_types.hpp>

#include <cstdint>
#include <span>

namespace strata {

namespace detail {
/// S keeps values of V per key K and window: a window_store, or any store
/// with the same reads and updates.
template <class S, class K, class V>
concept window_codec_store = state_store<S> && requires(S& s, const S& cs, const K& k, std::int64_t t) {
    { cs.find(k, t) } -> std::same_as<const V*>;
    { cs.expired(t) } -> std::convertible_to<bool>;
    s.apply(window_put<K, V>{{k, t}, std::declval<V>()});
    s.apply(window_erase<K>{{k, t}});
};
}  // namespace detail

/// @brief The changelog codec of window stores with keys K and values V.
template <class K, class V>
class window_codec {
    static constexpr bool has_serdes = detail::serdes::require_serde<K>() & detail::serdes::require_serde<V>();

public:
    /// @brief A unit of state is one key's window.
    using key_type = windowed<K>;

    /// @brief A put changes its own window, unless the window has expired
    /// (the store ignores it, so there is nothing to log).
    template <class S>
        requires detail::window_codec_store<S, K, V>
    [[nodiscard]] std::span<const key_type> touched(const S& s, const window_put<K, V>& u) const noexcept {
        return {&u.window, s.expired(u.window.start_ms) ? 0u : 1u};
    }
    template <class S>
        requires detail::window_codec_store<S, K, V>
    [[nodiscard]] std::span<const key_type> touched(const S& s, const window_erase<K>& u) const noexcept {
        return {&u.window, s.expired(u.window.start_ms) ? 0u : 1u};
    }

    /// @brief Appends the record key of w: Kafka Streams' window store key.
    void write_key(const key_type& w, byte_buffer& out) const {
        encode(w.key, out);
        kafka_streams::append_window_suffix(out, w.start_ms);
    }

    /// @brief Appends the value of w, read from the store.
    /// @returns false if the store has no such window: the record is a tombstone
    template <class S>
        requires detail::window_codec_store<S, K, V>
    [[nodiscard]] bool write_value(const S& s, const key_type& w, byte_buffer& out) const {
        const V* v = s.find(w.key, w.start_ms);
        if (v == nullptr) return false;
        encode(*v, out);
        return true;
    }

    /// @brief Re-creates one window: a value is put, a tombstone erases. The
    /// store drops what has expired by the time the record comes (so a
    /// restore keeps what the retention still holds, as Kafka Streams does).
    /// @throws serde_error the record key is shorter than the window suffix,
    ///         or the key or value is not a K or a V
    template <class S>
        requires detail::window_codec_store<S, K, V>
    void restore(S& s, const record_view& r) const {
        const kafka_streams::window_key wk = kafka_streams::decode_window_key(r.key);
        windowed<K> w{decode<K>(wk.key), wk.start_ms};
        if (r.is_tombstone()) s.apply(window_erase<K>{std::move(w)});
        else s.apply(window_put<K, V>{std::move(w), decode<V>(*r.value)});
    }
};

}  // namespace strata
