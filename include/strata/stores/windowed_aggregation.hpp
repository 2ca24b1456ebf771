#pragma once
/// @file
/// @brief Windowed aggregation over window and session stores: which windows
/// a record falls in, when a window closes (grace), and how sessions merge,
/// as Kafka Streams' windowedBy(...).aggregate(...) does it.
///
/// ```cpp
/// auto counts = strata::window_store<std::string, std::int64_t>("counts", per_minute.store_options())
///             | strata::logged(log);
/// strata::window_aggregator per_minute_counter(per_minute);
/// per_minute_counter.aggregate(counts, key, record_time, 0, [](std::int64_t n) { return n + 1; });
/// ```

#include <strata/core/error.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/stores/session_types.hpp>
#include <strata/stores/window_types.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

/// @brief Fixed-size windows, tumbling (advance == size: each record in
/// one window) or hopping (advance < size: in size / advance windows).
/// Window starts are multiples of the advance from time 0, and a window
/// [start, start + size) closes once stream time reaches its end plus the
/// grace: records that arrive later for it are dropped.
struct time_windows {
    std::int64_t size_ms = 0;
    std::int64_t advance_ms = 0;
    std::int64_t grace_ms = 0;

    /// @throws usage_error size not positive, or grace negative
    static time_windows tumbling(std::chrono::milliseconds size, std::chrono::milliseconds grace = {}) {
        return hopping(size, size, grace);
    }
    /// @throws usage_error size not positive, advance not in (0, size], or grace negative
    static time_windows hopping(std::chrono::milliseconds size, std::chrono::milliseconds advance,
                                std::chrono::milliseconds grace = {}) {
        if (size.count() <= 0) throw usage_error("strata::time_windows: the window size must be positive");
        if (advance.count() <= 0 || advance > size)
            throw usage_error("strata::time_windows: the advance must be positive and at most the window size (" +
                              std::to_string(size.count()) + " ms), got " + std::to_string(advance.count()) + " ms");
        if (grace.count() < 0) throw usage_error("strata::time_windows: the grace period must not be negative");
        return {size.count(), advance.count(), grace.count()};
    }

    /// @brief The starts of the windows a record at `timestamp_ms` falls in,
    /// ascending (none for a negative time: windows start at 0 or later).
    [[nodiscard]] std::vector<std::int64_t> starts_for(std::int64_t timestamp_ms) const {
        std::vector<std::int64_t> starts;
        if (timestamp_ms < 0) return starts;
        std::int64_t start = std::max<std::int64_t>(0, timestamp_ms - size_ms + advance_ms) / advance_ms * advance_ms;
        for (; start <= timestamp_ms; start += advance_ms) starts.push_back(start);
        return starts;
    }

    /// @brief A window store that keeps every window until it closes:
    /// retention = size + grace (Kafka Streams' default for a windowed
    /// aggregation's store).
    [[nodiscard]] window_store_options store_options() const {
        return {std::chrono::milliseconds(size_ms), std::chrono::milliseconds(size_ms + grace_ms)};
    }
};

/// @brief Session windows: a key's records belong to one session while each
/// comes within `gap` of the next; a record that bridges two sessions merges
/// them. A session closes once stream time passes its end plus gap plus grace.
struct session_windows {
    std::int64_t gap_ms = 0;
    std::int64_t grace_ms = 0;

    /// @throws usage_error gap not positive, or grace negative
    static session_windows with_gap(std::chrono::milliseconds gap, std::chrono::milliseconds grace = {}) {
        if (gap.count() <= 0) throw usage_error("strata::session_windows: the inactivity gap must be positive");
        if (grace.count() < 0) throw usage_error("strata::session_windows: the grace period must not be negative");
        return {gap.count(), grace.count()};
    }

    /// @brief A session store that keeps every session until it closes:
    /// retention = gap + grace (Kafka Streams' default).
    [[nodiscard]] session_store_options store_options() const {
        return {std::chrono::milliseconds(gap_ms + grace_ms)};
    }
};

namespace detail {
/// The largest of an aggregator's stream time and the store's (which, after
/// a restore, is where the aggregator's own left off, or near it).
template <class Store>
std::int64_t stream_time_with(std::optional<std::int64_t> own, const Store& store, std::int64_t record_time) {
    std::int64_t t = record_time;
    if (own) t = std::max(t, *own);
    if (const auto s = store.stream_time()) t = std::max(t, *s);
    return t;
}
}  // namespace detail

/// @brief Aggregates records into the time windows they fall in, in a window
/// store or any stack over one: for each window of the record's time that
/// is still open, value = add(the window's value, or `init` for a new one).
///
/// Stream time is the latest record time seen (by this aggregator, or, after
/// a restore, the latest window start the store holds). Kafka Streams keeps
/// the same per task and processor; use one aggregator per task.
class window_aggregator {
public:
    explicit window_aggregator(time_windows w) : windows_(w) {}

    /// @brief What one record did.
    struct outcome {
        std::size_t updated = 0;  ///< windows written
        std::size_t late = 0;     ///< windows the record fell in that had closed
    };

    /// @throws usage_error the store's retention is shorter than size + grace
    ///         (windows would expire while still open)
    template <class Stack, class Add>
    outcome aggregate(Stack& stack, const typename std::remove_cvref_t<decltype(innermost(stack))>::window_key_type& key,
                      std::int64_t timestamp_ms,
                      const typename std::remove_cvref_t<decltype(innermost(stack))>::value_type& init, Add&& add) {
        using store_t = std::remove_cvref_t<decltype(innermost(stack))>;
        using K = typename store_t::window_key_type;
        using V = typename store_t::value_type;
        const store_t& store = innermost(std::as_const(stack));
        if (store.retention_ms() < windows_.size_ms + windows_.grace_ms)
            throw usage_error("strata::window_aggregator: store " + std::string(store.name()) + " keeps " +
                              std::to_string(store.retention_ms()) + " ms, less than window size + grace (" +
                              std::to_string(windows_.size_ms + windows_.grace_ms) +
                              " ms): use time_windows::store_options()");
        stream_time_ = detail::stream_time_with(stream_time_, store, timestamp_ms);
        const std::int64_t close = *stream_time_ - windows_.grace_ms;
        outcome o;
        for (const std::int64_t start : windows_.starts_for(timestamp_ms)) {
            if (start + windows_.size_ms <= close) {
                ++o.late;
                continue;
            }
            const V* old = store.find(key, start);
            V next = add(old != nullptr ? *old : init);
            stack.apply(window_put<K, V>{{key, start}, std::move(next)});
            ++o.updated;
        }
        if (o.late != 0) ++late_records_;
        return o;
    }

    [[nodiscard]] std::optional<std::int64_t> stream_time() const noexcept { return stream_time_; }
    /// @brief Records that fell in at least one closed window.
    [[nodiscard]] std::uint64_t late_records() const noexcept { return late_records_; }

private:
    time_windows windows_;
    std::optional<std::int64_t> stream_time_;
    std::uint64_t late_records_ = 0;
};

/// @brief Aggregates records into sessions, in a session store or any stack
/// over one: the sessions of the key within `gap` of the record merge with
/// it into one (value = merge of theirs, from `init`, then add(...)), the
/// merged ones are erased and the new one put; a record whose merged
/// session has already closed is dropped.
class session_aggregator {
public:
    explicit session_aggregator(session_windows w) : windows_(w) {}

    /// @returns the session the record is now part of, or nothing if it was
    ///          dropped as late
    /// @throws usage_error the store's retention is shorter than gap + grace
    template <class Stack, class Add, class Merge>
    auto aggregate(Stack& stack, const typename std::remove_cvref_t<decltype(innermost(stack))>::session_key_type& key,
                   std::int64_t timestamp_ms,
                   const typename std::remove_cvref_t<decltype(innermost(stack))>::value_type& init, Add&& add,
                   Merge&& merge) {
        using store_t = std::remove_cvref_t<decltype(innermost(stack))>;
        using K = typename store_t::session_key_type;
        using V = typename store_t::value_type;
        const store_t& store = innermost(std::as_const(stack));
        if (store.retention_ms() < windows_.gap_ms + windows_.grace_ms)
            throw usage_error("strata::session_aggregator: store " + std::string(store.name()) + " keeps " +
                              std::to_string(store.retention_ms()) + " ms, less than gap + grace (" +
                              std::to_string(windows_.gap_ms + windows_.grace_ms) +
                              " ms): use session_windows::store_options()");
        stream_time_ = detail::stream_time_with(stream_time_, store, timestamp_ms);
        const std::int64_t close = *stream_time_ - windows_.grace_ms - windows_.gap_ms;

        auto merged = store.find_sessions(key, timestamp_ms - windows_.gap_ms, timestamp_ms + windows_.gap_ms);
        session_window<K> window{key, timestamp_ms, timestamp_ms};
        V value = init;
        for (const auto& m : merged) {
            value = merge(std::move(value), m.value);
            window.start_ms = std::min(window.start_ms, m.session.start_ms);
            window.end_ms = std::max(window.end_ms, m.session.end_ms);
        }
        std::optional<session_window<K>> result;
        if (window.end_ms < close) {
            ++late_records_;
            return result;
        }
        if (window.start_ms != timestamp_ms || window.end_ms != timestamp_ms)
            for (auto& m : merged) stack.apply(session_erase<K>{std::move(m.session)});
        stack.apply(session_put<K, V>{window, add(std::move(value))});
        result = std::move(window);
        return result;
    }

    [[nodiscard]] std::optional<std::int64_t> stream_time() const noexcept { return stream_time_; }
    /// @brief Records dropped because their session had closed.
    [[nodiscard]] std::uint64_t late_records() const noexcept { return late_records_; }

private:
    session_windows windows_;
    std::optional<std::int64_t> stream_time_;
    std::uint64_t late_records_ = 0;
};

}  // namespace strata
