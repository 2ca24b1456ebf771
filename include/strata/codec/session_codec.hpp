#pragma once
/// @file
/// @brief `session_codec<K, V>`: the changelog codec of a session store, in
/// Kafka Streams' format.
///
/// One record per key and session: the record key is the key's `encode(k)`,
/// the session's end (8 bytes) and start (8 bytes), big-endian, as Kafka
/// Streams' ChangeLoggingSessionBytesStore writes it; the record value is
/// `encode(v)`, or a tombstone once the session is erased (merged into a
/// longer one). With a String key serde, a Long value serde and the same
/// store name, a Kafka Streams application restores the changelog strata
/// writes, and the other way round.

#include <strata/codec/kafka_streams_keys.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/session_types.hpp>

#include <cstdint>
#include <span>

namespace strata {

namespace detail {
/// S keeps values of V per key K and session: a session_store, or any store
/// with the same reads and updates.
template <class S, class K, class V>
concept session_codec_store = state_store<S> && requires(S& s, const S& cs, const session_window<K>& w,
                                                         std::int64_t t) {
    { cs.find(w) } -> std::same_as<const V*>;
    { cs.expired(t) } -> std::convertible_to<bool>;
    s.apply(session_put<K, V>{w, std::declval<V>()});
    s.apply(session_erase<K>{w});
};
}  // namespace detail

/// @brief The changelog codec of session stores with keys K and values V.
template <class K, class V>
class session_codec {
    static constexpr bool has_serdes = detail::serdes::require_serde<K>() & detail::serdes::require_serde<V>();

public:
    /// @brief A unit of state is one key's session.
    using key_type = session_window<K>;

    /// @brief A put or erase changes its own session, unless the session has
    /// expired (the store ignores it, so there is nothing to log).
    template <class S>
        requires detail::session_codec_store<S, K, V>
    [[nodiscard]] std::span<const key_type> touched(const S& s, const session_put<K, V>& u) const noexcept {
        return {&u.session, s.expired(u.session.end_ms) ? 0u : 1u};
    }
    template <class S>
        requires detail::session_codec_store<S, K, V>
    [[nodiscard]] std::span<const key_type> touched(const S& s, const session_erase<K>& u) const noexcept {
        return {&u.session, s.expired(u.session.end_ms) ? 0u : 1u};
    }

    /// @brief Appends the record key of s: Kafka Streams' session store key.
    void write_key(const key_type& s, byte_buffer& out) const {
        encode(s.key, out);
        kafka_streams::append_session_suffix(out, s.start_ms, s.end_ms);
    }

    /// @brief Appends the value of session s, read from the store.
    /// @returns false if the store has no such session: the record is a tombstone
    template <class S>
        requires detail::session_codec_store<S, K, V>
    [[nodiscard]] bool write_value(const S& s, const key_type& w, byte_buffer& out) const {
        const V* v = s.find(w);
        if (v == nullptr) return false;
        encode(*v, out);
        return true;
    }

    /// @brief Re-creates one session: a value is put, a tombstone erases. The
    /// store drops what has expired by the time the record comes.
    /// @throws serde_error the record key is shorter than the session suffix,
    ///         names a session that ends before it starts, or the key or
    ///         value is not a K or a V
    template <class S>
        requires detail::session_codec_store<S, K, V>
    void restore(S& s, const record_view& r) const {
        const kafka_streams::session_key sk = kafka_streams::decode_session_key(r.key);
        session_window<K> w{decode<K>(sk.key), sk.start_ms, sk.end_ms};
        if (r.is_tombstone()) s.apply(session_erase<K>{std::move(w)});
        else s.apply(session_put<K, V>{std::move(w), decode<V>(*r.value)});
    }
};

}  // namespace strata
