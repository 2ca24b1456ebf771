#pragma once
/// @file
/// @brief The metrics of one metered store, looked up once so the hot path
/// touches only pointers, and the listener that publishes restore progress.

#include <strata/metrics/registry.hpp>
#include <strata/restore/restore.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace strata::detail {

/// One operation's count and latency, and when to time it next.
struct op_meter {
    metrics::counter* count;
    metrics::histogram* latency;
    std::uint32_t time_one_in;
    mutable std::uint32_t until_timed = 1;  // the first operation is timed
};

/// The store's metrics, looked up once: the hot path touches only these.
struct store_instruments {
    /// A template (Registry is metrics::registry) only so that the registry's
    /// members it calls are compiled where a metered store is, not in every
    /// translation unit that includes the decorators.
    template <class Registry>
    store_instruments(Registry& reg, const std::string& store, const metrics::labels& extra,
                      std::uint32_t time_one_in)
        : registry(&reg) {
        metrics::labels of_store{{"store", store}};
        of_store.insert(of_store.end(), extra.begin(), extra.end());
        const auto op = [&](const char* name, std::uint32_t one_in) {
            metrics::labels labels = of_store;
            labels.emplace_back("op", name);
            return op_meter{&reg.counter_for("strata_store_operations_total",
                                             "Store operations, by store and operation", labels),
                            &reg.histogram_for("strata_store_operation_seconds",
                                               "Latency of the timed store operations, by store and operation",
                                               labels),
                            one_in};
        };
        apply = op("apply", time_one_in);
        get = op("get", time_one_in);
        put = op("put", time_one_in);
        erase = op("erase", time_one_in);
        range = op("range", time_one_in);
        all = op("all", time_one_in);
        flush = op("flush", 1);  // rare and slow: every one is timed
        restore = op("restore", 1);
        records = &reg.counter_for("strata_changelog_records_total",
                                   "Changelog records written by the store", of_store);
        hits = &reg.counter_for("strata_cache_hits_total", "Reads answered by the cache", of_store);
        misses = &reg.counter_for("strata_cache_misses_total", "Reads the cache passed to the store beneath",
                                  of_store);
        reg.callback_gauge("strata_cache_hit_ratio", "Cache hits over reads", of_store,
                           [h = hits, m = misses] {
                               const auto reads = h->value() + m->value();
                               return reads == 0 ? 0.0 : static_cast<double>(h->value()) / static_cast<double>(reads);
                           });
        restore_total = &reg.gauge_for("strata_restore_records_total",
                                       "Records the running or last restore reads at most", of_store);
        restore_done = &reg.gauge_for("strata_restore_records_restored",
                                      "Records the running or last restore has applied", of_store);
        restore_rate = &reg.gauge_for("strata_restore_records_per_second",
                                      "Records per second of the running or last restore", of_store);
    }
    metrics::registry* registry;
    op_meter apply, get, put, erase, range, all, flush, restore;
    metrics::counter *records, *hits, *misses;
    metrics::gauge *restore_total, *restore_done, *restore_rate;
};

/// Publishes a restore's progress and rate as gauges, and passes every
/// report on to the user's listener.
template <class Listener>
struct metering_listener {
    using clock = std::chrono::steady_clock;
    const store_instruments& m;
    Listener& user;
    clock::time_point start;

    void publish(const restore_progress& p) const {
        m.restore_done->set(static_cast<double>(p.records_done));
        const std::chrono::duration<double> elapsed = clock::now() - start;
        if (elapsed.count() > 0) m.restore_rate->set(static_cast<double>(p.records_done) / elapsed.count());
    }
    void on_restore_start(const restore_progress& p) {
        m.restore_total->set(static_cast<double>(p.records_total));
        m.restore_done->set(0);
        user.on_restore_start(p);
    }
    void on_batch_restored(const restore_progress& p) {
        publish(p);
        user.on_batch_restored(p);
    }
    void on_restore_end(const restore_progress& p) {
        publish(p);
        user.on_restore_end(p);
    }
};

#if defined(STRATA_SEPARATE_COMPILATION)
// Compiled once, where <strata/separate_compilation.hpp> is included.
extern template store_instruments::store_instruments(metrics::registry&, const std::string&, const metrics::labels&,
                                                     std::uint32_t);
#endif

}  // namespace strata::detail
