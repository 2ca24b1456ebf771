#pragma once
/// @file
/// @brief A latency histogram with fixed buckets and a constant-time hot path.

#include <strata/core/error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace strata::metrics {

/// @brief A consistent-enough copy of a histogram, taken for rendering or for
/// estimating quantiles away from the hot path.
struct histogram_snapshot {
    std::vector<double> bounds;             ///< finite upper bounds in seconds, ascending
    std::vector<std::uint64_t> cumulative;  ///< observations <= each bound; last entry is +Inf
    double sum = 0.0;                       ///< sum of all observations, in seconds

    /// @brief Number of observations (the +Inf bucket).
    [[nodiscard]] std::uint64_t count() const noexcept {
        return cumulative.empty() ? 0 : cumulative.back();
    }

    /// @brief Estimates the q-quantile the way Prometheus' `histogram_quantile`
    /// does: find the bucket holding rank q*count and interpolate linearly
    /// inside it (the first bucket starts at 0 if its bound is positive).
    ///
    /// @param q clamped to [0, 1]
    /// @returns NaN when there are no observations; the highest finite bound
    /// when the rank falls in the +Inf bucket (nothing better is known).
    [[nodiscard]] double quantile(double q) const noexcept {
        const std::uint64_t n = count();
        if (n == 0 || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
        q = std::clamp(q, 0.0, 1.0);
        const double rank = q * static_cast<double>(n);
        std::size_t i = 0;
        while (cumulative[i] == 0 || static_cast<double>(cumulative[i]) < rank) ++i;
        if (i == bounds.size()) return bounds.empty() ? std::numeric_limits<double>::quiet_NaN()
                                                      : bounds.back();
        const double upper = bounds[i];
        const double lower = i > 0 ? bounds[i - 1] : 0.0;  // bounds are >= 0
        const double below = i > 0 ? static_cast<double>(cumulative[i - 1]) : 0.0;
        const double inside = static_cast<double>(cumulative[i]) - below;  // > 0 by choice of i
        return lower + (upper - lower) * (rank - below) / inside;
    }
};

/// @brief Counts observations (latencies, in seconds) into fixed buckets.
///
/// Bucket i counts observations v with `v <= bounds[i]` and `v > bounds[i-1]`
/// (the Prometheus `le` rule, boundaries inclusive); one more bucket, +Inf,
/// counts the rest. Bounds are chosen at creation and never change.
///
/// `observe_ns` is the hot path used by timers: an integer bit width indexes a
/// precomputed table that names the first bucket that can hold a value of that
/// width, and at most a couple of integer compares finish the job for
/// exponential bounds (any bounds stay correct, just with a longer scan). No
/// floating point, no division, no lock. An observation of n nanoseconds lands
/// exactly where `observe(n / 1e9)` would.
///
/// Single-writer contract, as for `counter`: observe from one thread at a
/// time; `count`, `sum`, `snapshot` from any thread. A reader racing a writer
/// may see an observation in its bucket but not yet in the sum (or the
/// reverse); every value it sees is one the histogram really held.
class histogram {
public:
    /// @brief The default bounds: 1-2-5 steps from 100 ns to 10 s (25
    /// buckets), readable as `le` labels and fine enough to tell a cache hit
    /// from a disk read from a network round trip.
    [[nodiscard]] static std::span<const double> default_bounds() noexcept {
        static constexpr std::array<double, 25> bounds{
            100e-9, 200e-9, 500e-9, 1e-6,  2e-6,  5e-6,  10e-6, 20e-6, 50e-6,
            100e-6, 200e-6, 500e-6, 1e-3,  2e-3,  5e-3,  10e-3, 20e-3, 50e-3,
            100e-3, 200e-3, 500e-3, 1.0,   2.0,   5.0,   10.0};
        return bounds;
    }

    /// @brief `count` bounds start, start*factor, start*factor^2, ...
    /// @throws usage_error unless start > 0, factor > 1 and count >= 1
    [[nodiscard]] static std::vector<double> exponential_bounds(double start, double factor,
                                                                std::size_t count) {
        if (!(start > 0.0) || !(factor > 1.0) || count == 0 || !std::isfinite(start) ||
            !std::isfinite(factor))
            throw usage_error("strata: exponential histogram bounds need start > 0, factor > 1 "
                              "and at least one bucket");
        std::vector<double> out;
        out.reserve(count);
        for (double b = start; out.size() < count; b *= factor) out.push_back(b);
        return out;
    }

    /// @brief A histogram with the default bounds.
    histogram() : histogram(default_bounds()) {}

    /// @param bounds finite upper bounds in seconds, non-negative and strictly
    /// ascending; +Inf is implied and must not be given. May be empty (only
    /// +Inf: a count and a sum).
    /// @throws usage_error if the bounds break those rules
    explicit histogram(std::span<const double> bounds)
        : bounds_(bounds.begin(), bounds.end()),
          counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds.size() + 1)) {
        for (std::size_t i = 0; i < bounds_.size(); ++i) {
            const double b = bounds_[i];
            if (!std::isfinite(b) || b < 0.0)
                throw usage_error("strata: histogram bound " + std::to_string(b) +
                                  " must be finite and >= 0 (latencies in seconds; +Inf is "
                                  "implied)");
            if (i > 0 && !(b > bounds_[i - 1]))
                throw usage_error("strata: histogram bounds must be strictly ascending, but " +
                                  std::to_string(b) + " follows " + std::to_string(bounds_[i - 1]));
        }
        bounds_ns_.reserve(bounds_.size() + 1);
        for (double b : bounds_) bounds_ns_.push_back(to_ns_bound(b));
        bounds_ns_.push_back(std::numeric_limits<std::uint64_t>::max());  // +Inf sentinel
        for (std::size_t w = 0; w < first_bucket_.size(); ++w) {
            const std::uint64_t smallest = w == 0 ? 0 : std::uint64_t{1} << (w - 1);
            first_bucket_[w] = static_cast<std::uint32_t>(
                std::lower_bound(bounds_ns_.begin(), bounds_ns_.end(), smallest) -
                bounds_ns_.begin());
        }
    }

    histogram(const histogram&) = delete;
    histogram& operator=(const histogram&) = delete;

    /// @brief Records one duration in nanoseconds: the hot path. Single writer only.
    void observe_ns(std::uint64_t ns) noexcept {
        std::size_t i = first_bucket_[static_cast<std::size_t>(std::bit_width(ns))];
        while (ns > bounds_ns_[i]) ++i;  // stops at the +Inf sentinel at the latest
        bump(counts_[i], 1);
        bump(sum_ns_, ns);
    }

    /// @brief Records one value in seconds. NaN is ignored (it would poison
    /// the sum forever). Single writer only.
    void observe(double seconds) noexcept {
        if (std::isnan(seconds)) return;
        const auto i = static_cast<std::size_t>(
            std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
        bump(counts_[i], 1);
        sum_s_.store(sum_s_.load(std::memory_order_relaxed) + seconds, std::memory_order_relaxed);
    }

    /// @brief The finite upper bounds, in seconds.
    [[nodiscard]] std::span<const double> bounds() const noexcept { return bounds_; }

    /// @brief Number of observations so far; safe from any thread.
    [[nodiscard]] std::uint64_t count() const noexcept {
        std::uint64_t n = 0;
        for (std::size_t i = 0; i <= bounds_.size(); ++i)
            n += counts_[i].load(std::memory_order_relaxed);
        return n;
    }

    /// @brief Sum of all observations in seconds; safe from any thread.
    [[nodiscard]] double sum() const noexcept {
        return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9 +
               sum_s_.load(std::memory_order_relaxed);
    }

    /// @brief Cumulative bucket counts and the sum; safe from any thread.
    [[nodiscard]] histogram_snapshot snapshot() const {
        histogram_snapshot s;
        s.bounds = bounds_;
        s.cumulative.reserve(bounds_.size() + 1);
        std::uint64_t running = 0;
        for (std::size_t i = 0; i <= bounds_.size(); ++i) {
            running += counts_[i].load(std::memory_order_relaxed);
            s.cumulative.push_back(running);
        }
        s.sum = sum();
        return s;
    }

    /// @brief Shorthand for `snapshot().quantile(q)`.
    [[nodiscard]] double quantile(double q) const { return snapshot().quantile(q); }

private:
    static void bump(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
        a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    /// The largest n such that n / 1e9 (in double) <= b, so that integer
    /// compares against it agree with `observe(n / 1e9)` even where b has no
    /// exact binary form (2.5e-7 * 1e9 is not exactly 250).
    static std::uint64_t to_ns_bound(double b) noexcept {
        constexpr double exact_limit = 9007199254740992.0;  // 2^53: above it, plain floor
        const double scaled = b * 1e9;
        if (scaled >= 18446744073709551615.0) return std::numeric_limits<std::uint64_t>::max();
        auto n = static_cast<std::uint64_t>(scaled);
        if (scaled >= exact_limit) return n;
        while (n > 0 && static_cast<double>(n) / 1e9 > b) --n;
        while (static_cast<double>(n + 1) / 1e9 <= b) ++n;
        return n;
    }

    std::vector<double> bounds_;
    std::vector<std::uint64_t> bounds_ns_;  // bounds_ in ns, plus a max() sentinel for +Inf
    std::array<std::uint32_t, 65> first_bucket_{};  // by bit width of an ns value
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative
    std::atomic<std::uint64_t> sum_ns_{0};
    std::atomic<double> sum_s_{0.0};
};

}  // namespace strata::metrics
