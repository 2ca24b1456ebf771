#pragma once
/// @file
/// @brief `versioned_store`: an in-memory key-value store that keeps each
/// key's history for a retention period and answers "the value as of time
/// t", for one key or a range of keys; its changelog is Kafka Streams' own.

#include <strata/codec/versioned_codec.hpp>
#include <strata/core/error.hpp>
#include <strata/stores/detail/stream_time.hpp>
#include <strata/stores/versioned_types.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

/// @brief Each key's versions: a value (or a tombstone) from a time on. It
/// behaves as Kafka Streams' versioned key-value store
/// (Stores.persistentVersionedKeyValueStore):
///
/// - its stream time is the latest timestamp it has been given;
/// - a put or erase older than stream time - history_retention is ignored;
/// - `get(k)` is the latest version, `get_as_of(k, t)` the version valid at
///   t, none when t is older than stream time - history_retention (that far
///   back the history may be gone);
/// - a version is dropped once a newer one is valid at stream time -
///   history_retention; the latest version of a key stays;
/// - its changelog (through `logged`, with versioned_codec, the default) is
///   byte for byte a Kafka Streams versioned store's.
///
/// Beyond Kafka Streams: `range_as_of(lo, hi, t)`, every key in [lo, hi]
/// as of t, and `history(k)`.
///
/// Updates: `apply(versioned_put<K, V>)`, `apply(versioned_erase<K>)`;
/// through a decorated stack, `strata::query(stack, f)` reaches the reads.
template <class K, class V, class Compare = std::less<K>>
class versioned_store {
public:
    using codec_type = versioned_codec<K, V>;
    using versioned_key_type = K;
    using value_type = V;
    using read_type = versioned_value<V>;

    /// @throws usage_error a negative history retention
    versioned_store(std::string name, versioned_store_options o)
        : name_(std::move(name)), history_ms_(o.history_retention.count()) {
        if (history_ms_ < 0)
            throw usage_error("strata::versioned_store " + name_ + ": history_retention must not be negative, got " +
                              std::to_string(history_ms_) + " ms");
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    [[nodiscard]] std::int64_t history_retention_ms() const noexcept { return history_ms_; }
    /// @brief The latest timestamp given to the store; empty before the first update.
    [[nodiscard]] std::optional<std::int64_t> stream_time() const noexcept { return stream_time_; }

    /// @brief Whether a version at `timestamp` is older than the history the
    /// store keeps (a put or erase at it is ignored).
    [[nodiscard]] bool expired(std::int64_t timestamp) const noexcept {
        return stream_time_ && timestamp < detail::minus_saturating(*stream_time_, history_ms_);
    }

    void apply(const versioned_put<K, V>& u) { put_version(u.key, u.timestamp, std::optional<V>(u.value)); }
    void apply(const versioned_erase<K>& u) { put_version(u.key, u.timestamp, std::nullopt); }

    /// @brief key's latest value, if its latest version has one.
    [[nodiscard]] std::optional<read_type> get(const K& key) const {
        const auto at = versions_.find(key);
        if (at == versions_.end()) return std::nullopt;
        const auto& [from, value] = *at->second.rbegin();
        if (!value) return std::nullopt;
        return read_type{*value, from, std::nullopt};
    }

    /// @brief key's value as of `timestamp`: the version with the latest time
    /// at or before it, if that version has a value. None when `timestamp`
    /// is older than stream time - history_retention.
    [[nodiscard]] std::optional<read_type> get_as_of(const K& key, std::int64_t timestamp) const {
        if (expired(timestamp)) return std::nullopt;
        const auto at = versions_.find(key);
        if (at == versions_.end()) return std::nullopt;
        return as_of(at->second, timestamp);
    }

    /// @brief Every key in [lo, hi] that has a value as of `timestamp`, in
    /// key order, with that value.
    [[nodiscard]] std::vector<std::pair<K, read_type>> range_as_of(const K& lo, const K& hi,
                                                                 std::int64_t timestamp) const {
        std::vector<std::pair<K, read_type>> out;
        if (expired(timestamp) || versions_.key_comp()(hi, lo)) return out;
        for (auto it = versions_.lower_bound(lo); it != versions_.end() && !versions_.key_comp()(hi, it->first); ++it)
            if (auto v = as_of(it->second, timestamp)) out.emplace_back(it->first, std::move(*v));
        return out;
    }

    /// @brief key's versions the store holds that have a value, oldest first.
    [[nodiscard]] std::vector<read_type> history(const K& key) const {
        std::vector<read_type> out;
        const auto at = versions_.find(key);
        if (at == versions_.end()) return out;
        for (auto v = at->second.begin(); v != at->second.end(); ++v) {
            if (!v->second) continue;
            const auto next = std::next(v);
            out.push_back(read_type{*v->second, v->first,
                                    next == at->second.end() ? std::nullopt : std::optional(next->first)});
        }
        return out;
    }

    /// @brief The version of key at exactly `timestamp`: null when the store
    /// has none, else a value or nullopt (a tombstone). Valid until the
    /// store changes.
    [[nodiscard]] const std::optional<V>* find_version(const K& key, std::int64_t timestamp) const {
        const auto at = versions_.find(key);
        if (at == versions_.end()) return nullptr;
        const auto v = at->second.find(timestamp);
        return v == at->second.end() ? nullptr : &v->second;
    }

    /// @brief Every key whose latest version has a value, with it, in key order.
    [[nodiscard]] std::vector<std::pair<K, read_type>> all() const {
        std::vector<std::pair<K, read_type>> out;
        for (const auto& [key, versions] : versions_)
            if (const auto& [from, value] = *versions.rbegin(); value)
                out.emplace_back(key, read_type{*value, from, std::nullopt});
        return out;
    }

    /// @brief Every version the store holds, tombstones (nullopt) included,
    /// by key, then time: what its changelog's records restore.
    [[nodiscard]] std::vector<std::pair<versioned_key<K>, std::optional<V>>> all_versions() const {
        std::vector<std::pair<versioned_key<K>, std::optional<V>>> out;
        for (const auto& [key, versions] : versions_)
            for (const auto& [from, value] : versions) out.emplace_back(versioned_key<K>{key, from}, value);
        return out;
    }

    /// @brief How many versions the store holds (tombstones included).
    [[nodiscard]] std::size_t size() const noexcept {
        std::size_t n = 0;
        for (const auto& k : versions_) n += k.second.size();
        return n;
    }
    [[nodiscard]] bool empty() const noexcept { return versions_.empty(); }

private:
    using history_map = std::map<std::int64_t, std::optional<V>>;

    static std::optional<read_type> as_of(const history_map& h, std::int64_t timestamp) {
        auto after = h.upper_bound(timestamp);
        if (after == h.begin()) return std::nullopt;  // every version is later
        const auto v = std::prev(after);
        if (!v->second) return std::nullopt;
        return read_type{*v->second, v->first, after == h.end() ? std::nullopt : std::optional(after->first)};
    }

    void put_version(const K& key, std::int64_t timestamp, std::optional<V> value) {
        if (!stream_time_ || timestamp > *stream_time_) stream_time_ = timestamp;
        if (expired(timestamp)) return;
        auto& h = versions_[key];
        h.insert_or_assign(timestamp, std::move(value));
        prune(key, h);
    }

    /// Drops key's versions that no read can reach any more: those followed
    /// by a version valid at the oldest time a read may ask for; and the key
    /// itself when all it has left is an old tombstone.
    void prune(const K& key, history_map& h) {
        const std::int64_t oldest = detail::minus_saturating(*stream_time_, history_ms_);
        // The version valid at `oldest` is the last one at or before it.
        auto valid = h.upper_bound(oldest);
        if (valid != h.begin()) h.erase(h.begin(), std::prev(valid));
        if (h.size() == 1 && !h.begin()->second && h.begin()->first <= oldest) versions_.erase(key);
    }

    std::string name_;
    std::int64_t history_ms_;
    std::optional<std::int64_t> stream_time_;
    std::map<K, history_map, Compare> versions_;
};

}  // namespace strata
