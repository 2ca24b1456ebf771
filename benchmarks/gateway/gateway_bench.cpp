// Latency of a GET through the query gateway, against the transport's own
// ceiling, in one run on one machine:
//
//   constant   the same HTTP server (strata::http, keep-alive)
//              answering every GET with a fixed JSON body of the same size:
//              what any answer costs before strata does anything
//   local      GET /strata/stores/totals/keys/{key} asked of the instance
//              that runs the key's partition
//   forwarded  the same GET asked of the other instance, which forwards it
//              to the owner and passes the answer back
// and three controls: "constant on a" (the constant from instance a's
// server, beside the gateway's routes), "local, timed inside" (the gateway's
// get() timed inside the I/O thread's handler) and "constant, relayed" (a's server
// relaying to the constant server: the transport's floor for a forwarded
// GET), which tell the transport and the threads' scheduling from strata's
// own work.
//
// Two instances of one application (in this process, each with its own
// gateway and server on 127.0.0.1) over a topic of 6 partitions; one client
// thread asks sequentially over keep-alive connections. The three kinds take
// turns in blocks, so a drift of the machine favours none. Prints a Markdown
// table of medians over the repetitions (p50, p99, ratio to constant) and a
// JSON line.
//
//   gateway_bench --bootstrap 127.0.0.1:9092 [--keys 10000] [--requests 20000] [--reps 3]

#include <strata/decorators/all.hpp>
#include <strata/gateway/gateway.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <strata/http/client.hpp>
#include <strata/http/server.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace rt = strata::runtime;
namespace gw = strata::gateway;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

struct options {
    std::string bootstrap = "127.0.0.1:9092";
    std::int64_t keys = 10'000;
    std::int64_t requests = 20'000;  // per kind and repetition
    int reps = 3;
    std::int32_t partitions = 6;
};

std::string key_of(std::int64_t i) { return "key-" + std::to_string(i); }

/// A server on 127.0.0.1 and a port the kernel picked: bound at once,
/// serving its routes from start().
class server {
public:
    server() : s_(strata::http::server_options{}) {}
    void start() { s_.start(std::move(routes_)); }
    strata::http::router& get() { return routes_; }
    int port() const { return s_.port(); }
    std::string endpoint() const { return s_.endpoint(); }

private:
    strata::http::server s_;
    strata::http::router routes_;
};

using verb = strata::http::beast_http::verb;

std::string at(int port) { return "127.0.0.1:" + std::to_string(port); }

auto make_app(const options& o, const std::string& app_id, const std::string& topic, const std::string& instance,
              const std::string& endpoint, const std::filesystem::path& state) {
    rt::application_options c;
    c.application_id = app_id;
    c.bootstrap_servers = o.bootstrap;
    c.input_topics = {topic};
    c.state_dir = state / instance;
    c.instance_id = instance;
    c.endpoint = endpoint;
    c.session_timeout = std::chrono::milliseconds(6000);
    c.commit_interval = std::chrono::milliseconds(200);
    return rt::make_application<std::string, std::int64_t>(
        c,
        [](rt::task_context& t) {
            return strata::hash_map_store<std::string, std::int64_t>("totals") | t.logged() | strata::cached() |
                   t.metered();
        },
        [](auto& ctx, const auto& r) {
            auto& s = ctx.stores();
            s.put(r.key, s.get(r.key).value_or(0) + r.value.value_or(0));
        });
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

}  // namespace

int main(int argc, char** argv) {
    options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--bootstrap") o.bootstrap = v;
        else if (a == "--keys") o.keys = std::stoll(v);
        else if (a == "--requests") o.requests = std::stoll(v);
        else if (a == "--reps") o.reps = std::stoi(v);
        else {
            std::cerr << "gateway_bench: unknown option " << a << "\n";
            return 2;
        }
    }
    try {
        const std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(rt::wall_clock_ms());
        const std::string app_id = "gwbench-" + suffix, topic = "gwbench-in-" + suffix;
        const std::filesystem::path state = std::filesystem::temp_directory_path() / ("gwbench-" + suffix);
        strata::kafka::topic_options t;
        t.bootstrap_servers = o.bootstrap;
        t.partitions = o.partitions;
        t.topic_configs = {{"cleanup.policy", "delete"}};
        t.require_compaction = false;
        (void)strata::kafka::ensure_topic(topic, t);
        {
            strata::kafka::producer p(strata::kafka::producer_options{o.bootstrap, std::nullopt, {{"linger.ms", "5"}}});
            auto& tracker = p.new_tracker();
            const strata::kafka::unique_topic rkt(rd_kafka_topic_new(p.get(), topic.c_str(), nullptr));
            for (std::int64_t i = 0; i < o.keys; ++i) {
                const std::string k = key_of(i);
                const strata::byte_buffer v = strata::encode(std::int64_t{i});
                p.produce(rkt.get(), rt::partition_for(k, o.partitions), strata::as_bytes(k), strata::bytes_view(v), tracker);
            }
            p.wait(tracker);
            if (tracker.has_failed()) throw std::runtime_error("writing the keys failed");
        }

        server server_a, server_b, constant;
        auto a = make_app(o, app_id, topic, "a", server_a.endpoint(), state);
        auto b = make_app(o, app_id, topic, "b", server_b.endpoint(), state);
        gw::gateway gate_a(a), gate_b(b);
        gate_a.serve_kv<0>("totals");
        gate_b.serve_kv<0>("totals");
        gate_a.add_routes(server_a.get());
        gate_b.add_routes(server_b.get());
        // The ceiling: the same server, the same route shape, a body of the
        // same size as a real answer, computed once.
        const std::string fixed =
            json{{"key", key_of(1234)}, {"partition", 3}, {"position", 1666}, {"value", 1234}, {"instance", "a"}}.dump();
        // The same constant from instance a's server, to tell the server's
        // surroundings from the gateway's work.
        server_a.get().route_inline(verb::get, "/constant",
                                    [&](const strata::http::exchange&) { return strata::http::response(200, fixed); });
        // The transport's floor for a forwarded GET: instance a's server
        // relays to the constant server over a keep-alive client, nothing else.
        strata::http::client relay;
        server_a.get().route_async(verb::get, "/relay/{*}", [&](const strata::http::exchange& ex) {
            relay.async_get(at(constant.port()), "/strata/stores/totals/keys/" + ex.capture(0), {},
                            [ex](strata::http::client_result r) {
                                if (!r.reply) ex.respond(strata::http::error_response(502, r.failure));
                                else ex.respond(strata::http::response(200, std::move(r.reply->body)));
                            });
        });
        // The gateway's work inside a local GET as the I/O thread's handler does it.
        std::mutex in_handler_mutex;
        std::vector<double> in_handler;
        server_a.get().route_inline(verb::get, "/timed/{*}", [&](const strata::http::exchange& ex) {
            const auto start = clock_type::now();
            strata::http::response res = gate_a.get("totals", ex.capture(0), gw::request_options{}).to_response();
            const double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
            const std::lock_guard lock(in_handler_mutex);
            in_handler.push_back(us);
            return res;
        });
        constant.get().route_inline(verb::get, "/strata/stores/{}/keys/{*}",
                                    [&](const strata::http::exchange&) { return strata::http::response(200, fixed); });
        server_a.start();
        server_b.start();
        constant.start();
        auto run_a = std::async(std::launch::async, [&] { a.run(); });
        auto run_b = std::async(std::launch::async, [&] { b.run(); });

        // Settle: both instances run partitions, and every key answers from a.
        std::vector<std::string> local, remote;  // keys a runs, keys b runs
        const auto deadline = clock_type::now() + std::chrono::seconds(120);
        strata::http::client to_a;
        for (;;) {
            local.clear();
            remote.clear();
            bool all = true;
            if (const auto md = a.metadata(); md && md->instances().size() == 2) {
                for (std::int64_t i = 0; i < o.keys && all; i += std::max<std::int64_t>(o.keys / 200, 1)) {
                    const std::string k = key_of(i);
                    const auto r = to_a.get(at(server_a.port()), "/strata/stores/totals/keys/" + k);
                    all = r.reply && r.reply->status == 200 && json::parse(r.reply->body)["value"] == i;
                    (md->for_key(k).active == "a" ? local : remote).push_back(k);
                }
            } else {
                all = false;
            }
            if (all && !local.empty() && !remote.empty()) break;
            if (clock_type::now() > deadline) throw std::runtime_error("the instances did not settle");
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }

        struct kind {
            const char* name;
            std::string endpoint;
            const std::vector<std::string>* keys;
            std::vector<double> p50, p99;  // per repetition, µs
            strata::http::client client{};  // its own keep-alive connection
        };
        const std::vector<std::string> any{key_of(1234)};
        kind kinds[] = {{"constant", at(constant.port()), &any, {}, {}},
                        {"constant on a", at(server_a.port()), &any, {}, {}},
                        {"local, timed inside", at(server_a.port()), &local, {}, {}},
                        {"local", at(server_a.port()), &local, {}, {}},
                        {"forwarded", at(server_a.port()), &remote, {}, {}},
                        {"constant, relayed", at(server_a.port()), &any, {}, {}}};
        constexpr std::int64_t block = 500;
        for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0 warms up
            std::vector<double> lat[std::size(kinds)];
            for (std::int64_t done = 0; done < o.requests; done += block) {
                for (std::size_t k = 0; k < std::size(kinds); ++k) {
                    kind& kd = kinds[k];
                    for (std::int64_t i = 0; i < block; ++i) {
                        const std::string& key = (*kd.keys)[static_cast<std::size_t>(done + i) % kd.keys->size()];
                        const auto start = clock_type::now();
                        const auto r = kd.client.get(kd.endpoint, k == 1   ? std::string("/constant")
                                                                  : k == 2 ? "/timed/" + key
                                                                  : k == 5 ? "/relay/" + key
                                                                           : "/strata/stores/totals/keys/" + key);
                        const double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
                        if (!r.reply || r.reply->status != 200)
                            throw std::runtime_error(std::string(kd.name) + " GET failed: " + r.failure);
                        lat[k].push_back(us);
                    }
                }
            }
            if (rep == 0) continue;
            for (std::size_t k = 0; k < std::size(kinds); ++k) {
                kinds[k].p50.push_back(percentile(lat[k], 0.50));
                kinds[k].p99.push_back(percentile(lat[k], 0.99));
            }
        }
        // The gateway's own work for a local GET, without HTTP: what the
        // local column adds to the constant one, at most.
        std::vector<double> direct;
        {
            const gw::request_options ro;
            for (std::int64_t i = 0; i < o.requests; ++i) {
                const std::string& key = local[static_cast<std::size_t>(i) % local.size()];
                const auto start = clock_type::now();
                const gw::answer ans = gate_a.get("totals", key, ro);
                const std::string body = ans.body.dump();
                direct.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
                if (ans.code != 200 || body.empty()) throw std::runtime_error("direct get failed");
            }
        }
        a.stop();
        b.stop();
        run_a.get();
        run_b.get();
        std::filesystem::remove_all(state);

        const double c50 = median(kinds[0].p50), c99 = median(kinds[0].p99);
        std::printf("| GET | p50 (µs) | p99 (µs) | p50 / constant | p99 / constant |\n|---|---:|---:|---:|---:|\n");
        json line = json::object();
        for (kind& k : kinds) {
            const double p50 = median(k.p50), p99 = median(k.p99);
            std::printf("| %s | %.0f | %.0f | %.2f | %.2f |\n", k.name, p50, p99, p50 / c50, p99 / c99);
            line[k.name] = json{{"p50_us", p50}, {"p99_us", p99}, {"p50_runs", k.p50}, {"p99_runs", k.p99}};
        }
        std::printf("\nThe gateway's work inside the HTTP worker of \"local, timed inside\": p50 %.1f µs, p99 %.1f µs\n",
                    percentile(in_handler, 0.5), percentile(in_handler, 0.99));
        line["in_handler"] = json{{"p50_us", percentile(in_handler, 0.5)}, {"p99_us", percentile(in_handler, 0.99)}};
        std::printf("\nThe gateway's work for a local GET without HTTP (get + JSON dump): p50 %.1f µs, p99 %.1f µs\n",
                    percentile(direct, 0.5), percentile(direct, 0.99));
        line["direct"] = json{{"p50_us", percentile(direct, 0.5)}, {"p99_us", percentile(direct, 0.99)}};
        line["keys"] = o.keys;
        line["requests_per_kind_and_rep"] = o.requests;
        line["reps"] = o.reps;
        std::printf("\n%s\n", line.dump().c_str());
    } catch (const std::exception& e) {
        std::cerr << "gateway_bench: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
