#include <strata/metrics/counter.hpp>
#include <strata/metrics/gauge.hpp>
#include <strata/metrics/histogram.hpp>
#include <strata/metrics/timer.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace m = strata::metrics;

namespace {
std::vector<std::uint64_t> cumulative(const m::histogram& h) { return h.snapshot().cumulative; }
}  // namespace

TEST_CASE("counter and gauge basics", "[metrics][histogram]") {
    m::counter c;
    CHECK(c.value() == 0);
    c.inc();
    c.inc(41);
    CHECK(c.value() == 42);

    m::gauge g;
    CHECK(g.value() == 0.0);
    g.set(2.5);
    g.add(-1);
    g.add(0.25);
    CHECK(g.value() == 1.75);
}

TEST_CASE("bucket bounds are inclusive, for seconds and nanoseconds alike", "[metrics][histogram]") {
    const std::vector<double> bounds{1e-6, 2.5e-6, 1e-3};
    m::histogram by_ns(bounds);
    m::histogram by_s(bounds);
    for (std::uint64_t ns : {0ull, 1000ull, 1001ull, 2500ull, 2501ull, 1'000'000ull, 1'000'001ull}) {
        by_ns.observe_ns(ns);
        by_s.observe(static_cast<double>(ns) / 1e9);
    }
    // le=1e-6: 0, 1000 | le=2.5e-6: +1001, 2500 | le=1e-3: +2501, 1e6 | +Inf: +1000001
    CHECK(cumulative(by_ns) == std::vector<std::uint64_t>{2, 4, 6, 7});
    CHECK(cumulative(by_s) == cumulative(by_ns));
    CHECK(by_ns.count() == 7);
    CHECK(by_ns.sum() == Approx(2'007'002e-9));
    CHECK(by_s.sum() == Approx(by_ns.sum()));

    // The literal bound itself, in seconds, is inside its bucket.
    m::histogram h(bounds);
    h.observe(2.5e-6);
    h.observe(1e-3);
    h.observe(std::nextafter(1e-3, 1.0));
    CHECK(cumulative(h) == std::vector<std::uint64_t>{0, 1, 2, 3});
}

TEST_CASE("observe_ns agrees with observe for every default bound", "[metrics][histogram]") {
    m::histogram by_ns;
    m::histogram by_s;
    auto both = [&](std::uint64_t ns) {
        by_ns.observe_ns(ns);
        by_s.observe(static_cast<double>(ns) / 1e9);
    };
    for (double b : m::histogram::default_bounds()) {
        const auto ns = static_cast<std::uint64_t>(std::llround(b * 1e9));
        for (std::uint64_t d = 0; d < 3; ++d) {
            both(ns + d);
            both(ns - d);
        }
    }
    std::mt19937_64 rng(42);
    for (int i = 0; i < 100000; ++i) both(rng() >> (rng() % 64));  // all magnitudes
    both(0);
    both(std::numeric_limits<std::uint64_t>::max());
    CHECK(cumulative(by_ns) == cumulative(by_s));

    // Each default bound holds its own value: 100 ns is in le="1e-07".
    m::histogram h;
    h.observe_ns(100);
    h.observe_ns(10'000'000'000);  // 10 s, the last finite bound
    const auto c = cumulative(h);
    CHECK(c.front() == 1);
    CHECK(c[c.size() - 2] == 2);
    CHECK(c.back() == 2);
}

TEST_CASE("arbitrary bounds stay correct", "[metrics][histogram]") {
    // Linear bounds put many bounds in one power-of-two range: a longer scan,
    // same answers.
    std::vector<double> linear;
    for (int i = 1; i <= 50; ++i) linear.push_back(i * 1e-9);
    m::histogram by_ns(linear);
    m::histogram by_s(linear);
    for (std::uint64_t ns = 0; ns <= 60; ++ns) {
        by_ns.observe_ns(ns);
        by_s.observe(static_cast<double>(ns) / 1e9);
    }
    const auto c = cumulative(by_ns);
    CHECK(c == cumulative(by_s));
    CHECK(c[0] == 2);   // 0 and 1 ns
    CHECK(c[49] == 51);  // up to 50 ns
    CHECK(c.back() == 61);

    // A bound of 0 holds exactly 0; sub-nanosecond bounds are fine too.
    const std::vector<double> tiny{0.0, 0.5e-9, 1e-9};
    m::histogram t(tiny);
    t.observe_ns(0);
    t.observe_ns(1);
    t.observe_ns(2);
    CHECK(cumulative(t) == std::vector<std::uint64_t>{1, 1, 2, 3});
}

TEST_CASE("a histogram without finite bounds still counts and sums", "[metrics][histogram]") {
    m::histogram h(std::span<const double>{});
    h.observe_ns(3);
    h.observe(0.5);
    CHECK(cumulative(h) == std::vector<std::uint64_t>{2});
    CHECK(h.sum() == Approx(0.500000003));
    CHECK(std::isnan(h.quantile(0.5)));
}

TEST_CASE("NaN observations are ignored", "[metrics][histogram]") {
    m::histogram h;
    h.observe(std::numeric_limits<double>::quiet_NaN());
    CHECK(h.count() == 0);
    CHECK(h.sum() == 0.0);
    h.observe(std::numeric_limits<double>::infinity());
    CHECK(cumulative(h).back() == 1);
    CHECK(cumulative(h)[cumulative(h).size() - 2] == 0);
}

TEST_CASE("invalid bounds are refused", "[metrics][histogram]") {
    using strata::usage_error;
    CHECK_THROWS_AS(m::histogram(std::vector<double>{1.0, 1.0}), usage_error);
    CHECK_THROWS_AS(m::histogram(std::vector<double>{2.0, 1.0}), usage_error);
    CHECK_THROWS_AS(m::histogram(std::vector<double>{-0.5}), usage_error);
    CHECK_THROWS_AS(m::histogram(std::vector<double>{1.0, std::numeric_limits<double>::infinity()}), usage_error);
    CHECK_THROWS_AS(m::histogram(std::vector<double>{std::numeric_limits<double>::quiet_NaN()}), usage_error);
}

TEST_CASE("default and exponential bounds", "[metrics][histogram]") {
    const auto d = m::histogram::default_bounds();
    REQUIRE(d.size() == 25);
    CHECK(d.front() == 100e-9);
    CHECK(d.back() == 10.0);
    for (std::size_t i = 1; i < d.size(); ++i) {
        CHECK(d[i] > d[i - 1]);
        CHECK(d[i] / d[i - 1] <= 2.5 + 1e-9);
    }
    CHECK(m::histogram::exponential_bounds(1e-6, 4, 4) == std::vector<double>{1e-6, 4e-6, 16e-6, 64e-6});
    CHECK_THROWS_AS(m::histogram::exponential_bounds(0, 2, 3), strata::usage_error);
    CHECK_THROWS_AS(m::histogram::exponential_bounds(1, 1, 3), strata::usage_error);
    CHECK_THROWS_AS(m::histogram::exponential_bounds(1, 2, 0), strata::usage_error);
}

TEST_CASE("quantiles interpolate inside the bucket", "[metrics][histogram]") {
    m::histogram h(std::vector<double>{1.0, 2.0, 4.0});
    CHECK(std::isnan(h.quantile(0.5)));
    for (int i = 0; i < 10; ++i) h.observe(0.5);  // (0, 1]
    for (int i = 0; i < 10; ++i) h.observe(1.5);  // (1, 2]
    CHECK(h.quantile(0.5) == Approx(1.0));
    CHECK(h.quantile(0.25) == Approx(0.5));
    CHECK(h.quantile(0.75) == Approx(1.5));
    CHECK(h.quantile(1.0) == Approx(2.0));
    CHECK(h.quantile(0.0) == Approx(0.0));
    CHECK(h.quantile(7.0) == Approx(2.0));  // clamped to 1
    h.observe(100.0);
    h.observe(100.0);
    // Ranks in +Inf report the highest finite bound.
    CHECK(h.quantile(0.99) == Approx(4.0));
}

TEST_CASE("a timer observes its scope once", "[metrics][histogram]") {
    m::histogram h;
    {
        auto t = m::timer(h);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(h.count() == 1);
    CHECK(h.sum() >= 0.002);
    CHECK(h.sum() < 5.0);

    {
        auto t = m::timer(h);
        const auto ns = t.stop();
        CHECK(ns < 5'000'000'000ull);
        CHECK(t.stop() == 0);  // already recorded
    }
    CHECK(h.count() == 2);

    {
        auto t = m::timer(h);
        t.cancel();
    }
    CHECK(h.count() == 2);

    try {
        auto t = m::timer(h);
        throw std::runtime_error("failed operation");
    } catch (const std::runtime_error&) {
    }
    CHECK(h.count() == 3);  // failures are timed too
}
