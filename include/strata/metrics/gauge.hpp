#pragma once
/// @file
/// @brief A value that goes up and down, updated by one thread and read by any.

#include <atomic>

namespace strata::metrics {

/// @brief A current level: entries in a cache, bytes buffered, restore lag.
///
/// Single-writer contract, as for `counter`: `set` and `add` from one thread
/// at a time, `value` from any thread. `add` is a relaxed load and store, not
/// a compare-exchange loop, so it costs the same as `set`.
///
/// For a value that is cheaper to compute when scraped than to keep up to
/// date (a hit ratio, a queue length owned by another object), register a
/// callback gauge with `registry::callback_gauge` instead.
class gauge {
public:
    gauge() noexcept = default;
    gauge(const gauge&) = delete;
    gauge& operator=(const gauge&) = delete;

    /// @brief Replaces the value. Single writer only.
    void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }

    /// @brief Adds d (which may be negative). Single writer only.
    void add(double d) noexcept {
        value_.store(value_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
    }

    /// @brief The current value; safe from any thread.
    [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

}  // namespace strata::metrics
