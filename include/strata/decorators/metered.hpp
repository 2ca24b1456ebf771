#pragma once
/// @file
/// @brief `metered`: counts and times every store operation, and reports the
/// cache's hit ratio and restore progress, in a metrics registry.

#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/decorators/cached.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/detail/metered_instruments.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/decorators/logged.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/metrics/timer.hpp>
#include <strata/restore/restore.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace strata {

/// @brief The store Inner, with every operation timed into
/// `strata_store_operation_seconds{store, op}` (whose `_count` is the number
/// of operations), records written into `strata_changelog_records_total`,
/// cache hits and misses, and the progress and rate of a restore.
///
/// The registry must outlive the store. Metric names:
/// - strata_store_operations_total{store,op}: every operation; op is apply,
///   get, put, erase, range, all, flush or restore
/// - strata_store_operation_seconds{store,op}: latency histogram of the timed
///   operations: one in `metered_options::time_one_in` of apply, get, put,
///   erase, range and all; every flush and restore
/// - strata_changelog_records_total{store}: records the logged layer wrote
/// - strata_cache_hits_total, strata_cache_misses_total{store}; strata_cache_hit_ratio{store}
/// - strata_restore_records_total{store}: records the running or last restore reads, at most
/// - strata_restore_records_restored{store}; strata_restore_records_per_second{store}
/// @brief Options of the metered layer.
struct metered_options {
    /// Time one point operation (apply, get, put, erase, range, all) in this many;
    /// count every one. Reading the clock around an operation costs far more
    /// than the clock itself: it stops the processor from overlapping the
    /// memory accesses of consecutive operations (a get over an in-memory
    /// hash map measured 5x slower timed than untimed; timing one in 16 still
    /// cost half a bare get, one in 128 a few percent). 1 times every one.
    std::uint32_t time_one_in = 128;
    /// Labels added to every series of the store, beside `store`: e.g. the
    /// task or partition, when several instances of one store (same name,
    /// one per partition) report to one registry.
    metrics::labels labels = {};
};

template <class Inner>
class metered_store : public detail::layer_base<metered_store<Inner>, Inner> {
    static constexpr bool has_cache = has_layer_v<Inner, layer_kind::cached>;
    static constexpr bool has_log = has_layer_v<Inner, layer_kind::logged>;

public:
    static constexpr layer_kind kind = layer_kind::metered;

    metered_store(Inner inner, metrics::registry& reg, metered_options opts = {})
        : inner_(std::move(inner)), m_(reg, std::string(inner_.name()), opts.labels, opts.time_one_in) {
        if (opts.time_one_in == 0)
            throw usage_error("strata::metered: time_one_in must be at least 1 (1 times every operation)");
    }

    /// @returns what the store's apply(u) returns
    template <class U>
    decltype(auto) apply(const U& u) {
        if constexpr (!store_for<Inner, const U&>)
            static_assert(store_for<Inner, const U&>, "strata::metered: the store has no apply() for this update type");
        else
            return observed(m_.apply, [&]() -> decltype(auto) { return inner_.apply(u); });
    }

    template <class S = Inner>
        requires kv_store<S>
    [[nodiscard]] std::optional<typename S::mapped_type> get(const typename S::key_type& k) const {
        if constexpr (detail::has_kv_find<S>) return detail::optional_of(read([&] { return inner_.find(k); }));
        else return read([&] { return inner_.get(k); });
    }
    template <class S = Inner>
        requires detail::has_kv_find<S>
    [[nodiscard]] const typename S::mapped_type* find(const typename S::key_type& k) const {
        return read([&] { return inner_.find(k); });
    }
    template <class S = Inner>
        requires kv_store<S>
    void put(const typename S::key_type& k, const typename S::mapped_type& v) {
        observed(m_.put, [&] { inner_.put(k, v); });
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase(const typename S::key_type& k) {
        return observed(m_.erase, [&] { return inner_.erase(k); });
    }
    /// Times the creation of the range; the view is lazy, so iterating it is
    /// the caller's time.
    template <class S = Inner>
        requires ordered_kv_store<S>
    [[nodiscard]] auto range(const typename S::key_type& lo, const typename S::key_type& hi) const {
        return observed<false>(m_.range, [&] { return inner_.range(lo, hi); });
    }
    template <class S = Inner>
        requires ordered_kv_store<S> || requires(const S& s) { s.all(); }
    [[nodiscard]] auto all() const {
        return observed<false>(m_.all, [&] { return inner_.all(); });
    }

    auto flush() {
        return observed(m_.flush, [&] {
            if constexpr (detail::has_flush<Inner>) return inner_.flush();
        });
    }

    /// @brief Restores the layers beneath, publishing progress and rate as
    /// gauges while it runs and passing every report on to `listener`.
    template <restore_listener Listener = null_restore_listener>
        requires requires(Inner& s, null_restore_listener l) { s.restore(l); }
    auto restore(Listener&& listener = {}) {
        metering_listener<std::remove_reference_t<Listener>> ml{m_, listener, clock::now()};
        return observed(m_.restore, [&] { return inner_.restore(ml); });
    }

    [[nodiscard]] metrics::registry& registry() const noexcept { return *m_.registry; }

    [[nodiscard]] Inner& base() & noexcept { return inner_; }
    [[nodiscard]] const Inner& base() const& noexcept { return inner_; }
    [[nodiscard]] Inner&& base() && noexcept { return std::move(inner_); }

private:
    using clock = std::chrono::steady_clock;

    using op_meter = detail::op_meter;
    using instruments = detail::store_instruments;
    template <class Listener>
    using metering_listener = detail::metering_listener<Listener>;

    const auto& cache() const { return layer<cached_store>(inner_); }

    [[nodiscard]] std::uint64_t records_below() const noexcept {
        if constexpr (has_log) return layer<logged_store>(inner_).records_written();
        else return 0;
    }

    /// A get or find, with fetch() reading the layer beneath.
    template <class Fetch>
    auto read(Fetch fetch) const {
        if constexpr (has_cache) {
            // A cache that answers reads may evict a dirty entry on a miss,
            // which writes its record: observed counts it. Otherwise a read
            // writes nothing, and is only counted and timed.
            if (cache().caches_reads()) {
                return observed(m_.get, [&] {
                    const std::uint64_t hits_before = cache().hits();
                    auto v = fetch();
                    if (cache().hits() != hits_before) m_.hits->inc();
                    else m_.misses->inc();
                    return v;
                });
            }
        }
        return observed<false>(m_.get, fetch);
    }

    /// Counts f, times it when its turn comes, and counts the changelog
    /// records it caused (unless it cannot write any: MayWrite false).
    template <bool MayWrite = true, class F>
    decltype(auto) observed(const op_meter& op, F&& f) const {
        if constexpr (has_log && MayWrite) {
            struct count_records {
                const metered_store& self;
                std::uint64_t before;
                ~count_records() {
                    if (const auto n = self.records_below() - before) self.m_.records->inc(n);
                }
            } counting{*this, records_below()};
            return timed(op, std::forward<F>(f));
        } else {
            return timed(op, std::forward<F>(f));
        }
    }
    /// Counts f, and times it when its turn comes.
    template <class F>
    decltype(auto) timed(const op_meter& op, F&& f) const {
        op.count->inc();
        if (--op.until_timed != 0) return std::forward<F>(f)();
        op.until_timed = op.time_one_in;
        metrics::timer t(*op.latency);
        return std::forward<F>(f)();
    }

    Inner inner_;
    instruments m_;
};

/// @brief The closure that `metered(registry)` returns.
class metered_closure : public layer_closure<metered_closure> {
public:
    static constexpr layer_kind kind = layer_kind::metered;
    explicit metered_closure(metrics::registry& reg, metered_options opts = {})
        : reg_(&reg), opts_(std::move(opts)) {}

    template <class S>
    auto wrap(S&& s) const {
        using store = std::remove_cvref_t<S>;
        return metered_store<store>(store(std::forward<S>(s)), *reg_, opts_);
    }

private:
    metrics::registry* reg_;
    metered_options opts_;
};

/// @brief `store | metered(registry[, options])`. The registry must outlive the store.
inline metered_closure metered(metrics::registry& reg, metered_options opts = {}) {
    return metered_closure(reg, std::move(opts));
}

/// @brief `metered(store, registry[, options])`: the direct form of `store | metered(registry)`.
template <class S>
    requires state_store<std::remove_cvref_t<S>>
auto metered(S&& store, metrics::registry& reg, metered_options opts = {}) {
    return std::forward<S>(store) | metered(reg, std::move(opts));
}

}  // namespace strata
