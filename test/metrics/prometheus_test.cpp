#include <strata/metrics/prometheus.hpp>

#include "exposition.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace m = strata::metrics;

TEST_CASE("a small registry renders exactly", "[metrics][prometheus]") {
    m::registry r;
    // Registered out of name order, with labels out of order: the text is
    // sorted by family name, then by labels.
    auto& puts = r.counter_for("strata_ops_total", "Operations done.", {{"store", "orders"}, {"op", "put"}});
    puts.inc(3);
    r.counter_for("strata_ops_total", "ignored: the first help wins", {{"op", "get"}, {"store", "orders"}}).inc();
    auto& bytes = r.gauge_for("strata_cache_bytes", "Bytes held by the cache.");
    bytes.set(1536);
    bytes.add(-512.5);
    const std::vector<double> bounds{0.25, 0.5, 1.0};
    auto& latency = r.histogram_for("strata_latency_seconds", "Latency.", {{"store", "orders"}}, bounds);
    latency.observe(0.25);              // le="0.25": the bound itself is inside
    latency.observe(0.125);             // le="0.25"
    latency.observe_ns(500'000'000);    // le="0.5"
    latency.observe(2.0);               // +Inf only
    double ratio = 0.75;
    r.callback_gauge("strata_hit_ratio", "Hits over lookups.", {}, [&ratio] { return ratio; });

    const std::string expected =
        "# HELP strata_cache_bytes Bytes held by the cache.\n"
        "# TYPE strata_cache_bytes gauge\n"
        "strata_cache_bytes 1023.5\n"
        "# HELP strata_hit_ratio Hits over lookups.\n"
        "# TYPE strata_hit_ratio gauge\n"
        "strata_hit_ratio 0.75\n"
        "# HELP strata_latency_seconds Latency.\n"
        "# TYPE strata_latency_seconds histogram\n"
        "strata_latency_seconds_bucket{store=\"orders\",le=\"0.25\"} 2\n"
        "strata_latency_seconds_bucket{store=\"orders\",le=\"0.5\"} 3\n"
        "strata_latency_seconds_bucket{store=\"orders\",le=\"1\"} 3\n"
        "strata_latency_seconds_bucket{store=\"orders\",le=\"+Inf\"} 4\n"
        "strata_latency_seconds_sum{store=\"orders\"} 2.875\n"
        "strata_latency_seconds_count{store=\"orders\"} 4\n"
        "# HELP strata_ops_total Operations done.\n"
        "# TYPE strata_ops_total counter\n"
        "strata_ops_total{op=\"get\",store=\"orders\"} 1\n"
        "strata_ops_total{op=\"put\",store=\"orders\"} 3\n";
    CHECK(m::to_prometheus(r) == expected);
    CHECK_NOTHROW(exposition::parse(expected));

    // The callback is evaluated at render time, not at registration.
    ratio = 0.5;
    const auto doc = exposition::parse(m::to_prometheus(r));
    CHECK(doc.value("strata_hit_ratio") == 0.5);
    CHECK(doc.families.at("strata_latency_seconds").type == "histogram");
}

TEST_CASE("an empty registry renders nothing", "[metrics][prometheus]") {
    m::registry r;
    CHECK(m::to_prometheus(r).empty());
}

TEST_CASE("write_prometheus appends to what is already there", "[metrics][prometheus]") {
    m::registry r;
    r.counter_for("a_total", "A.").inc(2);
    std::string out = "prefix\n";
    m::write_prometheus(out, r);
    CHECK(out == "prefix\n# HELP a_total A.\n# TYPE a_total counter\na_total 2\n");
    CHECK(m::prometheus_content_type == "text/plain; version=0.0.4; charset=utf-8");
}

TEST_CASE("label values and help text are escaped", "[metrics][prometheus]") {
    m::registry r;
    const std::string nasty = "back\\slash \"quoted\"\nsecond line";
    r.counter_for("escapes_total", "Help with a \\ backslash, \"quotes\"\nand a newline.", {{"v", nasty}}).inc();

    const std::string expected =
        "# HELP escapes_total Help with a \\\\ backslash, \"quotes\"\\nand a newline.\n"
        "# TYPE escapes_total counter\n"
        "escapes_total{v=\"back\\\\slash \\\"quoted\\\"\\nsecond line\"} 1\n";
    CHECK(m::to_prometheus(r) == expected);

    // And they read back as what was registered.
    const auto doc = exposition::parse(expected);
    CHECK(doc.families.at("escapes_total").help == "Help with a \\ backslash, \"quotes\"\nand a newline.");
    CHECK(doc.value("escapes_total", {{"v", nasty}}) == 1);
}

TEST_CASE("UTF-8 label values pass through untouched", "[metrics][prometheus]") {
    m::registry r;
    r.gauge_for("g", "G.", {{"site", "Zürich \xE2\x9C\x93"}}).set(1);
    CHECK(m::to_prometheus(r) == "# HELP g G.\n# TYPE g gauge\ng{site=\"Zürich \xE2\x9C\x93\"} 1\n");
}

TEST_CASE("special gauge values use the spellings of the format", "[metrics][prometheus]") {
    m::registry r;
    r.gauge_for("g", "G.", {{"k", "a"}}).set(std::numeric_limits<double>::infinity());
    r.gauge_for("g", "G.", {{"k", "b"}}).set(-std::numeric_limits<double>::infinity());
    r.gauge_for("g", "G.", {{"k", "c"}}).set(std::numeric_limits<double>::quiet_NaN());
    r.gauge_for("g", "G.", {{"k", "d"}}).set(-0.5);
    r.gauge_for("g", "G.", {{"k", "e"}}).set(1e21);
    r.callback_gauge("ratio", "0/0 before the first lookup.", {}, [] {
        double zero = 0;
        return zero / zero;
    });
    const std::string expected =
        "# HELP g G.\n# TYPE g gauge\n"
        "g{k=\"a\"} +Inf\n"
        "g{k=\"b\"} -Inf\n"
        "g{k=\"c\"} NaN\n"
        "g{k=\"d\"} -0.5\n"
        "g{k=\"e\"} 1e+21\n"
        "# HELP ratio 0/0 before the first lookup.\n# TYPE ratio gauge\n"
        "ratio NaN\n";
    CHECK(m::to_prometheus(r) == expected);
    CHECK_NOTHROW(exposition::parse(expected));
}

TEST_CASE("a histogram with default bounds renders readable le labels", "[metrics][prometheus]") {
    m::registry r;
    auto& h = r.histogram_for("op_seconds", "Op latency.");
    h.observe_ns(100);         // le="1e-07", inclusive
    h.observe_ns(101);         // le="2e-07"
    h.observe_ns(1'500'000);   // le="0.002"
    h.observe_ns(20'000'000'000);  // 20 s: +Inf only
    const auto text = m::to_prometheus(r);
    const auto doc = exposition::parse(text);
    CHECK(doc.value("op_seconds_bucket", {{"le", "1e-07"}}) == 1);
    CHECK(doc.value("op_seconds_bucket", {{"le", "2e-07"}}) == 2);
    CHECK(doc.value("op_seconds_bucket", {{"le", "0.001"}}) == 2);
    CHECK(doc.value("op_seconds_bucket", {{"le", "0.002"}}) == 3);
    CHECK(doc.value("op_seconds_bucket", {{"le", "10"}}) == 3);
    CHECK(doc.value("op_seconds_bucket", {{"le", "+Inf"}}) == 4);
    CHECK(doc.value("op_seconds_count") == 4);
    CHECK(doc.value("op_seconds_sum") == Approx(20.001500201));
    CHECK(text.find("op_seconds_bucket{le=\"5e-04\"} 2\n") != std::string::npos);
    // 25 finite buckets + +Inf + _sum + _count + HELP + TYPE
    CHECK(std::count(text.begin(), text.end(), '\n') == 30);
}

TEST_CASE("the validating reader rejects malformed text", "[metrics][prometheus]") {
    // Guards the guard: the reader used above must not accept just anything.
    CHECK_THROWS(exposition::parse("x 1\n"));                                   // no HELP/TYPE
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x counter\nx 1"));       // no final newline
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x counter\ny 1\n"));     // foreign sample
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x counter\nx{a=\"1} 1\n"));
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x counter\nx{a=\"\\q\"} 1\n"));
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x counter\nx one\n"));
    CHECK_THROWS(exposition::parse("# HELP x X.\n# TYPE x histogram\n"
                                   "x_bucket{le=\"1\"} 2\nx_bucket{le=\"+Inf\"} 1\nx_sum 1\nx_count 1\n"));
    CHECK_NOTHROW(exposition::parse("# HELP x X.\n# TYPE x histogram\n"
                                    "x_bucket{le=\"1\"} 1\nx_bucket{le=\"+Inf\"} 2\nx_sum 1\nx_count 2\n"));
}
