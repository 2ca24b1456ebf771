#include <strata/metrics/prometheus.hpp>
#include <strata/metrics/registry.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace m = strata::metrics;
using Catch::Matchers::Contains;

TEST_CASE("same name and labels give the same object", "[metrics][registry]") {
    m::registry r;
    auto& a = r.counter_for("ops_total", "Ops.", {{"store", "s"}, {"op", "get"}});
    auto& b = r.counter_for("ops_total", "Ops.", {{"op", "get"}, {"store", "s"}});  // order is irrelevant
    auto& c = r.counter_for("ops_total", "Ops.", {{"op", "put"}, {"store", "s"}});
    CHECK(&a == &b);
    CHECK(&a != &c);
    a.inc(2);
    b.inc();
    CHECK(a.value() == 3);
    CHECK(c.value() == 0);

    auto& g1 = r.gauge_for("level", "Level.");
    auto& g2 = r.gauge_for("level", "Level.", {});
    CHECK(&g1 == &g2);

    auto& h1 = r.histogram_for("lat_seconds", "Latency.", {{"op", "get"}});
    auto& h2 = r.histogram_for("lat_seconds", "Latency.", {{"op", "get"}});
    CHECK(&h1 == &h2);
}

TEST_CASE("references stay valid while the registry grows", "[metrics][registry]") {
    m::registry r;
    auto& first = r.counter_for("c_total", "C.", {{"i", "first"}});
    auto& hist = r.histogram_for("h_seconds", "H.");
    first.inc(7);
    hist.observe_ns(5);
    for (int i = 0; i < 2000; ++i) {
        r.counter_for("c_total", "C.", {{"i", std::to_string(i)}}).inc();
        r.gauge_for("g" + std::to_string(i), "G.").set(i);
    }
    CHECK(&r.counter_for("c_total", "C.", {{"i", "first"}}) == &first);
    CHECK(&r.histogram_for("h_seconds", "H.") == &hist);
    CHECK(first.value() == 7);
    CHECK(hist.count() == 1);
}

TEST_CASE("one name has one type", "[metrics][registry]") {
    m::registry r;
    r.counter_for("x", "X.");
    CHECK_THROWS_AS(r.gauge_for("x", "X."), strata::usage_error);
    CHECK_THROWS_WITH(r.gauge_for("x", "X.", {{"other", "labels"}}),
                      Contains("'x' is already registered as a counter") && Contains("gauge"));
    CHECK_THROWS_WITH(r.histogram_for("x", "X."), Contains("cannot also be a histogram"));
    CHECK_THROWS_WITH(r.callback_gauge("x", "X.", {}, [] { return 1.0; }),
                      Contains("already registered as a counter"));
    r.gauge_for("y", "Y.");
    CHECK_THROWS_WITH(r.counter_for("y", "Y."), Contains("already registered as a gauge"));
    // The failed attempts left nothing behind.
    CHECK(m::to_prometheus(r) == "# HELP x X.\n# TYPE x counter\nx 0\n# HELP y Y.\n# TYPE y gauge\ny 0\n");
}

TEST_CASE("invalid metric and label names are refused", "[metrics][registry]") {
    m::registry r;
    for (const char* bad : {"", "1st", "with-dash", "with space", "dotted.name", "ünicode"})
        CHECK_THROWS_WITH(r.counter_for(bad, "Bad."), Contains("invalid metric name"));
    for (const char* good : {"a", "_a", "a:b", ":a", "A_1_total"}) CHECK_NOTHROW(r.counter_for(good, "Good."));

    for (const char* bad : {"", "1a", "a-b", "a:b", "__reserved"})
        CHECK_THROWS_WITH(r.counter_for("c", "C.", {{bad, "v"}}), Contains("invalid label name"));
    CHECK_NOTHROW(r.counter_for("c", "C.", {{"_ok", "v"}, {"ok_2", ""}}));

    CHECK_THROWS_WITH(r.counter_for("c", "C.", {{"a", "1"}, {"b", "2"}, {"a", "3"}}),
                      Contains("label 'a' appears twice"));
    CHECK_THROWS_WITH(r.histogram_for("h", "H.", {{"le", "1"}}), Contains("reserved for bucket bounds"));
    CHECK_NOTHROW(r.counter_for("not_a_histogram_total", "le is fine here.", {{"le", "1"}}));
}

TEST_CASE("histogram series names are reserved", "[metrics][registry]") {
    m::registry r;
    r.histogram_for("lat", "L.");
    CHECK_THROWS_WITH(r.counter_for("lat_count", "C."), Contains("collides with the series of histogram 'lat'"));
    CHECK_THROWS(r.gauge_for("lat_sum", "S."));
    CHECK_THROWS(r.gauge_for("lat_bucket", "B."));
    CHECK_NOTHROW(r.gauge_for("lat_other", "O."));

    r.counter_for("req_count", "C.");
    CHECK_THROWS_WITH(r.histogram_for("req", "R."), Contains("would render series 'req_count'"));
}

TEST_CASE("histogram bounds belong to the family", "[metrics][registry]") {
    m::registry r;
    const std::vector<double> bounds{0.001, 0.01};
    auto& a = r.histogram_for("h", "H.", {{"op", "a"}}, bounds);
    CHECK(std::vector<double>(a.bounds().begin(), a.bounds().end()) == bounds);
    // Without bounds: the family's bounds, for old and new series alike.
    CHECK(&r.histogram_for("h", "H.", {{"op", "a"}}) == &a);
    auto& b = r.histogram_for("h", "H.", {{"op", "b"}});
    CHECK(std::vector<double>(b.bounds().begin(), b.bounds().end()) == bounds);
    // Other bounds are refused.
    const std::vector<double> other{0.001, 0.1};
    CHECK_THROWS_WITH(r.histogram_for("h", "H.", {{"op", "a"}}, other), Contains("different bucket bounds"));
    CHECK_THROWS_WITH(r.histogram_for("h", "H.", {{"op", "c"}}, other), Contains("different bucket bounds"));
    // A new family without bounds gets the defaults.
    auto& d = r.histogram_for("d", "D.");
    CHECK(d.bounds().size() == m::histogram::default_bounds().size());
}

TEST_CASE("a histogram with bad bounds is not registered", "[metrics][registry]") {
    m::registry r;
    const std::vector<double> descending{0.1, 0.01};
    CHECK_THROWS_WITH(r.histogram_for("h", "H.", {}, descending), Contains("strictly ascending"));
    const std::vector<double> negative{-1.0, 1.0};
    CHECK_THROWS_WITH(r.histogram_for("h", "H.", {}, negative), Contains("finite and >= 0"));
    CHECK(m::to_prometheus(r).empty());
    // The name is still free, for any type.
    CHECK_NOTHROW(r.counter_for("h", "Now a counter."));
}

TEST_CASE("callback gauges are evaluated at render time", "[metrics][registry]") {
    m::registry r;
    int calls = 0;
    double hits = 3, lookups = 4;
    r.callback_gauge("hit_ratio", "Hits per lookup.", {{"store", "s"}}, [&] {
        ++calls;
        return hits / lookups;
    });
    CHECK(calls == 0);
    CHECK(m::to_prometheus(r) ==
          "# HELP hit_ratio Hits per lookup.\n# TYPE hit_ratio gauge\nhit_ratio{store=\"s\"} 0.75\n");
    CHECK(calls == 1);
    hits = 1;
    CHECK(m::to_prometheus(r).find("hit_ratio{store=\"s\"} 0.25\n") != std::string::npos);
    CHECK(calls == 2);

    SECTION("registering again replaces the callback") {
        r.callback_gauge("hit_ratio", "Hits per lookup.", {{"store", "s"}}, [] { return 1.0; });
        CHECK(m::to_prometheus(r).find("hit_ratio{store=\"s\"} 1\n") != std::string::npos);
        CHECK(calls == 2);
    }
    SECTION("a removed callback is never called again, and its empty family disappears") {
        CHECK(r.remove_callback_gauge("hit_ratio", {{"store", "s"}}));
        CHECK(m::to_prometheus(r).empty());
        CHECK(calls == 2);
        CHECK_FALSE(r.remove_callback_gauge("hit_ratio", {{"store", "s"}}));
        CHECK_FALSE(r.remove_callback_gauge("never_there", {}));
    }
    SECTION("stored and callback gauges share a family but not a series") {
        auto& g = r.gauge_for("hit_ratio", "Hits per lookup.", {{"store", "t"}});
        g.set(0.5);
        CHECK(m::to_prometheus(r) ==
              "# HELP hit_ratio Hits per lookup.\n# TYPE hit_ratio gauge\n"
              "hit_ratio{store=\"s\"} 0.25\nhit_ratio{store=\"t\"} 0.5\n");
        CHECK_THROWS_WITH(r.gauge_for("hit_ratio", "H.", {{"store", "s"}}), Contains("already has a callback gauge"));
        CHECK_THROWS_WITH(r.callback_gauge("hit_ratio", "H.", {{"store", "t"}}, [] { return 0.0; }),
                          Contains("already has a stored gauge"));
        CHECK_THROWS_WITH(r.remove_callback_gauge("hit_ratio", {{"store", "t"}}), Contains("not a callback gauge"));
        // Removing the callback leaves the stored gauge, and its family.
        CHECK(r.remove_callback_gauge("hit_ratio", {{"store", "s"}}));
        CHECK(m::to_prometheus(r) ==
              "# HELP hit_ratio Hits per lookup.\n# TYPE hit_ratio gauge\nhit_ratio{store=\"t\"} 0.5\n");
    }
    SECTION("an empty function is refused") {
        CHECK_THROWS_WITH(r.callback_gauge("other", "O.", {}, std::function<double()>{}), Contains("empty"));
    }
}

TEST_CASE("for_each_family shows families in name order with sorted labels", "[metrics][registry]") {
    m::registry r;
    r.gauge_for("b", "B.", {{"z", "1"}, {"a", "2"}});
    r.counter_for("a_total", "A.");
    std::vector<std::string> seen;
    r.for_each_family([&](const m::family_view& f) {
        seen.emplace_back(f.name);
        REQUIRE(f.series.size() == 1);
        if (f.name == "b") {
            CHECK(f.type == m::metric_type::gauge);
            CHECK(f.series[0].label_set == m::labels{{"a", "2"}, {"z", "1"}});
            CHECK(std::holds_alternative<const m::gauge*>(f.series[0].metric));
        } else {
            CHECK(f.type == m::metric_type::counter);
            CHECK(f.series[0].label_set.empty());
        }
    });
    CHECK(seen == std::vector<std::string>{"a_total", "b"});
    CHECK(m::to_string(m::metric_type::histogram) == "histogram");
}
