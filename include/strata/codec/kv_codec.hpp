#pragma once
/// @file
/// @brief `kv_codec<K, V>`: the changelog codec of a key-value store, derived
/// from the serdes of its key and value.
///
/// One record per key: the record key is `encode(k)`, the record value is
/// `encode(v)` of the key's current value, or a tombstone once the key is
/// gone. Keys and values are written as whole records (see
/// serde/encode.hpp), so a `std::string` key is its raw bytes and a
/// `std::int64_t` key is 8 bytes big-endian, exactly as Kafka's
/// StringSerializer and LongSerializer write them: a Kafka Streams
/// application with the same serdes can read the changelog, and the other
/// way round.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/encode.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

namespace strata {

namespace detail {
/// S is a kv store whose keys are K and whose values are V.
template <class S, class K, class V>
concept kv_codec_store = kv_store<S> && std::same_as<typename S::key_type, K> &&
                      std::same_as<typename S::mapped_type, V>;
}  // namespace detail

/// @brief The changelog codec of every kv store with keys K and values V.
///
/// Its members are templates over the store, so one codec serves a bare
/// store and any store decorated around it alike. It holds no state.
/// @tparam K the key type; needs a serde
/// @tparam V the value type; needs a serde
template <class K, class V>
class kv_codec {
    // A missing serde is reported in one place, once per type however many
    // members use it (for a Hana struct: the field without one); the members
    // below compile to nothing for such a type, adding no second error.
    static constexpr bool has_serdes = detail::serdes::require_serde<K>() & detail::serdes::require_serde<V>();

public:
    /// @brief A unit of state is one key.
    using key_type = K;

    /// @brief A put changes exactly its own key.
    /// @returns a view of `u.key`, valid as long as u is
    template <class S>
        requires detail::kv_codec_store<S, K, V>
    [[nodiscard]] std::span<const K, 1> touched(const S&, const put_op<K, V>& u) const noexcept {
        return std::span<const K, 1>(&u.key, 1);
    }

    /// @brief An erase changes exactly its own key (whether or not it was there:
    /// a tombstone for a missing key is harmless and keeps the codec blind to
    /// the store's contents).
    /// @returns a view of `u.key`, valid as long as u is
    template <class S>
        requires detail::kv_codec_store<S, K, V>
    [[nodiscard]] std::span<const K, 1> touched(const S&, const erase_op<K>& u) const noexcept {
        return std::span<const K, 1>(&u.key, 1);
    }

    /// @brief Appends the record key of k: `encode(k)`.
    void write_key(const K& k, byte_buffer& out) const { encode(k, out); }

    /// @brief Appends v as a record value. The logged and cached layers call
    /// it when they already hold a key's current value (just put, or
    /// cached), to skip reading it back from the store.
    void write_mapped(const V& v, byte_buffer& out) const { encode(v, out); }

    /// @name Building a record without a buffer
    /// The logged layer builds each part of a record (key, value) the
    /// cheapest way its type allows: a type whose encoding is its own bytes
    /// (`std::string`, `byte_buffer`: see serde/encode.hpp) is handed to the
    /// log as a view of itself, with no copy; a type of fixed width
    /// (integers, floats, enumerations) is written to an array on the stack;
    /// any other type is encoded into a buffer the layer reuses.
    /// @{
    static constexpr bool key_is_raw = detail::raw_encoding<K>;
    static constexpr bool mapped_is_raw = detail::raw_encoding<V>;
    static constexpr bool key_is_fixed = fixed_width_serializable<K>;
    static constexpr bool mapped_is_fixed = fixed_width_serializable<V>;
    static constexpr std::size_t key_width = detail::fixed_size_of<K>();
    static constexpr std::size_t value_width = detail::fixed_size_of<V>();
    /// @returns the record key of k: k's own bytes, valid as long as k is
    [[nodiscard]] static bytes_view key_bytes(const K& k) noexcept
        requires key_is_raw
    {
        return detail::raw_bytes_of(k);
    }
    /// @returns the record value of v: v's own bytes, valid as long as v is
    [[nodiscard]] static bytes_view mapped_bytes(const V& v) noexcept
        requires mapped_is_raw
    {
        return detail::raw_bytes_of(v);
    }
    static void write_key_fixed(const K& k, std::byte* out) noexcept
        requires key_is_fixed
    {
        serde<K>::write_fixed(k, out);
    }
    static void write_mapped_fixed(const V& v, std::byte* out) noexcept
        requires mapped_is_fixed
    {
        serde<V>::write_fixed(v, out);
    }
    /// @}

    /// @brief Appends the current value of k, read from the store.
    /// @returns false if k is absent: the record is a tombstone
    template <class S>
        requires detail::kv_codec_store<S, K, V>
    [[nodiscard]] bool write_value(const S& s, const K& k, byte_buffer& out) const {
        const auto v = s.get(k);
        if (!v) return false;
        encode(*v, out);
        return true;
    }

    /// @brief A hint, before restore(s, r) for each of `records`, that their
    /// keys are restored soon, for a store that can start fetching the
    /// memory of several keys at once (`prefetch(std::span<const K>)`).
    /// A key that does not decode is left for restore() to report.
    template <class S>
        requires detail::kv_codec_store<S, K, V> && std::default_initializable<K> &&
                 requires(const S& s, std::span<const K> keys) { s.prefetch(keys); }
    void prefetch(const S& s, std::span<const record_view> records) const noexcept {
        constexpr std::size_t step = 16;
        std::array<K, step> keys{};
        for (std::size_t first = 0; first < records.size(); first += step) {
            const std::size_t n = std::min(step, records.size() - first);
            std::size_t decoded = 0;
            try {
                for (; decoded < n; ++decoded) keys[decoded] = decode<K>(records[first + decoded].key);
            } catch (...) {  // only a hint: announce those before it
            }
            s.prefetch(std::span<const K>(keys.data(), decoded));
        }
    }

    /// @brief Re-creates one key during restore: a value is put, a tombstone erases.
    /// @throws serde_error if the record's key or value is not a K or a V
    template <class S>
        requires detail::kv_codec_store<S, K, V>
    void restore(S& s, const record_view& r) const {
        K k = decode<K>(r.key);
        if (r.is_tombstone()) {
            static_cast<void>(s.erase(k));  // false (already absent) is fine
        } else if constexpr (mapped_is_raw && requires { s.value_for_overwrite(std::move(k)); }) {
            // A value whose encoding is its raw bytes is assigned from the
            // record's bytes into the storage the key's value has already:
            // no new value per record, and nothing that can fail.
            const bytes_view v = *r.value;
            V& dst = s.value_for_overwrite(std::move(k));
            if constexpr (std::same_as<V, std::string>) dst.assign(as_chars(v));
            else dst.assign(v.begin(), v.end());
        } else if constexpr (requires { s.put(std::move(k), decode<V>(*r.value)); }) {
            s.put(std::move(k), decode<V>(*r.value));  // decoded once, moved in: no copy per record
        } else {
            s.put(k, decode<V>(*r.value));
        }
    }
};

/// @brief The kv_codec matching a kv store's key and value types.
template <kv_store S>
using kv_codec_of = kv_codec<typename S::key_type, typename S::mapped_type>;

}  // namespace strata
