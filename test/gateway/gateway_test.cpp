// The query gateway over two running instances: a key is answered by
// either instance (locally or forwarded to its owner), scans page through
// every key exactly once, named queries run on every partition, statuses
// map onto HTTP as documented, and an owner that cannot be reached is named
// in a 503.

#include "runtime/runtime_test_support.hpp"

#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

#include <strata/decorators/all.hpp>
#include <strata/gateway/gateway.hpp>
#include <strata/runtime/application.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <strata/http/client.hpp>
#include <strata/http/server.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <set>
#include <thread>
#include <utility>

using namespace runtime_test;
namespace rt = strata::runtime;
namespace gw = strata::gateway;
using json = nlohmann::json;

namespace {

/// An HTTP server on 127.0.0.1 and a port the kernel picked: bound first
/// (the application names it as its endpoint), started with the routes.
class http_server {
public:
    http_server() : server_(options()) {}
    void start(strata::http::router r) { server_.start(std::move(r)); }
    void stop() { server_.stop(); }
    [[nodiscard]] std::string endpoint() const { return server_.endpoint(); }
    [[nodiscard]] int port() const noexcept { return server_.port(); }

private:
    static strata::http::server_options options() {
        strata::http::server_options o;
        o.io_threads = 2;
        o.body_limit = 64 * 1024;
        return o;
    }
    strata::http::server server_;
};

/// The tests' client (threads of its own), with a generous timeout.
strata::http::client& client() {
    static strata::http::client c([] {
        strata::http::client_options o;
        o.request_timeout = std::chrono::seconds(10);
        return o;
    }());
    return c;
}

std::string at(int port) { return "127.0.0.1:" + std::to_string(port); }

struct reply {
    int code = 0;
    json body;
    bool retry_after = false;
};

reply get(int port, const std::string& path) {
    const strata::http::client_result r = client().get(at(port), path);
    INFO(r.failure);
    REQUIRE(r.reply);
    reply out{r.reply->status, json::parse(r.reply->body, nullptr, false), r.reply->retry_after.has_value()};
    REQUIRE_FALSE(out.body.is_discarded());
    return out;
}

rt::application_options config(const std::string& app, const std::string& input, const test_support::temp_dir& dir,
                              const std::string& instance, const std::string& endpoint) {
    rt::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {input};
    c.state_dir = dir / instance;
    c.instance_id = instance;
    c.endpoint = endpoint;
    c.commit_interval = std::chrono::milliseconds(100);
    c.session_timeout = std::chrono::milliseconds(6000);
    return c;
}

/// Counts records per key, and keeps the last amount of each key in a second store.
struct counting {
    void operator()(auto& ctx, const auto& r) const {
        auto& counts = ctx.template store<0>();
        counts.put(r.key, counts.get(r.key).value_or(0) + 1);
        ctx.template store<1>().put(r.key, r.value.value_or(0));
    }
};

auto stores() {
    return [](rt::task_context& t) {
        return std::tuple(strata::ordered_map_store<std::string, std::int64_t>("counts") | t.logged() | strata::cached(),
                          strata::ordered_map_store<std::string, std::int64_t>("last") | t.logged());
    };
}

template <class App>
void serve(gw::gateway<App>& g) {
    g.template serve_kv<0>("counts");
    // A named query over the second store: how many keys hold at least ?min.
    g.template serve_query<1>("last", "at_least", [](const auto& s, const gw::query_args& a) {
        const std::int64_t min = std::stoll(a.at("min"));
        std::int64_t n = 0;
        for (const auto& [k, v] : s.all()) n += v >= min ? 1 : 0;
        return n;
    });
}

/// Instances a and b of one application, each with the gateway over both
/// stores (serve()) mounted on a server of its own, started; the
/// applications are not running yet.
struct two_instances {
    using app_type = decltype(rt::make_application<std::string, std::int64_t>(
        std::declval<rt::application_options>(), stores(), counting{}));

    two_instances(const std::string& app_id, const std::string& input, const test_support::temp_dir& dir)
        : a(rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a", server_a.endpoint()),
                                                           stores(), counting{})),
          b(rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "b", server_b.endpoint()),
                                                           stores(), counting{})),
          gate_a(a), gate_b(b) {
        serve(gate_a);
        serve(gate_b);
        strata::http::router ra, rb;
        gate_a.add_routes(ra);
        gate_b.add_routes(rb);
        server_a.start(std::move(ra));
        server_b.start(std::move(rb));
    }

    http_server server_a, server_b;  // first: the applications take their endpoints
    app_type a, b;
    gw::gateway<app_type> gate_a, gate_b;
};

}  // namespace

TEST_CASE("gateway: any instance answers any key, scans and queries gather every partition", "[kafka][gateway]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 150;
    const std::string app_id = kafka_test::unique_name("gw");
    const std::string input = kafka_test::make_topic("gw-in", partitions, {{"cleanup.policy", "delete"}});
    two_instances both(app_id, input, dir);
    auto &a = both.a, &b = both.b;
    http_server &server_a = both.server_a, &server_b = both.server_b;

    // Before the instance runs: 503, retry, not_running.
    const reply early = get(server_a.port(), "/strata/stores/counts/keys/k1");
    CHECK(early.code == 503);
    CHECK(early.retry_after);
    CHECK(early.body["status"] == "not_running");

    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 3'000; ++i) w.write(i, keys);
    w.flush();
    std::map<std::string, std::int64_t> counts, last;
    for (const auto& part : w.written())
        for (const auto& in : part) {
            ++counts[in.key];
            last[in.key] = in.amount;
        }

    running run_a(a);
    running run_b(b);
    REQUIRE(await_committed(app_id, input, w.written(), 60s));
    // Committed offsets say nothing about who runs what: one instance may
    // have processed every record before the other joined.
    REQUIRE(await_metadata(a, 2, 60s));
    REQUIRE(await_metadata(b, 2, 60s));

    // Both instances answer every key, one of them by forwarding.
    std::set<std::string> answered_by;
    for (const auto& [key, n] : counts) {
        for (const int port : {server_a.port(), server_b.port()}) {
            reply r;
            const auto deadline = std::chrono::steady_clock::now() + 60s;
            do {
                r = get(port, "/strata/stores/counts/keys/" + gw::url_encode(key));
                if (r.code == 200) break;
                REQUIRE(r.code == 503);  // the instances are still settling who runs what
                std::this_thread::sleep_for(50ms);
            } while (std::chrono::steady_clock::now() < deadline);
            REQUIRE(r.code == 200);
            CHECK(r.body["key"] == key);
            CHECK(r.body["value"] == n);
            CHECK(r.body["partition"] == partition_of(key, partitions));
            answered_by.insert(r.body["instance"].get<std::string>());
        }
    }
    CHECK(answered_by == std::set<std::string>{"a", "b"});
    CHECK(a.metrics().counter_for("strata_gateway_forwarded_total", "").value() > 0);
    CHECK(b.metrics().counter_for("strata_gateway_forwarded_total", "").value() > 0);

    // An absent key is a 404 wherever it is asked.
    const reply absent = get(server_b.port(), "/strata/stores/counts/keys/no-such-key");
    CHECK(absent.code == 404);
    CHECK(absent.body["status"] == "not_found");

    // Scans page through every key exactly once, from either instance.
    for (const int port : {server_a.port(), server_b.port()}) {
        std::map<std::string, std::int64_t> seen;
        std::string cursor;
        int pages = 0;
        for (;;) {
            const reply page = get(port, "/strata/stores/counts/all?limit=7" + (cursor.empty() ? "" : "&cursor=" + cursor));
            REQUIRE(page.code == 200);
            REQUIRE(page.body["items"].size() <= 7);
            for (const json& e : page.body["items"]) CHECK(seen.emplace(e["key"], e["value"]).second);
            ++pages;
            if (page.body["next"].is_null()) break;
            cursor = page.body["next"].get<std::string>();
        }
        CHECK(seen == counts);
        CHECK(pages >= keys / 7);
    }

    // A range over an ordered store: from <= key <= to, from every partition.
    const reply range = get(server_a.port(), "/strata/stores/counts/range?from=k10&to=k19&limit=1000");
    REQUIRE(range.code == 200);
    std::set<std::string> in_range;
    for (const json& e : range.body["items"]) in_range.insert(e["key"]);
    std::set<std::string> expected_range;
    for (const auto& [key, n] : counts)
        if (key >= "k10" && key <= "k19") expected_range.insert(key);
    CHECK(in_range == expected_range);
    CHECK(range.body["next"].is_null());

    // A named query, gathered from every partition or run on one key's.
    const std::int64_t min = 7;
    std::int64_t expected_at_least = 0;
    for (const auto& [key, v] : last) expected_at_least += v >= min ? 1 : 0;
    const reply all = get(server_b.port(), "/strata/stores/last/queries/at_least?min=7");
    REQUIRE(all.code == 200);
    REQUIRE(all.body["results"].size() == partitions);
    std::int64_t sum = 0;
    for (const json& r : all.body["results"]) sum += r["result"].get<std::int64_t>();
    CHECK(sum == expected_at_least);
    const reply one = get(server_a.port(), "/strata/stores/last/queries/at_least?min=0&key=k3");
    REQUIRE(one.code == 200);
    REQUIRE(one.body["results"].size() == 1);
    CHECK(one.body["results"][0]["partition"] == partition_of("k3", partitions));

    // Mistakes are 4xx with a status that names them.
    CHECK(get(server_a.port(), "/strata/stores/nope/keys/k1").body["status"] == "unknown_store");
    CHECK(get(server_a.port(), "/strata/stores/counts/all?limit=0").code == 400);
    CHECK(get(server_a.port(), "/strata/stores/counts/all?limit=5000").code == 400);
    CHECK(get(server_a.port(), "/strata/stores/counts/all?cursor=zz~1").code == 400);
    CHECK(get(server_a.port(), "/strata/stores/counts/range?from=k1").code == 400);
    CHECK(get(server_a.port(), "/strata/stores/last/queries/nope").code == 404);
    CHECK(get(server_a.port(), "/strata/stores/counts/keys/k1?position=x").code == 400);

    // Read your writes: a position not yet processed is a 504 after the wait
    // (asked again while the partition still moves: 503, as above; a
    // ThreadSanitizer run found k1's partition moving this late).
    const std::int32_t p1 = partition_of("k1", partitions);
    reply late;
    for (const auto until = std::chrono::steady_clock::now() + 60s;;) {
        late = get(server_a.port(), "/strata/stores/counts/keys/k1?wait_ms=200&position=" +
                                        std::to_string(w.written()[static_cast<std::size_t>(p1)].size() + 5));
        if (late.code != 503 || std::chrono::steady_clock::now() >= until) break;
        std::this_thread::sleep_for(50ms);
    }
    CHECK(late.code == 504);
    CHECK(late.body["status"] == "position_not_reached");

    // The metadata.
    const reply md = get(server_b.port(), "/strata/instances");
    REQUIRE(md.code == 200);
    CHECK(md.body["instances"].size() == 2);
    CHECK(md.body["partitions"].size() == partitions);

    // An owner whose gateway is gone: the other instance says whom it tried.
    server_b.stop();
    std::string owned_by_b;
    for (const auto& [key, n] : counts)
        if (a.metadata()->for_key(key).active == "b") owned_by_b = key;
    REQUIRE_FALSE(owned_by_b.empty());
    const reply unreachable = get(server_a.port(), "/strata/stores/counts/keys/" + owned_by_b);
    CHECK(unreachable.code == 503);
    CHECK(unreachable.retry_after);
    CHECK(unreachable.body["status"] == "owner_unreachable");
    CHECK(unreachable.body["owner"] == "b");
    CHECK(unreachable.body["owner_endpoint"] == server_b.endpoint());
    // ... unless a standby may answer: b's key is not kept on a (no standbys
    // here), so it stays a 503.
    CHECK(get(server_a.port(), "/strata/stores/counts/keys/" + owned_by_b + "?allow_standby=true").code == 503);
    run_b.stop();
    run_a.stop();
}

namespace {

/// Whatever came back, JSON or not (body_text keeps it as sent).
struct raw_reply {
    int code = 0;  // 0: no answer
    std::string body_text;
    json body;
    std::string content_type;
};

raw_reply send(int port, const std::string& method, const std::string& path, const std::string& body = {},
               const std::string& content_type = "application/json") {
    using strata::http::beast_http::verb;
    const verb v = method == "GET" ? verb::get : method == "POST" ? verb::post : method == "PUT" ? verb::put : verb::delete_;
    strata::http::header_list headers;
    if (!body.empty()) headers.emplace_back("Content-Type", content_type);
    const strata::http::client_result r = client().request(v, at(port), path, headers, body);
    if (!r.reply) return {};
    return {r.reply->status, r.reply->body, json::parse(r.reply->body, nullptr, false), r.reply->content_type};
}

/// The one error body every 4xx and 5xx has: a JSON object with a string
/// "status" and a non-empty string "error".
void require_error_body(const raw_reply& r, int code, const std::string& status) {
    INFO("HTTP " << r.code << " body [" << r.body_text.substr(0, 300) << "]");
    REQUIRE(r.code == code);
    REQUIRE(r.content_type == "application/json");
    REQUIRE(r.body.is_object());
    REQUIRE(r.body.contains("status"));
    CHECK(r.body["status"] == status);
    REQUIRE(r.body.contains("error"));
    REQUIRE(r.body["error"].is_string());
    CHECK_FALSE(r.body["error"].get<std::string>().empty());
}

}  // namespace

TEST_CASE("gateway: a global store is answered by whichever instance is asked, by key and page by page",
          "[kafka][gateway][global]") {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("gw-global");
    const std::string input = kafka_test::make_topic("gw-global-in", 2, {{"cleanup.policy", "delete"}});
    const std::string table = kafka_test::make_topic("gw-global-table", 3);  // compacted reference data
    {
        input_writer t(table, 3);
        for (std::int64_t i = 0; i < 300; ++i) t.write(i, 100);  // 100 keys, the last amount of each wins
        t.flush();
    }
    std::map<std::string, std::int64_t> expected;
    for (std::int64_t i = 0; i < 300; ++i) expected[key_of(i, 100)] = amount_of(i);
    two_instances both(app_id, input, dir);
    const auto global = [&] {
        return rt::make_global_store<std::string, std::int64_t>(
            {.topic = table}, strata::ordered_map_store<std::string, std::int64_t>("table"));
    };
    auto ga = global(), gb = global();
    both.a.add_global_store(ga);
    both.b.add_global_store(gb);
    both.gate_a.serve_global("table", ga);
    both.gate_b.serve_global("table", gb);

    // Before the bootstrap: 503, restoring.
    const reply early = get(both.server_a.port(), "/strata/stores/table/keys/k1");
    CHECK(early.code == 503);
    CHECK(early.body["status"] == "restoring");

    running run_a(both.a);
    running run_b(both.b);
    REQUIRE(await_metadata(both.a, 2, 60s));
    REQUIRE(await_metadata(both.b, 2, 60s));
    for (const auto& [port, instance] : {std::pair{both.server_a.port(), "a"}, std::pair{both.server_b.port(), "b"}}) {
        for (const auto& [key, v] : expected) {
            const reply r = get(port, "/strata/stores/table/keys/" + key);
            REQUIRE(r.code == 200);
            CHECK(r.body["value"] == v);
            CHECK(r.body["global"] == true);
            CHECK(r.body["instance"] == instance);  // answered where asked: every instance holds it all
        }
        CHECK(get(port, "/strata/stores/table/keys/no-such-key").code == 404);
        // Every key once, page by page, in key order.
        std::vector<std::string> seen;
        std::string cursor;
        for (;;) {
            const reply page = get(port, "/strata/stores/table/all?limit=9" + (cursor.empty() ? "" : "&cursor=" + cursor));
            REQUIRE(page.code == 200);
            for (const json& e : page.body["items"]) {
                seen.push_back(e["key"]);
                CHECK(e["value"] == expected.at(e["key"]));
            }
            if (page.body["next"].is_null()) break;
            cursor = page.body["next"].get<std::string>();
        }
        std::vector<std::string> keys;
        for (const auto& [key, v] : expected) keys.push_back(key);
        CHECK(seen == keys);
        // A range, the store being ordered.
        const reply range = get(port, "/strata/stores/table/range?from=k10&to=k19&limit=100");
        REQUIRE(range.code == 200);
        CHECK(range.body["items"].size() == 10);
    }
    CHECK(both.a.metrics().counter_for("strata_gateway_forwarded_total", "").value() == 0);
    run_b.stop();
    run_a.stop();
}

TEST_CASE("gateway: a record whose key JSON cannot carry is skipped and counted while scans and key reads still answer",
          "[kafka][gateway]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 20;
    const std::string app_id = kafka_test::unique_name("gw-bad");
    const std::string input = kafka_test::make_topic("gw-bad-in", partitions, {{"cleanup.policy", "delete"}});
    // Written by another producer: the key is not UTF-8, so no JSON string holds it.
    const std::string bad_key = std::string("bad-\xff\xfe-") + "key";
    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 200; ++i) w.write(i, keys);
    w.flush();
    {
        strata::kafka::producer p(strata::kafka::producer_options{kafka_test::bootstrap(), std::nullopt, {}});
        strata::kafka::delivery_tracker& t = p.new_tracker();
        const strata::kafka::unique_topic rkt(rd_kafka_topic_new(p.get(), input.c_str(), nullptr));
        const strata::byte_buffer value = strata::encode(std::int64_t{5});
        p.produce(rkt.get(), partition_of(bad_key, partitions), strata::as_bytes(bad_key), strata::bytes_view(value), t);
        p.wait(t);
        REQUIRE_FALSE(t.has_failed());
    }
    partitioned_input written = w.written();
    written[static_cast<std::size_t>(partition_of(bad_key, partitions))].push_back({bad_key, 5});

    two_instances both(app_id, input, dir);
    auto &a = both.a, &b = both.b;
    http_server &server_a = both.server_a, &server_b = both.server_b;
    running run_a(a);
    running run_b(b);
    REQUIRE(await_committed(app_id, input, written, 60s));
    REQUIRE(await_metadata(a, 2, 60s));
    REQUIRE(await_metadata(b, 2, 60s));

    std::map<std::string, std::int64_t> counts;
    for (const auto& part : w.written())
        for (const auto& in : part) ++counts[in.key];

    // Every page of a scan answers, from either instance, and holds every
    // other key exactly once: the record that cannot be rendered is left out.
    const auto unrenderable = [&] {
        return a.metrics().counter_for("strata_gateway_unrenderable_records_total", "").value() +
               b.metrics().counter_for("strata_gateway_unrenderable_records_total", "").value();
    };
    for (const int port : {server_a.port(), server_b.port()}) {
        std::map<std::string, std::int64_t> seen;
        std::string cursor;
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        for (;;) {
            const raw_reply page =
                send(port, "GET", "/strata/stores/counts/all?limit=3" + (cursor.empty() ? "" : "&cursor=" + cursor));
            INFO("page answered " << page.code << " [" << page.body_text.substr(0, 300) << "]");
            if (page.code == 503 && std::chrono::steady_clock::now() < deadline) {  // still settling who runs what
                std::this_thread::sleep_for(50ms);
                continue;
            }
            REQUIRE(page.code == 200);
            for (const json& e : page.body["items"]) CHECK(seen.emplace(e["key"], e["value"]).second);
            if (page.body["next"].is_null()) break;
            cursor = page.body["next"].get<std::string>();
        }
        CHECK(seen == counts);
    }
    CHECK(unrenderable() > 0);

    // A key read of it, on either instance, is a JSON error that names the
    // problem (the key is refused before any store is read), not a failed
    // JSON dump on the owner.
    for (const int port : {server_a.port(), server_b.port()}) {
        const raw_reply r = send(port, "GET", "/strata/stores/counts/keys/" + gw::url_encode(bad_key));
        require_error_body(r, 400, "bad_request");
        CHECK(r.body["error"].get<std::string>().find("UTF-8") != std::string::npos);
    }
    // The good keys still read.
    const raw_reply good = send(server_b.port(), "GET", "/strata/stores/counts/keys/k3");
    REQUIRE(good.code == 200);
    CHECK(good.body["value"] == counts.at("k3"));

    run_b.stop();
    run_a.stop();
}

TEST_CASE("gateway: every error (the HTTP server's own too) has the JSON error body", "[kafka][gateway]") {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("gw-err");
    const std::string input = kafka_test::make_topic("gw-err-in", 1, {{"cleanup.policy", "delete"}});
    http_server server;
    auto app = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a", server.endpoint()),
                                                              stores(), counting{});
    gw::gateway gate(app);
    serve(gate);
    strata::http::router routes;
    gate.add_routes(routes);
    // A route of the user's own that fails: the server's exception path.
    routes.route_inline(strata::http::beast_http::verb::get, "/fails", [](const strata::http::exchange&) -> strata::http::response {
        throw std::runtime_error("the handler failed");
    });
    server.start(std::move(routes));
    const int port = server.port();

    require_error_body(send(port, "GET", "/no/such/route"), 404, "not_found");
    require_error_body(send(port, "GET", "/strata/stores/nope/keys/k1"), 404, "unknown_store");
    require_error_body(send(port, "GET", "/strata/stores/counts/all?limit=0"), 400, "bad_request");
    require_error_body(send(port, "GET", "/strata/stores/counts/keys/" + std::string(10'000, 'k')), 414, "uri_too_long");
    require_error_body(send(port, "POST", "/strata/stores/counts/keys/k1", "{}"), 405, "method_not_allowed");
    require_error_body(send(port, "POST", "/strata/instances", std::string(100'000, 'x'), "application/x-www-form-urlencoded"),
                       413, "body_too_large");
    const raw_reply failed = send(port, "GET", "/fails");
    require_error_body(failed, 500, "internal_error");
    CHECK(failed.body["error"].get<std::string>().find("the handler failed") != std::string::npos);
    // A key that is not UTF-8, refused before any store is read: the message
    // quotes it percent-encoded, so the error body itself stays valid JSON.
    const raw_reply bad = send(port, "GET", "/strata/stores/counts/keys/%C3%28x");
    require_error_body(bad, 400, "bad_request");
    CHECK(bad.body["error"].get<std::string>().find("%C3%28x") != std::string::npos);
    // A parameter that quotes bytes that are not UTF-8 back is still JSON.
    require_error_body(send(port, "GET", "/strata/stores/counts/keys/k1?position=%FF"), 400, "bad_request");
}

TEST_CASE("gateway: over TLS with a token and a peers' secret, reads need the token, only peers may mark a request "
          "forwarded, and forwarding still answers every key",
          "[kafka][gateway][tls]") {
    test_support::temp_dir dir;
    const std::string certs = (dir / "certs").string();
    REQUIRE(test_support::make_test_certs(certs));
    constexpr std::int32_t partitions = 4;
    constexpr int keys = 40;
    const std::string app_id = kafka_test::unique_name("gw-tls");
    const std::string input = kafka_test::make_topic("gw-tls-in", partitions, {{"cleanup.policy", "delete"}});

    strata::http::server_options so;
    so.io_threads = 2;
    so.tls = strata::http::tls_options{certs + "/server.pem", certs + "/server.key", ""};
    strata::http::server server_a(so), server_b(so);
    gw::gateway_options go;
    go.bearer_token = "reader-token";
    go.peer_secret = "peers-only";
    go.peer_tls = strata::http::client_tls_options{certs + "/ca.pem", "", ""};
    auto a = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "a", server_a.endpoint()),
                                                            stores(), counting{});
    auto b = rt::make_application<std::string, std::int64_t>(config(app_id, input, dir, "b", server_b.endpoint()),
                                                            stores(), counting{});
    gw::gateway gate_a(a, go), gate_b(b, go);
    serve(gate_a);
    serve(gate_b);
    strata::http::router ra, rb;
    gate_a.add_routes(ra);
    gate_b.add_routes(rb);
    server_a.start(std::move(ra));
    server_b.start(std::move(rb));

    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 400; ++i) w.write(i, keys);
    w.flush();
    std::map<std::string, std::int64_t> counts;
    for (const auto& part : w.written())
        for (const auto& in : part) ++counts[in.key];
    running run_a(a);
    running run_b(b);
    REQUIRE(await_committed(app_id, input, w.written(), 60s));
    REQUIRE(await_metadata(a, 2, 60s));
    REQUIRE(await_metadata(b, 2, 60s));

    strata::http::client_options co;
    co.tls = strata::http::client_tls_options{certs + "/ca.pem", "", ""};
    co.request_timeout = 10s;
    strata::http::client c(co);
    const auto ask = [&](const strata::http::server& s, const std::string& path, strata::http::header_list headers) {
        const strata::http::client_result r = c.get(s.endpoint(), path, std::move(headers));
        INFO(r.failure);
        REQUIRE(r.reply);
        return reply{r.reply->status, json::parse(r.reply->body, nullptr, false), r.reply->retry_after.has_value()};
    };
    const strata::http::header_list token{{"Authorization", "Bearer reader-token"}};

    const reply none = ask(server_a, "/strata/instances", {});
    CHECK(none.code == 401);
    CHECK(none.body["status"] == "unauthorized");
    const reply wrong = ask(server_a, "/strata/stores/counts/keys/k1", {{"Authorization", "Bearer guess"}});
    CHECK(wrong.code == 403);
    CHECK(wrong.body["status"] == "forbidden");

    // Every key from either instance, over TLS, forwarded with the secret.
    for (const auto& [key, n] : counts) {
        for (const strata::http::server* s : {&server_a, &server_b}) {
            reply r;
            const auto deadline = std::chrono::steady_clock::now() + 60s;
            do {
                r = ask(*s, "/strata/stores/counts/keys/" + gw::url_encode(key), token);
                if (r.code == 200) break;
                REQUIRE(r.code == 503);
                std::this_thread::sleep_for(50ms);
            } while (std::chrono::steady_clock::now() < deadline);
            REQUIRE(r.code == 200);
            CHECK(r.body["value"] == n);
        }
    }
    CHECK(a.metrics().counter_for("strata_gateway_forwarded_total", "").value() > 0);
    CHECK(a.metrics().counter_for("strata_gateway_forward_failures_total", "").value() == 0);

    // The forwarded marker from a client without the secret: refused.
    strata::http::header_list forged = token;
    forged.emplace_back("X-Strata-Forwarded", "b");
    const reply refused = ask(server_a, "/strata/stores/counts/keys/k1", forged);
    CHECK(refused.code == 403);
    CHECK(refused.body["error"] == "only another instance of the application may send X-Strata-Forwarded");
    forged.emplace_back("X-Strata-Peer-Secret", "peers-only");
    const reply admitted = ask(server_a, "/strata/stores/counts/keys/k1", forged);
    CHECK((admitted.code == 200 || admitted.body["status"] == "not_owned"));  // answered here or refused, never forwarded
    run_a.stop();
    run_b.stop();
}
