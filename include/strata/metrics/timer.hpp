#pragma once
/// @file
/// @brief Times a scope into a histogram.

#include <strata/metrics/histogram.hpp>

#include <chrono>
#include <cstdint>

namespace strata::metrics {

/// @brief Observes the steady-clock time from construction to destruction,
/// in nanoseconds, into a histogram: `auto t = metrics::timer(latency);`.
///
/// The elapsed time is recorded even when the scope exits by an exception,
/// so failed operations are timed too. Not copyable or movable: it belongs
/// to the scope it measures (C++17 guaranteed elision makes the `auto t =`
/// form work anyway).
class [[nodiscard]] timer {
public:
    using clock = std::chrono::steady_clock;

    explicit timer(histogram& h) noexcept : histogram_(&h), start_(clock::now()) {}
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;
    ~timer() { stop(); }

    /// @brief Records now instead of at the end of the scope, and returns the
    /// elapsed nanoseconds; later calls (and the destructor) record nothing.
    std::uint64_t stop() noexcept {
        if (histogram_ == nullptr) return 0;
        const auto elapsed = clock::now() - start_;
        const auto ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
        histogram_->observe_ns(ns);
        histogram_ = nullptr;
        return ns;
    }

    /// @brief Records nothing: for a scope whose time should not count.
    void cancel() noexcept { histogram_ = nullptr; }

private:
    histogram* histogram_;
    clock::time_point start_;
};

}  // namespace strata::metrics
