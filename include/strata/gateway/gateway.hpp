#pragma once
/// @file
/// @brief `strata::gateway::gateway`: serves the stores of a running
/// application over HTTP, from every instance. A request for a key is
/// answered where the key's partition runs: locally, or forwarded to the
/// instance that runs it (or, when the caller allows it, to one that keeps a
/// standby within a lag bound). Scans of all keys and named queries over
/// custom stores are gathered from every partition, page by page.
///
///     strata::gateway::gateway gw(app);
///     gw.serve_kv<0>("totals");                               // a key-value store
///     gw.serve_query<1>("orders", "by_city", [](const auto& store, const strata::gateway::query_args& a) {
///         return nlohmann::json(store.query([&](const orders_db& db) { return db.count_in(a.at("city")); }));
///     });
///     strata::http::server_options o;
///     o.port = 8080;                                          // the port of application_options::endpoint
///     auto server = gw.serve(o);                              // serves until destroyed
///
/// Or, to add routes of one's own, or to bind before the application is
/// made (a port the kernel picks, for application_options::endpoint):
///
///     strata::http::server server(o);                         // bound; server.endpoint() is known
///     strata::http::router routes;
///     gw.add_routes(routes);
///     server.start(std::move(routes));
///
/// Routes, under `gateway_options::prefix` (default "/strata"):
///
/// | route                                       | answers |
/// |---------------------------------------------|---------|
/// | GET /stores/{store}/keys/{key}              | {"key", "value", "partition", "instance", "position"}; 404 if absent (a global store's: "global": true, partition 0, answered where asked) |
/// | GET /stores/{store}/all?limit=&cursor=      | {"items": [{"key", "value"}], "next": cursor or null}, every partition |
/// | GET /stores/{store}/range?from=&to=&limit=&cursor= | the same, from <= key <= to (ordered stores) |
/// | GET /stores/{store}/queries/{name}?...      | {"results": [{"partition", "result"}]}: every partition, or the one of ?key= |
/// | GET /instances                              | the application's metadata (see json.hpp) |
///
/// Parameters of key reads: `allow_standby=true`, `max_lag=N` (changelog
/// records), `position=N` (read your writes: the input offset the answer must
/// reflect) with `wait_ms=N`. How each query status maps onto HTTP is in
/// http.hpp (`not_answered`). An instance that cannot reach the owner answers
/// 503 with "status": "owner_unreachable" and the owner and endpoint it tried.
///
/// Where each route's work runs (strata/http/router.hpp): a key read is
/// answered on the server's I/O thread when the key is here (a lookup under
/// the task's lock, which the processing thread holds for one record at a
/// time or for a commit's flush) and forwarded asynchronously when it is
/// not, so neither holds a thread; a read that waits for a position, scans
/// (gathered from every partition, some of them forwarded) and named
/// queries (user code) run on the server's work pool.

#include <strata/core/concepts.hpp>
#include <strata/gateway/detail/forwarder.hpp>
#include <strata/gateway/detail/ports.hpp>
#include <strata/gateway/error.hpp>
#include <strata/gateway/http.hpp>
#include <strata/gateway/json.hpp>
#include <strata/gateway/requests.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/metadata.hpp>
#include <strata/runtime/queries.hpp>

#include <strata/http/router.hpp>
#include <strata/http/server.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::gateway {

/// @brief Serves an application's stores over HTTP; see the file comment.
/// The application must outlive it. Thread-safe once mounted.
template <class App>
class gateway {
public:
    explicit gateway(App& app, gateway_options o = {})
        : app_(&app), options_(std::move(o)),
          forwarder_(options_.forward_timeout, options_.peer_tls, options_.hedge_after,
                     app.metrics().counter_for("strata_gateway_forwarded_total",
                                               "Requests this gateway forwarded to the instance that runs the partition"),
                     app.metrics().counter_for("strata_gateway_hedged_total",
                                               "Standby reads also sent to the next copy because the one asked was "
                                               "slower than hedge_after"),
                     app.metrics().counter_for("strata_gateway_forward_failures_total",
                                               "Forwarded requests that got no answer from the other instance")),
          unrenderable_(&app.metrics().counter_for(
              "strata_gateway_unrenderable_records_total",
              "Records read that JSON cannot carry (a string that is not UTF-8): left out of scans, refused to key "
              "reads and queries")) {}

    gateway(const gateway&) = delete;
    gateway& operator=(const gateway&) = delete;

    /// @brief Serves key-value store I (of what the application's factory
    /// returns) under `name`. Its keys and values cross as JSON (see json.hpp).
    template <std::size_t I = 0>
    gateway& serve_kv(std::string name) {
        kv_.insert_or_assign(std::move(name), std::make_unique<detail::kv_port_of<App, I>>(*app_, *unrenderable_));
        return *this;
    }

    /// @brief Serves a global store (strata/runtime/global_store.hpp) under
    /// `name`, as a key-value store: key reads and scans answered on
    /// whichever instance is asked, each holding the whole store ("global":
    /// true in a key's answer; 503 "restoring" before its bootstrap ended).
    template <class Global>
    gateway& serve_global(std::string name, std::shared_ptr<Global> g) {
        kv_.insert_or_assign(std::move(name), std::make_unique<detail::global_port_of<Global>>(
                                                  std::shared_ptr<const Global>(std::move(g)), *unrenderable_));
        return *this;
    }

    /// @brief Serves `f(const Store&, const query_args&) -> json` over store
    /// I as the named query `query` of `store`: the read-only way into a
    /// custom store (an index lookup in a relational table). With ?key=, it
    /// runs on the partition of that key (a string, partitioned as
    /// partition_for does); without, on every partition.
    template <std::size_t I = 0, class F>
    gateway& serve_query(std::string store, std::string query, F f) {
        queries_.insert_or_assign({std::move(store), std::move(query)},
                                  std::make_unique<detail::query_port_of<App, I, F>>(*app_, std::move(f), *unrenderable_));
        return *this;
    }

    /// @brief Adds the gateway's routes, under the prefix, to `r`. A
    /// request under the prefix with a method other than GET on one of
    /// them is a 405; any other path is a 404 (every error with the JSON
    /// error body).
    void add_routes(http::router& r) {
        using http::beast_http::verb;
        const std::string& p = options_.prefix;
        r.route_async(verb::get, p + "/stores/{}/keys/{*}", [this](const http::exchange& ex) { serve_key(ex); });
        r.route_blocking(verb::get, p + "/stores/{}/all", [this](const http::exchange& ex) {
            return guarded(ex, [&](const request_options& o) {
                return scan(ex.capture(0), false, page_request::parse(ex.req(), options_), o);
            });
        });
        r.route_blocking(verb::get, p + "/stores/{}/range", [this](const http::exchange& ex) {
            return guarded(ex, [&](const request_options& o) {
                return scan(ex.capture(0), true, page_request::parse(ex.req(), options_), o);
            });
        });
        r.route_blocking(verb::get, p + "/stores/{}/partitions/{}/scan", [this](const http::exchange& ex) {
            return guarded(ex, [&](const request_options& o) {
                return scan_partition(ex.capture(0), parse_partition(ex.capture(1)), page_request::parse(ex.req(), options_),
                                      o);
            });
        });
        r.route_blocking(verb::get, p + "/stores/{}/queries/{}", [this](const http::exchange& ex) {
            return guarded(ex, [&](const request_options& o) {
                return query(ex.capture(0), ex.capture(1), args_of(ex.req()), o);
            });
        });
        r.route_blocking(verb::get, p + "/stores/{}/partitions/{}/queries/{}", [this](const http::exchange& ex) {
            return guarded(ex, [&](const request_options& o) {
                return query_partition(ex.capture(0), ex.capture(2), parse_partition(ex.capture(1)), args_of(ex.req()), o);
            });
        });
        r.route_inline(verb::get, p + "/instances", [this](const http::exchange& ex) {
            if (std::optional<answer> no = admit(ex.req())) return no->to_response();
            return instances().to_response();
        });
    }

    /// @brief Serves the gateway's routes on a server of its own, which
    /// serves until it is destroyed.
    /// @throws boost::system::system_error the address cannot be bound
    [[nodiscard]] std::unique_ptr<http::server> serve(const http::server_options& o) {
        http::router r;
        add_routes(r);
        auto s = std::make_unique<http::server>(o);
        s->start(std::move(r));
        return s;
    }

    // The building blocks of the routes, for a service's own routes.

    /// @brief The value of `key` in store `store`, from wherever it runs
    /// (waits for a forwarded answer).
    answer get(std::string_view store, std::string_view key, const request_options& o) {
        runtime::query_outcome local;
        if (std::optional<answer> a = get_here(store, key, o, local)) return std::move(*a);
        return elsewhere(local, key_path(store, key, o), o, false);
    }

    /// @brief get, answered through `done`: at once (on this thread) when
    /// the key is here, else once the instance that holds it answered (on
    /// the forwarding client's thread).
    /// @throws bad_request the key does not parse
    void get_async(std::string_view store, std::string_view key, const request_options& o,
                   std::function<void(answer)> done) {
        runtime::query_outcome local;
        if (std::optional<answer> a = get_here(store, key, o, local)) return done(std::move(*a));
        elsewhere_async(local, key_path(store, key, o), o, false, std::move(done));
    }

    /// @brief One page of a scan over every partition: all keys, or (range)
    /// those within [from, to]. Partitions are visited in order, each in key
    /// order; "next" is the cursor of the next page, null after the last.
    /// Each key is in exactly one page, as long as partitions do not move
    /// during the scan (a partition that moves answers 503 until it runs again).
    answer scan(std::string_view store, bool range, const page_request& page, const request_options& o) {
        const auto it = kv_.find(store);
        if (it == kv_.end()) return unknown_store(store);
        if (range && !it->second->ordered())
            return error_answer(400, "bad_request", "store '" + std::string(store) + "' is not ordered: use /all");
        if (range && (!page.from || !page.to)) return error_answer(400, "bad_request", "a range needs from= and to=");
        const std::shared_ptr<const runtime::application_metadata> md = app_->metadata();
        if (md == nullptr) return not_answered(runtime::query_outcome{});
        json items = json::array();
        std::int32_t p = page.partition;
        std::optional<json> after = page.after;
        json next = nullptr;
        while (p < md->partitions() && items.size() < page.limit) {
            page_request part = page;
            part.limit = page.limit - items.size();
            part.after = after;
            answer one = scan_partition(store, p, part, o);
            if (!one.ok()) {
                one.body["partition"] = p;
                return one;
            }
            for (json& e : one.body["items"]) items.push_back(std::move(e));
            if (one.body.value("more", false)) {
                next = page_request::cursor(p, items.back()["key"]);
                break;
            }
            ++p;
            after.reset();
        }
        if (next.is_null() && p < md->partitions()) next = page_request::cursor(p, std::nullopt);
        return answer{200, json{{"items", std::move(items)}, {"next", std::move(next)}}};
    }

    /// @brief One page of a scan of partition p, from wherever it runs.
    answer scan_partition(std::string_view store, std::int32_t p, const page_request& page, const request_options& o) {
        const auto it = kv_.find(store);
        if (it == kv_.end()) return unknown_store(store);
        const detail::local_answer local = it->second->scan(p, {page.from, page.to, page.after}, page.limit, o.read);
        if (local.outcome.ok()) return answer{200, local.body};
        if (!movable(local.outcome, o)) return not_answered(local.outcome);
        std::string q = "limit=" + std::to_string(page.limit);
        if (page.from) q += "&from=" + url_encode(*page.from);
        if (page.to) q += "&to=" + url_encode(*page.to);
        if (page.after) q += "&after=" + url_encode(page.after->dump());
        return elsewhere(local.outcome,
                         options_.prefix + "/stores/" + url_encode(store) + "/partitions/" + std::to_string(p) + "/scan?" +
                             q + o.to_query_string(),
                         o);
    }

    /// @brief A named query: on the partition of ?key=, or gathered from every partition.
    answer query(std::string_view store, std::string_view name, const query_args& a, const request_options& o) {
        if (find_query(store, name) == nullptr) return unknown_query(store, name);
        const std::shared_ptr<const runtime::application_metadata> md = app_->metadata();
        if (md == nullptr) return not_answered(runtime::query_outcome{});
        std::vector<std::int32_t> partitions;
        if (const auto key = a.find("key"); key != a.end()) partitions.push_back(runtime::partition_for(key->second, md->partitions()));
        else
            for (std::int32_t p = 0; p < md->partitions(); ++p) partitions.push_back(p);
        json results = json::array();
        for (std::int32_t p : partitions) {
            answer one = query_partition(store, name, p, a, o);
            if (!one.ok()) return one;
            results.push_back(json{{"partition", p}, {"result", std::move(one.body["result"])}});
        }
        return answer{200, json{{"results", std::move(results)}}};
    }

    /// @brief A named query on partition p, from wherever it runs.
    answer query_partition(std::string_view store, std::string_view name, std::int32_t p, const query_args& a,
                           const request_options& o) {
        const detail::query_port* port = find_query(store, name);
        if (port == nullptr) return unknown_query(store, name);
        const detail::local_answer local = port->run(p, a, o.read);
        if (local.unrenderable)
            return error_answer(500, "unrenderable",
                                "the result of query '" + std::string(name) + "' on partition " + std::to_string(p) +
                                    " holds a string that is not UTF-8: JSON cannot carry it");
        if (local.outcome.ok()) return answer{200, json{{"partition", p}, {"result", local.body}}};
        if (!movable(local.outcome, o)) return not_answered(local.outcome);
        std::string q;
        for (const auto& [k, v] : a) q += "&" + url_encode(k) + "=" + url_encode(v);
        return elsewhere(local.outcome,
                         options_.prefix + "/stores/" + url_encode(store) + "/partitions/" + std::to_string(p) +
                             "/queries/" + url_encode(name) + "?" + (o.to_query_string() + q).substr(1),
                         o);
    }

    /// @brief The application's metadata (GET /instances).
    answer instances() const {
        const std::shared_ptr<const runtime::application_metadata> md = app_->metadata();
        if (md == nullptr) return not_answered(runtime::query_outcome{});
        json body = to_json(*md);
        body["answered_by"] = app_->options().instance_id;
        return answer{200, std::move(body)};
    }

    [[nodiscard]] const gateway_options& options() const noexcept { return options_; }

private:
    /// Runs a route's work; a bad parameter is a 400.
    template <class Work>
    http::response guarded(const http::exchange& ex, Work&& work) {
        if (std::optional<answer> no = admit(ex.req())) return no->to_response();
        answer a;
        try {
            a = work(request_options::from(ex.req(), options_));
        } catch (const bad_request& e) {
            a = error_answer(400, "bad_request", e.what());
        } catch (const std::exception& e) {
            a = error_answer(500, "internal_error", e.what());
        }
        return a.to_response();
    }

    /// GET .../keys/{key}: answered here on the I/O thread when the key is
    /// here, forwarded without holding a thread when it is not; a read that
    /// waits for a position goes to the work pool.
    void serve_key(const http::exchange& ex) {
        if (std::optional<answer> no = admit(ex.req())) {
            ex.respond(no->to_response());
            return;
        }
        request_options o;
        try {
            o = request_options::from(ex.req(), options_);
        } catch (const bad_request& e) {
            ex.respond(error_answer(400, "bad_request", e.what()).to_response());
            return;
        }
        if (o.read.min_position >= 0) {
            ex.offload([this, ex, o] {
                return guarded(ex, [&](const request_options&) { return get(ex.capture(0), ex.capture(1), o); });
            });
            return;
        }
        try {
            get_async(ex.capture(0), ex.capture(1), o, [ex](answer a) { ex.respond(a.to_response()); });
        } catch (const bad_request& e) {
            ex.respond(error_answer(400, "bad_request", e.what()).to_response());
        }
    }

    /// The refusal of a request its sender may not make (see gateway_options):
    /// without the token (401) or with another (403), or marked as
    /// forwarded by someone who is not a peer (403).
    std::optional<answer> admit(const http::request& req) const {
        if (std::optional<answer> no = bearer_refusal(req, options_.bearer_token, "this gateway's")) return no;
        if (req.has_header(request_options::forwarded_header)) {
            bool peer = true;
            if (!options_.peer_secret.empty())
                peer = same_secret(req.header(request_options::peer_secret_header), options_.peer_secret);
            else if (!options_.peer_names.empty())
                peer = std::find(options_.peer_names.begin(), options_.peer_names.end(), req.peer_name()) !=
                       options_.peer_names.end();
            if (!peer)
                return error_answer(403, "forbidden",
                                    std::string("only another instance of the application may send ") +
                                        request_options::forwarded_header);
        }
        return std::nullopt;
    }

    /// What a key read finds here: the answer when there is one to give
    /// from here (the value, 404, a bad store), else none and `local` says
    /// where the key is.
    std::optional<answer> get_here(std::string_view store, std::string_view key, const request_options& o,
                                   runtime::query_outcome& local) {
        const auto it = kv_.find(store);
        if (it == kv_.end()) return unknown_store(store);
        detail::local_answer here = it->second->get(key, o.read);
        if (here.unrenderable) return unrenderable(store, key);
        if (here.outcome.ok()) {
            json body = std::move(here.body);
            body["instance"] = app_->options().instance_id;
            if (body["value"].is_null()) {
                body["status"] = "not_found";
                body["error"] = "no such key";
                return answer{404, std::move(body)};
            }
            return answer{200, std::move(body)};
        }
        if (!movable(here.outcome, o)) return not_answered(here.outcome);
        local = here.outcome;
        return std::nullopt;
    }

    std::string key_path(std::string_view store, std::string_view key, const request_options& o) const {
        return options_.prefix + "/stores/" + url_encode(store) + "/keys/" + url_encode(key) + "?" +
               o.to_query_string().substr(1);
    }

    /// Whether a request this instance could not answer goes to another:
    /// the partition runs elsewhere, and the request was not forwarded
    /// already (a stale view of the assignment cannot bounce it around).
    bool movable(const runtime::query_outcome& local, const request_options& o) const {
        using runtime::query_status;
        const bool elsewhere = local.status == query_status::not_owned ||
                               (local.status == query_status::rebalancing && !local.owner.empty() &&
                                !app_->runs_as(local.owner));
        return elsewhere && !o.forwarded;
    }

    /// The answer to a request this instance could not answer itself
    /// (`movable`), waited for: see elsewhere_async.
    answer elsewhere(const runtime::query_outcome& local, std::string path, const request_options& o, bool parse = true) {
        std::promise<answer> promise;
        std::future<answer> f = promise.get_future();
        elsewhere_async(local, std::move(path), o, parse, [&promise](answer a) { promise.set_value(std::move(a)); });
        return f.get();
    }

    /// Asks the owner of the partition, or with allow_standby also the
    /// instances that keep a standby of it, in turn; `done` gets the first
    /// answer that settles it, or 503 owner_unreachable naming what was
    /// tried. The next copy is asked when one fails, or (hedge_after) when
    /// one has not answered in time while it still may. With `parse`
    /// false, a reply's body is passed on as it came (answer::raw).
    void elsewhere_async(const runtime::query_outcome& local, std::string path, const request_options& o, bool parse,
                         std::function<void(answer)> done) {
        auto c = std::make_shared<detail::forward_chain>();
        c->local = local;
        c->path = std::move(path);
        c->parse = parse;
        c->allow_standby = o.read.allow_standby;
        c->done = std::move(done);
        c->targets.emplace_back(local.owner, local.owner_endpoint);
        const std::shared_ptr<const runtime::application_metadata> md = app_->metadata();
        if (o.read.allow_standby && md != nullptr) {
            const runtime::partition_metadata where = md->partition(local.partition);
            for (std::size_t i = 0; i < where.standbys.size(); ++i)
                if (!app_->runs_as(where.standbys[i]))
                    c->targets.emplace_back(where.standbys[i], where.standby_endpoints[i]);
        }
        c->headers.emplace_back(request_options::forwarded_header, app_->options().instance_id);
        if (!options_.peer_secret.empty()) c->headers.emplace_back(request_options::peer_secret_header, options_.peer_secret);
        if (!o.authorization.empty()) c->headers.emplace_back("Authorization", o.authorization);
        forwarder_.start(std::move(c));
    }

    [[nodiscard]] const detail::query_port* find_query(std::string_view store, std::string_view name) const {
        const auto it = queries_.find(std::pair(std::string(store), std::string(name)));
        return it == queries_.end() ? nullptr : it->second.get();
    }

    static answer unknown_query(std::string_view store, std::string_view name) {
        return error_answer(404, "unknown_query",
                            "no query '" + std::string(name) + "' on store '" + std::string(store) + "'");
    }

    static answer unrenderable(std::string_view store, std::string_view key) {
        return error_answer(500, "unrenderable",
                            "the value of key '" + url_encode(key) + "' (percent-encoded here) in store '" +
                                std::string(store) + "' holds a string that is not UTF-8: JSON cannot carry it");
    }

    static answer unknown_store(std::string_view store) {
        return error_answer(404, "unknown_store", "no store '" + std::string(store) + "' is served here");
    }

    static std::int32_t parse_partition(const std::string& s) {
        std::int32_t p = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), p);
        if (ec != std::errc() || end != s.data() + s.size()) throw bad_request("'" + s + "' is not a partition number");
        return p;
    }

    static query_args args_of(const http::request& req) {
        query_args a;
        for (const auto& [k, v] : req.query_params()) a.insert_or_assign(k, v);
        return a;
    }

    App* app_;
    gateway_options options_;
    detail::forwarder forwarder_;
    metrics::counter* unrenderable_;
    std::map<std::string, std::unique_ptr<detail::kv_port>, std::less<>> kv_;
    std::map<std::pair<std::string, std::string>, std::unique_ptr<detail::query_port>> queries_;
};

}  // namespace strata::gateway
