// The shared-state service (docs/shared-state-service.md): agents report the
// state of objects to a Kafka topic; every instance of this program keeps,
// for the partitions it runs, each agent's latest report per object and the
// state a majority vote decides, writes each change of state to an output
// topic, and serves a CRUD API from which any instance answers for any
// object. Built on strata's public API and its query gateway only.
//
//   shared_state_service --bootstrap 127.0.0.1:9092 --instance a --port 8081 --state /tmp/ss-a
//
// Options (all but --instance and --port have defaults):
//   --bootstrap HOST:PORT   the Kafka cluster
//   --app ID                application id (default shared-state)
//   --reports TOPIC         input (default reports; created with --partitions if missing)
//   --states TOPIC          output: object id -> decided state (default object-states)
//   --partitions N          partitions of the topics it creates (default 6)
//   --instance ID           this instance's id (stable across restarts)
//   --listen HOST           where the HTTP API listens (default 127.0.0.1)
//   --port N                its port; the endpoint announced to the other instances is HOST:N
//   --state DIR             local state (default /tmp/shared-state-<instance>)
//   --standbys N            warm copies of each partition on other instances (default 1)
//   --max-age-ms N          reports older than this expire (default 3600000)
//   --states-allowed a,b,c  the states an agent may report (default ok,degraded,down,under_attack)
//   --token T               writes (PUT, DELETE) need "Authorization: Bearer T"
//   --max-body N            request body limit in bytes (default 4096; a body over 16 times
//                           that is refused before it is read)
//   --max-page N            largest page of GET /objects (default 1000)
//   --exactly-once          commit with Kafka transactions
//   --kafka key=value       a librdkafka setting for every client (SASL/SSL), repeatable
//   --tls-cert F --tls-key F  serve HTTPS with this certificate chain and key (PEM); the
//                           other instances are then reached over HTTPS too
//   --tls-ca F              the CA (PEM) the other instances' certificates are signed by
//   --tls-client-ca F       require client certificates signed by this CA (mutual TLS)
//   --read-token T          reads need "Authorization: Bearer T" too (writes need --token)
//   --peer-secret S         only a request carrying this secret may be marked as forwarded
//                           by another instance (every instance is given the same)
//   --forward-timeout-ms N  how long a read forwarded to another instance may take (default 2000)
//   --liveness-ms N         silence after which an instance's partitions move (default 600)
//   --hedge-ms N            a read a standby may answer also goes to the next copy when the
//                           one asked is slower than this (default 50; 0: never)

#include "model.hpp"
#include "status_page.hpp"

#include <strata/decorators/all.hpp>
#include <strata/gateway/gateway.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <strata/http/client.hpp>
#include <strata/http/server.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace {

using json = nlohmann::json;
namespace rt = strata::runtime;
namespace gw = strata::gateway;
namespace http = strata::http;
using shared_state::decided_state;
using shared_state::object_reports;
using shared_state::report;

struct settings {
    std::string bootstrap = "127.0.0.1:9092";
    std::string app = "shared-state";
    std::string reports = "reports";
    std::string states = "object-states";
    std::int32_t partitions = 6;
    std::string instance;
    std::string listen = "127.0.0.1";
    int port = 0;
    std::filesystem::path state;
    int standbys = 1;
    std::int64_t max_age_ms = 3'600'000;
    std::set<std::string> allowed{"ok", "degraded", "down", "under_attack"};
    std::string token;
    std::size_t max_body = 4096;
    std::size_t max_page = 1000;
    bool exactly_once = false;
    strata::kafka::settings kafka;
    std::string tls_cert, tls_key, tls_ca, tls_client_ca;
    std::string read_token, peer_secret;
    std::chrono::milliseconds forward_timeout{2'000}, hedge_after{50};
    std::chrono::milliseconds liveness{600};
};

/// An entry of the expiry schedule: which agent's report on which object
/// expires (its key orders entries by expiry time).
struct expiry_entry {
    BOOST_HANA_DEFINE_STRUCT(expiry_entry, (std::string, object), (std::string, agent), (std::int64_t, time_ms));
};

std::string expiry_key(std::int64_t expires_ms, const std::string& object, const std::string& agent) {
    char at[24];
    std::snprintf(at, sizeof at, "%016lld", static_cast<long long>(expires_ms));
    return std::string(at) + "/" + object + "/" + agent;
}

// [stores]
/// Each partition's stores: every agent's latest report per object, the
/// decided state per object, and when each report expires. All three are
/// logged to their changelogs, so a partition moves with its state.
auto make_stores(rt::task_context& t) {
    return std::tuple(
        strata::hash_map_store<std::string, object_reports>("reports") | t.logged() | strata::cached() | t.metered(),
        strata::hash_map_store<std::string, decided_state>("states") | t.logged() | strata::cached() | t.metered(),
        strata::ordered_map_store<std::string, expiry_entry>("expiry") | t.logged() | t.metered());
}
// [stores]

// [processor]
/// Handles one report: updates the agent's latest report on the object,
/// decides the object's state again, and writes it out when it changed. A
/// punctuation expires old reports every second.
struct processor {
    const settings* s;
    std::shared_ptr<std::atomic<std::int64_t>> invalid;

    template <class Ctx>
    void init(Ctx& ctx) const {
        ctx.schedule(std::chrono::seconds(1), rt::punctuation_type::wall_clock_time,
                     [this](Ctx& c, std::int64_t now_ms) { expire(c, now_ms); });
    }

    template <class Ctx>
    void operator()(Ctx& ctx, const rt::record<std::string, std::string>& r) const {
        if (!r.value) return;  // a tombstone on the reports topic means nothing here
        report rep;
        try {
            rep = report::parse(*r.value);
        } catch (const std::invalid_argument&) {
            ++*invalid;  // counted in shared_state_invalid_reports_total
            return;
        }
        auto& reports = ctx.template store<0>();
        if (rep.forget) {
            if (const std::optional<object_reports> gone = reports.get(r.key))
                for (const shared_state::agent_report& a : gone->latest)
                    ctx.template store<2>().erase(expiry_key(a.time_ms + s->max_age_ms, r.key, a.agent));
            reports.erase(r.key);
            decide(ctx, r.key, object_reports{});
            return;
        }
        object_reports o = reports.get(r.key).value_or(object_reports{});
        const std::optional<std::int64_t> superseded = o.time_of(rep.agent);
        if (o.take(rep)) reports.put(r.key, o);
        // A report the store has already is handled again all the same:
        // under at-least-once the inputs since the last commit are processed
        // again after a failed write, and each store's changelog records
        // land or fail one by one, so the reports may hold this report while
        // the schedule and the decided state lost what followed from it.
        // Everything below is idempotent; only a report older than the
        // agent's latest (out of order) changes nothing.
        if (o.time_of(rep.agent) != rep.time_ms) return;
        // One expiry entry per live report: the one the new report replaces
        // goes (else the schedule grows by every report for max_age).
        auto& schedule = ctx.template store<2>();
        if (superseded && *superseded != rep.time_ms) schedule.erase(expiry_key(*superseded + s->max_age_ms, r.key, rep.agent));
        schedule.put(expiry_key(rep.time_ms + s->max_age_ms, r.key, rep.agent), expiry_entry{r.key, rep.agent, rep.time_ms});
        decide(ctx, r.key, o);
    }

    /// Stores the object's state by majority vote, and emits it if it changed.
    template <class Ctx>
    void decide(Ctx& ctx, const std::string& object, const object_reports& o) const {
        auto& states = ctx.template store<1>();
        const std::optional<decided_state> now = shared_state::vote(o);
        const std::optional<decided_state> before = states.get(object);
        if (!now) {
            if (before) {
                states.erase(object);
                ctx.emit_tombstone(s->states, object);
            }
            return;
        }
        if (before && *before == *now) return;
        states.put(object, *now);
        json out;
        shared_state::to_json(out, *now);
        ctx.emit(s->states, object, out.dump());
    }

    /// Drops the reports whose time is up, and decides their objects again.
    template <class Ctx>
    void expire(Ctx& ctx, std::int64_t now_ms) const {
        auto& schedule = ctx.template store<2>();
        std::vector<std::pair<std::string, expiry_entry>> due;
        for (const auto& [key, e] : schedule.range(std::string(), expiry_key(now_ms, "", ""))) {
            due.emplace_back(key, e);
            if (due.size() == 10'000) break;  // the rest on the next round
        }
        auto& reports = ctx.template store<0>();
        for (const auto& [key, e] : due) {
            schedule.erase(key);
            std::optional<object_reports> o = reports.get(e.object);
            if (o && o->expire(e.agent, e.time_ms)) {
                if (o->latest.empty()) reports.erase(e.object);
                else reports.put(e.object, *o);
            }
            // Decided again even when the report was gone already (superseded,
            // or dropped by a run whose write of the decided state failed).
            decide(ctx, e.object, o.value_or(object_reports{}));
        }
    }
};
// [processor]

rt::application_options options_of(const settings& s) {
    rt::application_options c;
    c.application_id = s.app;
    c.bootstrap_servers = s.bootstrap;
    c.input_topics = {s.reports};
    c.state_dir = s.state;
    c.instance_id = s.instance;
    c.endpoint = s.listen + ":" + std::to_string(s.port);
    c.standby_replicas = s.standbys;
    c.guarantee = s.exactly_once ? rt::processing_guarantee::exactly_once : rt::processing_guarantee::at_least_once;
    c.commit_interval = std::chrono::milliseconds(s.exactly_once ? 100 : 200);
    c.session_timeout = std::chrono::milliseconds(6'000);
    c.liveness_timeout = s.liveness;
    c.client_settings = s.kafka;
    return c;
}

void create_topics(const settings& s) {
    strata::kafka::topic_options o;
    o.bootstrap_servers = s.bootstrap;
    o.client_settings = s.kafka;
    o.partitions = s.partitions;
    o.topic_configs = {{"cleanup.policy", "delete"}};
    o.require_compaction = false;
    (void)strata::kafka::ensure_topic(s.reports, o);
    o.topic_configs = {{"cleanup.policy", "compact"}};
    o.require_compaction = true;
    (void)strata::kafka::ensure_topic(s.states, o);
}

/// Writes API reports to the reports topic, one at a time, and says where
/// each landed (the position a GET may then ask for).
class report_writer {
public:
    explicit report_writer(const settings& s)
        : partitions_(s.partitions),
          producer_(strata::kafka::producer_options{s.bootstrap, std::nullopt, with_linger(s.kafka)}),
          tracker_(&producer_.new_tracker()), topic_(rd_kafka_topic_new(producer_.get(), s.reports.c_str(), nullptr)) {}

    struct written {
        std::int32_t partition;
        std::int64_t offset;
    };

    /// @throws strata::kafka::error the broker did not take it
    written write(const std::string& object, const report& r) {
        const std::lock_guard lock(mutex_);  // delivery reports are served by whoever waits
        const std::int32_t p = rt::partition_for(object, partitions_);
        const std::string value = r.to_json_text();
        strata::kafka::delivery_tracker& t = *tracker_;
        t = strata::kafka::delivery_tracker{};  // nothing in flight: the last write was waited for
        producer_.produce(topic_.get(), p, strata::as_bytes(object), strata::as_bytes(value), t);
        producer_.wait(t);
        if (t.has_failed()) throw strata::kafka::error("write the report", t.first_error, t.first_error_text);
        return {p, t.last_offset};
    }

private:
    static strata::kafka::settings with_linger(strata::kafka::settings k) {
        k.try_emplace("linger.ms", "0");  // one report per request: do not wait for company
        // A request waits for its report's delivery: with the broker gone, it
        // fails with a 503 after this instead of holding a worker for minutes.
        k.try_emplace("message.timeout.ms", "10000");
        return k;
    }

    std::mutex mutex_;
    std::int32_t partitions_;
    strata::kafka::producer producer_;
    strata::kafka::delivery_tracker* tracker_;
    strata::kafka::unique_topic topic_;
};

// [api]
/// The HTTP API. Reads go through the gateway, which answers locally or
/// forwards to the instance that runs the object's partition; writes go to
/// the reports topic and are processed exactly as agents' reports are.
template <class App>
class api {
public:
    api(App& app, const settings& s, std::shared_ptr<std::atomic<std::int64_t>> invalid)
        : app_(&app), s_(&s), gateway_(app, options(s)), writer_(s), invalid_(std::move(invalid)),
          peers_(peer_client_options(s)) {
        gateway_.template serve_kv<1>("states");
    }

    /// The service's routes, and the gateway's under /strata. A path with
    /// a method it does not answer is a 405 with Allow (strata::http::router).
    void add_routes(http::router& r) {
        using verb = http::beast_http::verb;
        gateway_.add_routes(r);  // /strata/...: the routes other instances forward to
        r.route_inline(verb::get, "/", [](const http::exchange&) {
            return http::response(200, shared_state::status_page, "text/html; charset=utf-8");
        });
        // Reads may wait for a position and writes for the broker: the work pool.
        r.route_blocking(verb::get, "/objects/{*}", [this](const http::exchange& ex) {
            if (auto no = refused_read(ex.req())) return no->to_response();
            return guarded([&] { return get_object(ex.req(), ex.capture(0)); });
        });
        r.route_blocking(verb::get, "/objects", [this](const http::exchange& ex) {
            if (auto no = refused_read(ex.req())) return no->to_response();
            return guarded([&] { return list_objects(ex.req()); });
        });
        r.route_blocking(verb::put, "/objects/{*}", [this](const http::exchange& ex) {
            return guarded([&] { return put_object(ex.req(), ex.capture(0)); });
        });
        r.route_blocking(verb::delete_, "/objects/{*}", [this](const http::exchange& ex) {
            return guarded([&] { return delete_object(ex.req(), ex.capture(0)); });
        });
        r.route_inline(verb::get, "/instances", [this](const http::exchange& ex) {
            if (auto no = refused_read(ex.req())) return no->to_response();
            return gateway_.instances().to_response();
        });
        r.route_inline(verb::get, "/tasks", [this](const http::exchange& ex) {
            if (auto no = refused_read(ex.req())) return no->to_response();
            return tasks().to_response();
        });
        r.route_blocking(verb::get, "/overview", [this](const http::exchange& ex) {
            if (auto no = refused_read(ex.req())) return no->to_response();
            return overview().to_response();
        });
        r.route_inline(verb::get, "/metrics", [this](const http::exchange&) {
            app_->metrics().gauge_for("shared_state_invalid_reports_total", "Reports that were not valid JSON reports")
                .set(static_cast<double>(invalid_->load()));
            return http::response(200, strata::metrics::to_prometheus(app_->metrics()), "text/plain; version=0.0.4");
        });
        r.route_inline(verb::get, "/health", [this](const http::exchange&) {
            const bool up = app_->metadata() != nullptr;
            return gw::answer{up ? 200 : 503, json{{"status", up ? "ok" : "starting"}, {"instance", s_->instance}}}
                .to_response();
        });
    }

private:
    /// With --read-token, a read without it: 401, or 403 with another.
    std::optional<gw::answer> refused_read(const http::request& req) const {
        return gw::bearer_refusal(req, s_->read_token, "a reader's");
    }

    static http::client_options peer_client_options(const settings& s) {
        http::client_options o;
        o.connect_timeout = std::chrono::milliseconds(300);
        o.request_timeout = std::chrono::milliseconds(500);
        o.tls = options(s).peer_tls;
        return o;
    }

    static gw::gateway_options options(const settings& s) {
        gw::gateway_options o;
        o.max_page_size = s.max_page;
        o.bearer_token = s.read_token;
        o.peer_secret = s.peer_secret;
        o.forward_timeout = s.forward_timeout;
        o.hedge_after = s.hedge_after;
        if (!s.tls_cert.empty())
            o.peer_tls = http::client_tls_options{s.tls_ca, s.tls_client_ca.empty() ? "" : s.tls_cert,
                                                  s.tls_client_ca.empty() ? "" : s.tls_key};
        return o;
    }

    template <class Work>
    static http::response guarded(Work&& work) {
        gw::answer a;
        try {
            a = work();
        } catch (const gw::bad_request& e) {
            a = gw::error_answer(400, "bad_request", e.what());
        } catch (const std::exception& e) {
            a = gw::error_answer(503, "unavailable", e.what(), true);
        }
        return a.to_response();
    }

    /// GET /objects/{id}[?position=N&wait_ms=N][&allow_standby=true&max_lag=N]
    gw::answer get_object(const http::request& req, const std::string& id) {
        gw::answer a = gateway_.get("states", id, gw::request_options::from(req, gateway_.options()));
        a.parsed();  // a forwarded answer comes raw
        if (a.code == 200) a.body = object_json(a.body);
        else if (a.code == 404) a.body = json{{"status", "not_found"}, {"error", "no object '" + id + "'"}, {"id", id}};
        return a;
    }

    /// GET /objects[?limit=N&cursor=C]: every object once, page by page.
    gw::answer list_objects(const http::request& req) {
        gw::answer a = gateway_.scan("states", false, gw::page_request::parse(req, gateway_.options()),
                                     gw::request_options::from(req, gateway_.options()));
        if (a.code != 200) return a;
        json objects = json::array();
        for (const json& e : a.body["items"]) objects.push_back(object_json(e));
        return gw::answer{200, json{{"objects", std::move(objects)}, {"next", a.body["next"]}}};
    }

    /// PUT /objects/{id} {"state": "...", "agent": "..."(optional, default "operator")}
    gw::answer put_object(const http::request& req, const std::string& id) {
        if (std::optional<gw::answer> refused = check_write(req, id)) return *refused;
        const json body = json::parse(req.body(), nullptr, false);
        if (body.is_discarded() || !body.is_object())
            return gw::error_answer(400, "bad_request", "the body must be a JSON object like {\"state\": \"ok\"}");
        if (!body.contains("state") || !body["state"].is_string())
            return gw::error_answer(400, "bad_request", "the body needs a string \"state\"");
        report r;
        r.state = body["state"].get<std::string>();
        if (!s_->allowed.contains(r.state)) {
            std::string allowed;
            for (const std::string& each : s_->allowed) allowed += (allowed.empty() ? "" : ", ") + each;
            return gw::error_answer(400, "bad_request", "'" + r.state + "' is not a state; the states are: " + allowed);
        }
        r.agent = body.contains("agent") && body["agent"].is_string() ? body["agent"].get<std::string>() : "operator";
        if (r.agent.empty()) return gw::error_answer(400, "bad_request", "\"agent\" must not be empty");
        if (r.agent.size() > max_name_bytes)
            return gw::error_answer(400, "bad_request",
                                    "an agent has at most " + std::to_string(max_name_bytes) + " bytes; this one has " +
                                        std::to_string(r.agent.size()));
        r.time_ms = rt::wall_clock_ms();
        return accepted(id, r);
    }

    /// DELETE /objects/{id}: forgets every report on the object so far.
    gw::answer delete_object(const http::request& req, const std::string& id) {
        if (std::optional<gw::answer> refused = check_write(req, id)) return *refused;
        report r;
        r.agent = "operator";
        r.forget = true;
        r.time_ms = rt::wall_clock_ms();
        return accepted(id, r);
    }

    /// Writes the report; 202 with the position at which it will be visible.
    gw::answer accepted(const std::string& id, const report& r) {
        const report_writer::written w = writer_.write(id, r);
        return gw::answer{202, json{{"id", id}, {"partition", w.partition}, {"position", w.offset},
                                    {"visible_with", "GET /objects/" + gw::url_encode(id) + "?position=" +
                                                         std::to_string(w.offset)}}};
    }

    /// The longest object id and agent name, in bytes (after percent-decoding).
    static constexpr std::size_t max_name_bytes = 256;

    /// A write's refusal, if any: without the token, over the body limit,
    /// or an id that could not be read back. Every id the API writes can be
    /// answered as JSON: a JSON string holds only UTF-8, and an id that is
    /// not would be kept, voted on, and then fail every answer that names it.
    std::optional<gw::answer> check_write(const http::request& req, const std::string& id) const {
        if (!s_->token.empty() && !gw::same_secret(req.header("Authorization"), "Bearer " + s_->token))
            return gw::error_answer(401, "unauthorized", "writes need the header Authorization: Bearer <token>");
        if (req.body().size() > s_->max_body)
            return gw::error_answer(413, "body_too_large",
                                    "the body has " + std::to_string(req.body().size()) + " bytes; at most " +
                                        std::to_string(s_->max_body) + " are accepted");
        if (!gw::valid_utf8(id))
            return gw::error_answer(400, "bad_request",
                                    "the object id '" + gw::url_encode(id) +
                                        "' (percent-encoded here) is not valid UTF-8: JSON cannot carry it");
        if (id.size() > max_name_bytes)
            return gw::error_answer(400, "bad_request",
                                    "an object id has at most " + std::to_string(max_name_bytes) + " bytes; this one has " +
                                        std::to_string(id.size()));
        return std::nullopt;
    }

    /// An entry of the states store as the API shows an object.
    static json object_json(const json& entry) {
        json o = entry.contains("value") ? entry["value"] : json::object();
        o["id"] = entry["key"];
        for (const char* extra : {"partition", "instance", "position", "standby_lag"})
            if (entry.contains(extra)) o[extra] = entry[extra];
        return o;
    }

    /// GET /tasks: this instance's tasks, for the status page.
    gw::answer tasks() const {
        json out = json::array();
        for (const rt::task_info& t : app_->local_tasks())
            out.push_back(json{{"partition", t.partition},
                               {"state", rt::to_string(t.state)},
                               {"restored", t.restored},
                               {"to_restore", t.to_restore},
                               {"lag", t.standby_lag}});
        return gw::answer{200, json{{"instance", s_->instance}, {"tasks", std::move(out)}}};
    }

    /// GET /overview: the metadata, with every instance's tasks asked of it.
    gw::answer overview() {
        gw::answer a = gateway_.instances();
        if (a.code != 200) return a;
        a.body["application"] = s_->app;
        for (json& i : a.body["instances"]) {
            const std::string endpoint = i["endpoint"];
            if (i["instance"] == s_->instance) {
                i["tasks"] = tasks().body["tasks"];
                continue;
            }
            http::header_list auth;
            if (!s_->read_token.empty()) auth.emplace_back("Authorization", "Bearer " + s_->read_token);
            const http::client_result r = peers_.get(endpoint, "/tasks", std::move(auth));
            if (!r.reply) i["error"] = r.failure;
            else i["tasks"] = json::parse(r.reply->body, nullptr, false).value("tasks", json::array());
        }
        return a;
    }

    App* app_;
    const settings* s_;
    gw::gateway<App> gateway_;
    report_writer writer_;
    std::shared_ptr<std::atomic<std::int64_t>> invalid_;
    http::client peers_;  // for the overview: other instances' tasks, or why not
};
// [api]

std::atomic<bool> stop_requested{false};
extern "C" void on_stop_signal(int) { stop_requested = true; }

settings parse(int argc, char** argv) {
    settings s;
    const auto need = [&](int& i) -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--bootstrap") s.bootstrap = need(i);
        else if (a == "--app") s.app = need(i);
        else if (a == "--reports") s.reports = need(i);
        else if (a == "--states") s.states = need(i);
        else if (a == "--partitions") s.partitions = std::stoi(need(i));
        else if (a == "--instance") s.instance = need(i);
        else if (a == "--listen") s.listen = need(i);
        else if (a == "--port") s.port = std::stoi(need(i));
        else if (a == "--state") s.state = need(i);
        else if (a == "--standbys") s.standbys = std::stoi(need(i));
        else if (a == "--max-age-ms") s.max_age_ms = std::stoll(need(i));
        else if (a == "--token") s.token = need(i);
        else if (a == "--max-body") s.max_body = std::stoul(need(i));
        else if (a == "--max-page") s.max_page = std::stoul(need(i));
        else if (a == "--exactly-once") s.exactly_once = true;
        else if (a == "--tls-cert") s.tls_cert = need(i);
        else if (a == "--tls-key") s.tls_key = need(i);
        else if (a == "--tls-ca") s.tls_ca = need(i);
        else if (a == "--tls-client-ca") s.tls_client_ca = need(i);
        else if (a == "--read-token") s.read_token = need(i);
        else if (a == "--peer-secret") s.peer_secret = need(i);
        else if (a == "--forward-timeout-ms") s.forward_timeout = std::chrono::milliseconds(std::stoll(need(i)));
        else if (a == "--liveness-ms") s.liveness = std::chrono::milliseconds(std::stoll(need(i)));
        else if (a == "--hedge-ms") s.hedge_after = std::chrono::milliseconds(std::stoll(need(i)));
        else if (a == "--states-allowed") {
            s.allowed.clear();
            std::stringstream list(need(i));
            for (std::string each; std::getline(list, each, ',');)
                if (!each.empty()) s.allowed.insert(each);
        } else if (a == "--kafka") {
            const std::string kv = need(i);
            const auto eq = kv.find('=');
            if (eq == std::string::npos) throw std::invalid_argument("--kafka wants key=value, got " + kv);
            s.kafka[kv.substr(0, eq)] = kv.substr(eq + 1);
        } else {
            throw std::invalid_argument("unknown option " + a + " (see the comment at the top of service.cpp)");
        }
    }
    if (s.instance.empty()) throw std::invalid_argument("--instance is required");
    if (s.port <= 0) throw std::invalid_argument("--port is required");
    if (s.tls_cert.empty() != s.tls_key.empty()) throw std::invalid_argument("--tls-cert and --tls-key go together");
    if (s.state.empty()) s.state = std::filesystem::temp_directory_path() / ("shared-state-" + s.instance);
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    try {
        s = parse(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "shared_state_service: " << e.what() << "\n";
        return 2;
    }
    try {
        create_topics(s);
        auto invalid = std::make_shared<std::atomic<std::int64_t>>(0);
        auto app = rt::make_application<std::string, std::string>(options_of(s), make_stores, processor{&s, invalid});
        app.on_takeover([](const rt::task& t) {
            const auto& tl = t.timeline;
            std::cout << "started task=" << t.id() << " restored_records=" << tl.records_restored
                      << " restore_ms=" << (tl.restored_ms - tl.assigned_ms) << std::endl;
        });
        api<decltype(app)> service(app, s, invalid);
        // A body over --max-body is refused by check_write with the figures;
        // one over 16 times that is refused by the server before it is read
        // (a 413 with the same JSON error body).
        http::server_options so;
        so.host = s.listen;
        so.port = static_cast<std::uint16_t>(s.port);
        so.body_limit = s.max_body * 16;
        if (!s.tls_cert.empty()) so.tls = http::tls_options{s.tls_cert, s.tls_key, s.tls_client_ca};
        std::unique_ptr<http::server> server;
        try {
            server = std::make_unique<http::server>(so);
        } catch (const std::exception& e) {
            std::cerr << "shared_state_service: cannot listen on " << s.listen << ":" << s.port << ": " << e.what()
                      << "\n";
            return 1;
        }
        http::router routes;
        service.add_routes(routes);
        server->start(std::move(routes));
        std::signal(SIGINT, on_stop_signal);
        std::signal(SIGTERM, on_stop_signal);
        std::thread watcher([&] {
            while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(50));
            app.stop();
        });
        std::cout << "listening instance=" << s.instance << " endpoint=" << s.listen << ":" << s.port << std::endl;
        std::exception_ptr failure;
        try {
            app.run();
        } catch (...) {
            failure = std::current_exception();
        }
        stop_requested = true;
        watcher.join();
        server->stop();
        if (failure) std::rethrow_exception(failure);
        std::cout << "stopped instance=" << s.instance << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "shared_state_service: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
