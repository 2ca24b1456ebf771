#pragma once
/// @file
/// @brief The in-process registry that owns every metric and hands out
/// stable references to them.

#include <strata/core/error.hpp>
#include <strata/metrics/counter.hpp>
#include <strata/metrics/detail/text.hpp>
#include <strata/metrics/gauge.hpp>
#include <strata/metrics/histogram.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace strata::metrics {

/// @brief Label pairs (name, value) that tell series of one metric apart,
/// e.g. `{{"store", "orders"}, {"op", "put"}}`. Order does not matter: the
/// registry sorts them by name, so `{{"a","1"},{"b","2"}}` and
/// `{{"b","2"},{"a","1"}}` name the same series.
using labels = std::vector<std::pair<std::string, std::string>>;

/// @brief The kind of a metric family, as the Prometheus `# TYPE` line names it.
enum class metric_type { counter, gauge, histogram };

/// @brief "counter", "gauge" or "histogram".
[[nodiscard]] constexpr std::string_view to_string(metric_type t) noexcept {
    switch (t) {
        case metric_type::counter: return "counter";
        case metric_type::gauge: return "gauge";
        case metric_type::histogram: return "histogram";
    }
    return "untyped";
}

/// @brief What a series holds, as a renderer sees it: a stored metric, or a
/// gauge callback to be evaluated now.
using metric_ref = std::variant<const counter*, const gauge*, const histogram*,
                                const std::function<double()>*>;

/// @brief One series of a family, seen during `registry::for_each_family`.
struct series_view {
    const labels& label_set;  ///< sorted by label name
    metric_ref metric;
};

/// @brief One metric family (a name, its help and type, and its series),
/// seen during `registry::for_each_family`. Valid only inside the visit.
struct family_view {
    std::string_view name;
    std::string_view help;
    metric_type type;
    std::span<const series_view> series;  ///< sorted by labels
};

/// @brief Owns counters, gauges and histograms, keyed by name and labels, so
/// that every layer that measures the same thing shares one object and a
/// scrape can render them all.
///
/// - Asking twice for the same name and labels returns the same object;
///   references stay valid for the registry's lifetime (metrics are never
///   moved or removed), so callers look a metric up once and keep the
///   reference for the hot path.
/// - A name belongs to one type: asking for a gauge under a counter's name
///   throws `usage_error`, as do invalid metric or label names and names that
///   would collide with a histogram's `_bucket`, `_sum` or `_count` series.
/// - The help text of a family is the one given when it was first registered.
/// - By convention counter names end in `_total` and latency histogram names
///   in `_seconds`; this is not enforced.
///
/// Threading: registration, removal and rendering take an internal mutex and
/// may happen on any thread. Updating a metric takes no lock; each metric
/// has a single-writer contract (see `counter`), so two stores must not
/// share one series: give them distinct labels (e.g. the store name and
/// partition).
///
/// `registry` is `basic_registry<>`, a template only so that its members are
/// compiled where they are used: as a plain class, every translation unit
/// that includes this header compiled its maps of labels and their lookups
/// (docs/benchmarks.md, "Compile time").
template <class Mutex = std::mutex>
class basic_registry {
public:
    basic_registry() = default;
    basic_registry(const basic_registry&) = delete;
    basic_registry& operator=(const basic_registry&) = delete;

    /// @brief The counter with this name and labels, created on first use.
    /// @throws usage_error on an invalid name or label, or a type clash
    counter& counter_for(std::string_view name, std::string_view help, labels label_set = {}) {
        return *find_or_add(name, help, metric_type::counter, std::move(label_set),
                            [](const std::vector<double>&) {
                                stored s;
                                s.counter_metric = std::make_unique<counter>();
                                return s;
                            })
                    .counter_metric;
    }

    /// @brief The gauge with this name and labels, created on first use.
    /// @throws usage_error on an invalid name or label, a type clash, or if a
    /// callback gauge already holds these labels
    gauge& gauge_for(std::string_view name, std::string_view help, labels label_set = {}) {
        auto& s = find_or_add(name, help, metric_type::gauge, std::move(label_set),
                              [](const std::vector<double>&) {
                                  stored made;
                                  made.gauge_metric = std::make_unique<gauge>();
                                  return made;
                              });
        if (s.gauge_metric) return *s.gauge_metric;
        throw usage_error("strata: metric '" + std::string(name) +
                          "' already has a callback gauge with these labels; it cannot also "
                          "be a stored gauge");
    }

    /// @brief The histogram with this name and labels, created on first use
    /// with the bounds of its family (the default bounds for a new family).
    /// @throws usage_error on an invalid name or label (`le` is reserved), or
    /// a type clash
    histogram& histogram_for(std::string_view name, std::string_view help,
                             labels label_set = {}) {
        return histogram_impl(name, help, std::move(label_set), std::nullopt);
    }

    /// @brief The histogram with this name and labels, created on first use
    /// with the given bounds (see `histogram::histogram`). Every series of a
    /// family has the same bounds, so that their buckets can be summed.
    /// @throws usage_error as above, on invalid bounds, or on bounds that
    /// differ from those the family was created with
    histogram& histogram_for(std::string_view name, std::string_view help, labels label_set,
                             std::span<const double> bounds) {
        return histogram_impl(name, help, std::move(label_set), bounds);
    }

    /// @brief A gauge whose value is computed at render time, for values that
    /// are cheaper to derive on a scrape than to keep current (a cache hit
    /// ratio, restore progress).
    ///
    /// Registering again with the same name and labels replaces the callback,
    /// so a store that is reopened re-registers without ceremony. The callback
    /// runs on the rendering thread while the registry's mutex is held: it must
    /// not call back into the registry, and it must read what it reports safely
    /// from that thread (atomics, or the metrics of this registry). Remove it
    /// with `remove_callback_gauge` before anything it captures dies.
    /// @throws usage_error on an invalid name or label, a type clash, an empty
    /// function, or if a stored gauge already holds these labels
    void callback_gauge(std::string_view name, std::string_view help, labels label_set,
                        std::function<double()> fn) {
        if (!fn)
            throw usage_error("strata: callback gauge '" + std::string(name) +
                              "' needs a callable, got an empty std::function");
        bool created = false;
        auto make = [&](const std::vector<double>&) {
            created = true;
            stored made;
            made.callback = std::move(fn);
            return made;
        };
        auto& s = find_or_add(name, help, metric_type::gauge, std::move(label_set), make);
        if (!s.callback)  // a stored gauge: callbacks are never empty
            throw usage_error("strata: metric '" + std::string(name) +
                              "' already has a stored gauge with these labels; it cannot also "
                              "be a callback gauge");
        if (!created) s.callback = std::move(fn);
    }

    /// @brief Unregisters a callback gauge; once this returns the callback is
    /// never called again. A family left without series disappears.
    /// @returns false if there was no such series
    /// @throws usage_error if the series is not a callback gauge
    bool remove_callback_gauge(std::string_view name, labels label_set) {
        const labels key = canonical(name, std::move(label_set), false);
        std::lock_guard lock(mutex_);
        const auto fam = families_.find(name);
        if (fam == families_.end()) return false;
        const auto it = fam->second.series.find(key);
        if (it == fam->second.series.end()) return false;
        if (!it->second.callback)
            throw usage_error("strata: metric '" + std::string(name) +
                              "' with these labels is not a callback gauge; stored metrics live "
                              "as long as the registry");
        fam->second.series.erase(it);
        if (fam->second.series.empty()) families_.erase(fam);
        return true;
    }

    /// @brief Calls f(const family_view&) for every family, in name order,
    /// with the registry locked: the basis of every renderer.
    template <class F>
    void for_each_family(F&& f) const {
        std::lock_guard lock(mutex_);
        std::vector<series_view> views;
        for (const auto& [name, fam] : families_) {
            views.clear();
            for (const auto& [label_set, s] : fam.series)
                views.push_back(series_view{label_set, s.view()});
            f(family_view{name, fam.help, fam.type, views});
        }
    }

private:
    /// One series' metric: exactly one member is set. Not a std::variant,
    /// whose instantiation cost every translation unit that includes this
    /// header about a tenth of a second.
    struct stored {
        std::unique_ptr<counter> counter_metric;
        std::unique_ptr<gauge> gauge_metric;
        std::unique_ptr<histogram> histogram_metric;
        std::function<double()> callback;

        [[nodiscard]] metric_ref view() const noexcept {
            if (counter_metric) return counter_metric.get();
            if (gauge_metric) return gauge_metric.get();
            if (histogram_metric) return histogram_metric.get();
            return &callback;
        }
    };

    struct family {
        metric_type type;
        std::string help;
        std::vector<double> bounds;  // histograms only
        std::map<labels, stored> series;
    };

    static constexpr std::string_view histogram_suffixes[] = {"_bucket", "_sum", "_count"};

    /// Validates the names and sorts the labels by name.
    static labels canonical(std::string_view name, labels label_set, bool is_histogram) {
        if (!detail::is_valid_metric_name(name))
            throw usage_error("strata: invalid metric name '" + std::string(name) +
                              "': it must match [a-zA-Z_:][a-zA-Z0-9_:]*");
        for (const auto& [label, value] : label_set) {
            if (!detail::is_valid_label_name(label))
                throw usage_error("strata: invalid label name '" + label + "' on metric '" +
                                  std::string(name) +
                                  "': it must match [a-zA-Z_][a-zA-Z0-9_]* and not start "
                                  "with '__'");
            if (is_histogram && label == "le")
                throw usage_error("strata: label 'le' on histogram '" + std::string(name) +
                                  "' is reserved for bucket bounds");
        }
        // An insertion sort by name: a metric has a few labels, and
        // std::stable_sort's instantiation is not free in every translation
        // unit. Equal names throw below, so stability does not matter.
        for (std::size_t i = 1; i < label_set.size(); ++i)
            for (std::size_t j = i; j > 0 && label_set[j].first < label_set[j - 1].first; --j)
                label_set[j].swap(label_set[j - 1]);
        for (std::size_t i = 1; i < label_set.size(); ++i)
            if (label_set[i].first == label_set[i - 1].first)
                throw usage_error("strata: label '" + label_set[i].first +
                                  "' appears twice on metric '" + std::string(name) + "'");
        return label_set;
    }

    /// Throws if a family named `name` of type t would share series names
    /// with a histogram family. Called with the mutex held.
    void check_suffix_clash(std::string_view name, metric_type t) const {
        for (std::string_view suffix : histogram_suffixes) {
            if (name.ends_with(suffix)) {
                const auto base = families_.find(name.substr(0, name.size() - suffix.size()));
                if (base != families_.end() && base->second.type == metric_type::histogram)
                    throw usage_error("strata: metric name '" + std::string(name) +
                                      "' collides with the series of histogram '" +
                                      base->first + "'");
            }
            if (t == metric_type::histogram) {
                const std::string series_name = std::string(name) + std::string(suffix);
                if (families_.find(series_name) != families_.end())
                    throw usage_error("strata: histogram '" + std::string(name) +
                                      "' would render series '" + series_name +
                                      "', which is already a metric");
            }
        }
    }

    /// Finds the series, or creates it (and its family) with make(). Nothing
    /// is inserted if anything throws.
    template <class Make>
    stored& find_or_add(std::string_view name, std::string_view help, metric_type t,
                        labels label_set, Make&& make,
                        std::optional<std::span<const double>> bounds = std::nullopt) {
        labels key = canonical(name, std::move(label_set), t == metric_type::histogram);
        std::lock_guard lock(mutex_);
        auto fam = families_.find(name);
        if (fam != families_.end()) {
            if (fam->second.type != t)
                throw usage_error("strata: metric '" + std::string(name) +
                                  "' is already registered as a " +
                                  std::string(to_string(fam->second.type)) +
                                  "; it cannot also be a " + std::string(to_string(t)));
            if (bounds && !std::ranges::equal(*bounds, fam->second.bounds))
                throw usage_error("strata: histogram '" + std::string(name) +
                                  "' already exists with different bucket bounds; every "
                                  "series of a family must have the same bounds");
            const auto it = fam->second.series.find(key);
            if (it != fam->second.series.end()) return it->second;
            stored s = make(fam->second.bounds);
            return fam->second.series.emplace(std::move(key), std::move(s)).first->second;
        }
        check_suffix_clash(name, t);
        std::vector<double> fam_bounds;
        if (t == metric_type::histogram) {
            const auto b = bounds.value_or(histogram::default_bounds());
            fam_bounds.assign(b.begin(), b.end());
        }
        stored s = make(fam_bounds);  // may throw (bad bounds) before anything is inserted
        family f{t, std::string(help), std::move(fam_bounds), {}};
        f.series.emplace(std::move(key), std::move(s));
        return families_.emplace(std::string(name), std::move(f))
            .first->second.series.begin()
            ->second;
    }

    histogram& histogram_impl(std::string_view name, std::string_view help, labels label_set,
                              std::optional<std::span<const double>> bounds) {
        auto make = [](const std::vector<double>& b) {
            stored made;
            made.histogram_metric = std::make_unique<histogram>(std::span<const double>(b));
            return made;
        };
        return *find_or_add(name, help, metric_type::histogram, std::move(label_set), make, bounds)
                    .histogram_metric;
    }

    mutable Mutex mutex_;
    std::map<std::string, family, std::less<>> families_;
};

/// @brief The registry of metrics (see `basic_registry`).
using registry = basic_registry<>;

}  // namespace strata::metrics

#if defined(STRATA_SEPARATE_COMPILATION)
// Compiled once, where <strata/separate_compilation.hpp> is included.
namespace strata::metrics {
extern template class basic_registry<std::mutex>;
}  // namespace strata::metrics
#endif
