#pragma once
/// @file
/// @brief A monotonically increasing count, updated by one thread and read by any.

#include <atomic>
#include <cstdint>

namespace strata::metrics {

/// @brief A count that only goes up: operations done, bytes written, records
/// restored.
///
/// Single-writer contract: `inc` may be called from one thread at a time (the
/// thread that owns the store being measured); `value` may be called from any
/// thread at any time, e.g. by a scrape. `inc` is a relaxed load and a
/// relaxed store rather than a read-modify-write, so the hot path carries no
/// locked instruction; two concurrent writers would lose increments.
///
/// By Prometheus convention the name of a counter ends in `_total`; the
/// registry does not enforce it.
class counter {
public:
    counter() noexcept = default;
    counter(const counter&) = delete;
    counter& operator=(const counter&) = delete;

    /// @brief Adds n. Single writer only (see the class comment).
    void inc(std::uint64_t n = 1) noexcept {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    /// @brief The count so far; safe from any thread.
    [[nodiscard]] std::uint64_t value() const noexcept {
        return value_.load(std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint64_t> value_{0};
};

}  // namespace strata::metrics
