#pragma once
/// @file
/// @brief `window_store`: an in-memory store of values per key and time
/// window, with retention, whose changelog is Kafka Streams' own.

#include <strata/codec/window_codec.hpp>
#include <strata/core/error.hpp>
#include <strata/stores/detail/stream_time.hpp>
#include <strata/stores/window_types.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

/// @brief Values per key and window, kept for a retention period; what a
/// windowed aggregation (time_windows.hpp) writes into. It behaves as Kafka
/// Streams' in-memory window store without duplicates:
///
/// - its stream time is the latest window start it has been given (by a
///   put or an erase, stored or not);
/// - a window that starts at or before stream time - retention has expired:
///   it is dropped, a put into it is ignored, and reads do not see it;
/// - its changelog (through `logged`, with window_codec, the default) is
///   byte for byte a Kafka Streams window store's, so either can restore
///   the other's, and a record of an expired window is not restored.
///
/// Updates: `apply(window_put<K, V>)`, `apply(window_erase<K>)`. Reads:
/// `fetch(key, start)`, `fetch(key, from, to)`, `fetch_all(from, to)`,
/// `all()`; through a decorated stack, `strata::query(stack, f)` reaches them.
///
/// Windows live in a map by start time, each holding a map by key, so
/// expiring is dropping the oldest starts, and a read by key over a time
/// range looks the key up once per window start in the range.
template <class K, class V, class Compare = std::less<K>>
class window_store {
public:
    using codec_type = window_codec<K, V>;
    using window_key_type = K;
    using value_type = V;
    using entry_type = window_entry<K, V>;

    /// @throws usage_error window_size is not positive or retention is shorter than it
    window_store(std::string name, window_store_options o)
        : name_(std::move(name)), size_ms_(o.window_size.count()), retention_ms_(o.retention.count()) {
        if (size_ms_ <= 0)
            throw usage_error("strata::window_store " + name_ + ": window_size must be positive, got " +
                              std::to_string(size_ms_) + " ms");
        if (retention_ms_ < size_ms_)
            throw usage_error("strata::window_store " + name_ + ": retention (" + std::to_string(retention_ms_) +
                              " ms) must be at least the window size (" + std::to_string(size_ms_) +
                              " ms), or windows would expire before they close");
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    [[nodiscard]] std::int64_t window_size_ms() const noexcept { return size_ms_; }
    [[nodiscard]] std::int64_t retention_ms() const noexcept { return retention_ms_; }
    /// @brief The latest window start given to the store; empty before the first update.
    [[nodiscard]] std::optional<std::int64_t> stream_time() const noexcept { return stream_time_; }

    /// @brief Whether a window starting at `start_ms` is past retention at
    /// the store's stream time (an update to it would be ignored).
    [[nodiscard]] bool expired(std::int64_t start_ms) const noexcept {
        return stream_time_ && start_ms <= detail::minus_saturating(*stream_time_, retention_ms_);
    }

    void apply(const window_put<K, V>& u) {
        if (!advance(u.window.start_ms)) return;
        windows_[u.window.start_ms].insert_or_assign(u.window.key, u.value);
    }
    void apply(window_put<K, V>&& u) {
        if (!advance(u.window.start_ms)) return;
        windows_[u.window.start_ms].insert_or_assign(std::move(u.window.key), std::move(u.value));
    }
    void apply(const window_erase<K>& u) {
        if (!advance(u.window.start_ms)) return;
        const auto at = windows_.find(u.window.start_ms);
        if (at == windows_.end()) return;
        at->second.erase(u.window.key);
        if (at->second.empty()) windows_.erase(at);
    }

    /// @brief The value of key's window starting at `start_ms`, if the store has one.
    [[nodiscard]] std::optional<V> fetch(const K& key, std::int64_t start_ms) const {
        const V* v = find(key, start_ms);
        if (v == nullptr) return std::nullopt;
        return *v;
    }
    /// @brief A pointer to the value of key's window at `start_ms`, or null;
    /// valid until the store changes.
    [[nodiscard]] const V* find(const K& key, std::int64_t start_ms) const {
        const auto at = windows_.find(start_ms);
        if (at == windows_.end()) return nullptr;
        const auto it = at->second.find(key);
        return it == at->second.end() ? nullptr : &it->second;
    }
    /// @brief key's windows that start in [from_ms, to_ms], by start time.
    [[nodiscard]] std::vector<std::pair<std::int64_t, V>> fetch(const K& key, std::int64_t from_ms,
                                                              std::int64_t to_ms) const {
        std::vector<std::pair<std::int64_t, V>> out;
        for (auto w = windows_.lower_bound(from_ms); w != windows_.end() && w->first <= to_ms; ++w) {
            const auto it = w->second.find(key);
            if (it != w->second.end()) out.emplace_back(w->first, it->second);
        }
        return out;
    }
    /// @brief Every key's windows that start in [from_ms, to_ms], by start
    /// time, then key.
    [[nodiscard]] std::vector<entry_type> fetch_all(std::int64_t from_ms, std::int64_t to_ms) const {
        std::vector<entry_type> out;
        for (auto w = windows_.lower_bound(from_ms); w != windows_.end() && w->first <= to_ms; ++w)
            for (const auto& [key, value] : w->second) out.push_back(entry_type{{key, w->first}, value});
        return out;
    }
    /// @brief Every window the store holds, by start time, then key.
    [[nodiscard]] std::vector<entry_type> all() const {
        return fetch_all(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    }

    /// @brief How many (key, window) values the store holds.
    [[nodiscard]] std::size_t size() const noexcept {
        std::size_t n = 0;
        for (const auto& w : windows_) n += w.second.size();
        return n;
    }
    [[nodiscard]] bool empty() const noexcept { return windows_.empty(); }

private:
    /// Moves stream time to `start_ms` if later and drops what expired.
    /// @returns whether a window at `start_ms` is live
    bool advance(std::int64_t start_ms) {
        if (!stream_time_ || start_ms > *stream_time_) {
            stream_time_ = start_ms;
            // Windows starting at or before this have expired.
            const std::int64_t last_expired = detail::minus_saturating(start_ms, retention_ms_);
            windows_.erase(windows_.begin(), windows_.upper_bound(last_expired));
        }
        return !expired(start_ms);
    }

    std::string name_;
    std::int64_t size_ms_;
    std::int64_t retention_ms_;
    std::optional<std::int64_t> stream_time_;
    std::map<std::int64_t, std::map<K, V, Compare>> windows_;
};

}  // namespace strata
