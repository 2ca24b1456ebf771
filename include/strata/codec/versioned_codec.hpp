#pragma once
/// @file
/// @brief `versioned_codec<K, V>`: the changelog codec of a versioned
/// key-value store, in Kafka Streams' format.
///
/// One record per key and version: the record key is `encode(k)`, the
/// record value `encode(v)` (a tombstone for a version without a value),
/// and the version's time is the record's timestamp, as Kafka Streams'
/// ChangeLoggingVersionedKeyValueBytesStore writes it. A compacted
/// changelog keeps only the latest record of a key, so the topic is
/// compacted only after the history's retention (versioned_changelog_configs
/// in kafka/admin.hpp); restore puts every record it reads as a version at
/// its time, and a version older than the retention allows is dropped, as
/// in Kafka Streams.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/encode.hpp>
#include <strata/stores/versioned_types.hpp>

#include <cstdint>
#include <optional>
#include <span>

namespace strata {

namespace detail {
/// S keeps versions of V per key K: a versioned_store, or any store with
/// the same reads and updates.
template <class S, class K, class V>
concept versioned_codec_store = state_store<S> && requires(S& s, const S& cs, const K& k, std::int64_t t) {
    { cs.find_version(k, t) } -> std::same_as<const std::optional<V>*>;
    { cs.expired(t) } -> std::convertible_to<bool>;
    s.apply(versioned_put<K, V>{k, std::declval<V>(), t});
    s.apply(versioned_erase<K>{k, t});
};
}  // namespace detail

/// @brief The changelog codec of versioned stores with keys K and values V.
template <class K, class V>
class versioned_codec {
    static constexpr bool has_serdes = detail::serdes::require_serde<K>() & detail::serdes::require_serde<V>();

public:
    /// @brief A unit of state is one key's version at one time.
    using key_type = versioned_key<K>;

    /// @brief A put or erase makes one version, unless it is older than the
    /// history the store keeps (the store ignores it: nothing to log).
    /// @returns a range of at most one key, a copy (the update names the
    ///          key and the time apart)
    template <class S>
        requires detail::versioned_codec_store<S, K, V>
    [[nodiscard]] auto touched(const S& s, const versioned_put<K, V>& u) const {
        return one_or_none{s.expired(u.timestamp) ? std::nullopt : std::optional(key_type{u.key, u.timestamp})};
    }
    template <class S>
        requires detail::versioned_codec_store<S, K, V>
    [[nodiscard]] auto touched(const S& s, const versioned_erase<K>& u) const {
        return one_or_none{s.expired(u.timestamp) ? std::nullopt : std::optional(key_type{u.key, u.timestamp})};
    }

    void write_key(const key_type& v, byte_buffer& out) const { encode(v.key, out); }

    /// @returns false when the version is a tombstone (or is gone): the record is a tombstone
    template <class S>
        requires detail::versioned_codec_store<S, K, V>
    [[nodiscard]] bool write_value(const S& s, const key_type& v, byte_buffer& out) const {
        const std::optional<V>* version = s.find_version(v.key, v.timestamp);
        if (version == nullptr || !version->has_value()) return false;
        encode(**version, out);
        return true;
    }
    /// @brief The record's timestamp: the version's time.
    template <class S>
        requires detail::versioned_codec_store<S, K, V>
    [[nodiscard]] std::int64_t record_timestamp(const S&, const key_type& v) const noexcept {
        return v.timestamp;
    }

    /// @brief Puts the record as a version at its timestamp (a tombstone: a
    /// version without a value).
    /// @throws serde_error the record has no timestamp, or its key or value
    ///         is not a K or a V
    template <class S>
        requires detail::versioned_codec_store<S, K, V>
    void restore(S& s, const record_view& r) const {
        if (!r.has_timestamp())
            byte_reader(r.key, "versioned store record").fail("has no timestamp: a version needs its time");
        K k = decode<K>(r.key);
        if (r.is_tombstone()) s.apply(versioned_erase<K>{std::move(k), r.timestamp});
        else s.apply(versioned_put<K, V>{std::move(k), decode<V>(*r.value), r.timestamp});
    }

private:
    /// A range of the one key, or of none.
    struct one_or_none {
        std::optional<key_type> k;
        [[nodiscard]] const key_type* begin() const noexcept { return k ? &*k : nullptr; }
        [[nodiscard]] const key_type* end() const noexcept { return k ? &*k + 1 : nullptr; }
    };
};

}  // namespace strata
