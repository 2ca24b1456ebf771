#include <strata/metrics/prometheus.hpp>
#include <strata/metrics/registry.hpp>

#include "exposition.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace m = strata::metrics;

TEST_CASE("one writer and one scraper: valid text throughout, exact totals after join",
          "[metrics][concurrency]") {
    m::registry r;
    auto& ops = r.counter_for("ops_total", "Ops.", {{"store", "s"}});
    auto& level = r.gauge_for("level", "Level.");
    auto& latency = r.histogram_for("op_seconds", "Latency.");
    std::atomic<std::uint64_t> published{0};  // read by the callback on the scrape thread
    r.callback_gauge("published", "Published by the writer.", {}, [&] {
        return static_cast<double>(published.load(std::memory_order_relaxed));
    });

    constexpr std::uint64_t n = 300'000;
    std::atomic<bool> done{false};
    std::uint64_t expected_sum_ns = 0;

    std::thread writer([&] {
        for (std::uint64_t i = 1; i <= n; ++i) {
            ops.inc();
            level.set(static_cast<double>(i));
            latency.observe_ns(i % 50'000);
            if (i % 1000 == 0) published.store(i, std::memory_order_relaxed);
        }
        done.store(true);
    });

    std::uint64_t scrapes = 0;
    double last_ops = 0;
    std::string failure;
    std::thread scraper([&] {
        try {
            while (!done.load() || scrapes < 3) {
                // Registration races the writer too, under the registry's lock.
                r.counter_for("scrapes_total", "Scrapes.").inc();
                const auto doc = exposition::parse(m::to_prometheus(r));
                const double v = doc.value("ops_total", {{"store", "s"}});
                if (v < last_ops) throw std::runtime_error("counter went backwards");
                if (v > static_cast<double>(n)) throw std::runtime_error("counter overshot");
                if (doc.value("op_seconds_count") > static_cast<double>(n))
                    throw std::runtime_error("histogram overshot");
                last_ops = v;
                ++scrapes;
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
    });
    for (std::uint64_t i = 1; i <= n; ++i) expected_sum_ns += i % 50'000;
    writer.join();
    scraper.join();

    CHECK(failure.empty());
    CHECK(failure == "");
    CHECK(scrapes >= 3);
    CHECK(ops.value() == n);
    CHECK(level.value() == static_cast<double>(n));
    CHECK(latency.count() == n);
    CHECK(latency.sum() == Approx(static_cast<double>(expected_sum_ns) / 1e9));

    const auto doc = exposition::parse(m::to_prometheus(r));
    CHECK(doc.value("ops_total", {{"store", "s"}}) == static_cast<double>(n));
    CHECK(doc.value("op_seconds_count") == static_cast<double>(n));
    CHECK(doc.value("published") == static_cast<double>(n));
    CHECK(doc.value("scrapes_total") == static_cast<double>(scrapes));
}
