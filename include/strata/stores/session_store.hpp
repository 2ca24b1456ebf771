#pragma once
/// @file
/// @brief `session_store`: an in-memory store of values per key and session,
/// with retention, whose changelog is Kafka Streams' own.

#include <strata/codec/session_codec.hpp>
#include <strata/core/error.hpp>
#include <strata/stores/detail/stream_time.hpp>
#include <strata/stores/session_types.hpp>

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

/// @brief Values per key and session, kept for a retention period; what a
/// session aggregation (windowed_aggregation.hpp) writes into. It behaves as
/// Kafka Streams' in-memory session store:
///
/// - its stream time is the latest session end it has been given (by a put
///   or an erase, stored or not);
/// - a session that ends at or before stream time - retention has expired:
///   it is dropped, a put of it is ignored, and reads do not see it;
/// - its changelog (through `logged`, with session_codec, the default) is
///   byte for byte a Kafka Streams session store's, so either can restore
///   the other's, and a record of an expired session is not restored.
///
/// Updates: `apply(session_put<K, V>)`, `apply(session_erase<K>)`. Reads:
/// `fetch_session(s)`, `find_sessions(key, earliest_end, latest_start)`,
/// `fetch(key)`, `all()`; through a decorated stack, `strata::query(stack, f)`
/// reaches them.
///
/// Sessions live in a map per key, by end then start, so the sessions of
/// one key near a time (what each record of a session aggregation asks)
/// are found without looking at other keys'; a map from end times to the
/// keys with a session ending then tells what to drop as stream time moves.
template <class K, class V, class Compare = std::less<K>>
class session_store {
public:
    using codec_type = session_codec<K, V>;
    using session_key_type = K;
    using value_type = V;
    using entry_type = session_entry<K, V>;

    /// @throws usage_error the retention is not positive
    session_store(std::string name, session_store_options o)
        : name_(std::move(name)), retention_ms_(o.retention.count()) {
        if (retention_ms_ <= 0)
            throw usage_error("strata::session_store " + name_ + ": retention must be positive, got " +
                              std::to_string(retention_ms_) + " ms");
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    [[nodiscard]] std::int64_t retention_ms() const noexcept { return retention_ms_; }
    /// @brief The latest session end given to the store; empty before the first update.
    [[nodiscard]] std::optional<std::int64_t> stream_time() const noexcept { return stream_time_; }

    /// @brief Whether a session ending at `end_ms` is past retention at the
    /// store's stream time (an update to it would be ignored).
    [[nodiscard]] bool expired(std::int64_t end_ms) const noexcept {
        return stream_time_ && end_ms <= detail::minus_saturating(*stream_time_, retention_ms_);
    }

    /// @throws usage_error the session ends before it starts
    void apply(const session_put<K, V>& u) {
        if (!advance(u.session)) return;
        by_key_[u.session.key].insert_or_assign(std::pair(u.session.end_ms, u.session.start_ms), u.value);
        auto& ending = ends_[u.session.end_ms];
        if (ending.empty() || !(ending.back() == u.session.key)) ending.push_back(u.session.key);  // a hot key once
    }
    /// @throws usage_error the session ends before it starts
    void apply(const session_erase<K>& u) {
        if (!advance(u.session)) return;
        const auto at = by_key_.find(u.session.key);
        if (at == by_key_.end()) return;
        at->second.erase(std::pair(u.session.end_ms, u.session.start_ms));
        if (at->second.empty()) by_key_.erase(at);
        // ends_ may still name the key at that end: dropping nothing there later is harmless.
    }

    /// @brief A pointer to the value of session s, or null; valid until the store changes.
    [[nodiscard]] const V* find(const session_window<K>& s) const {
        const auto at = by_key_.find(s.key);
        if (at == by_key_.end()) return nullptr;
        const auto it = at->second.find(std::pair(s.end_ms, s.start_ms));
        return it == at->second.end() ? nullptr : &it->second;
    }
    /// @brief The value of session s, if the store has it.
    [[nodiscard]] std::optional<V> fetch_session(const session_window<K>& s) const {
        const V* v = find(s);
        if (v == nullptr) return std::nullopt;
        return *v;
    }
    /// @brief key's sessions that end at or after `earliest_end_ms` and start
    /// at or before `latest_start_ms`: those that overlap or touch that span
    /// (Kafka Streams' findSessions). By end, then start.
    [[nodiscard]] std::vector<entry_type> find_sessions(const K& key, std::int64_t earliest_end_ms,
                                                        std::int64_t latest_start_ms) const {
        std::vector<entry_type> out;
        const auto at = by_key_.find(key);
        if (at == by_key_.end()) return out;
        const auto first = at->second.lower_bound(std::pair(earliest_end_ms, std::numeric_limits<std::int64_t>::min()));
        for (auto s = first; s != at->second.end(); ++s)
            if (s->first.second <= latest_start_ms)
                out.push_back(entry_type{{key, s->first.second, s->first.first}, s->second});
        return out;
    }
    /// @brief Every session of key, by end, then start.
    [[nodiscard]] std::vector<entry_type> fetch(const K& key) const {
        return find_sessions(key, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    }
    /// @brief Every session the store holds, by key, then end, then start.
    [[nodiscard]] std::vector<entry_type> all() const {
        std::vector<entry_type> out;
        for (const auto& [key, sessions] : by_key_)
            for (const auto& [when, value] : sessions) out.push_back(entry_type{{key, when.second, when.first}, value});
        return out;
    }

    /// @brief How many sessions the store holds.
    [[nodiscard]] std::size_t size() const noexcept {
        std::size_t n = 0;
        for (const auto& k : by_key_) n += k.second.size();
        return n;
    }
    [[nodiscard]] bool empty() const noexcept { return by_key_.empty(); }

private:
    /// Moves stream time to the session's end if later and drops what expired.
    /// @returns whether the session is live
    bool advance(const session_window<K>& s) {
        if (s.end_ms < s.start_ms)
            throw usage_error("strata::session_store " + name_ + ": a session that ends (" +
                              std::to_string(s.end_ms) + ") before it starts (" + std::to_string(s.start_ms) + ")");
        if (!stream_time_ || s.end_ms > *stream_time_) {
            stream_time_ = s.end_ms;
            drop_ended_by(detail::minus_saturating(s.end_ms, retention_ms_));
        }
        return !expired(s.end_ms);
    }

    /// Drops every session that ends at or before `last`.
    void drop_ended_by(std::int64_t last) {
        const auto stop = ends_.upper_bound(last);
        for (auto e = ends_.begin(); e != stop; ++e) {
            for (const K& key : e->second) {
                const auto at = by_key_.find(key);
                if (at == by_key_.end()) continue;
                auto& sessions = at->second;
                sessions.erase(sessions.begin(),
                               sessions.upper_bound(std::pair(last, std::numeric_limits<std::int64_t>::max())));
                if (sessions.empty()) by_key_.erase(at);
            }
        }
        ends_.erase(ends_.begin(), stop);
    }

    std::string name_;
    std::int64_t retention_ms_;
    std::optional<std::int64_t> stream_time_;
    std::map<K, std::map<std::pair<std::int64_t, std::int64_t>, V>, Compare> by_key_;  ///< (end, start) -> value
    std::map<std::int64_t, std::vector<K>> ends_;  ///< end -> keys with a session ending then
};

}  // namespace strata
