#pragma once
/// @file
/// @brief The stores a gateway serves, whatever their types: a key-value
/// store's reads and scans (kv_port), and named queries over any store
/// (query_port), each rendered as JSON only when JSON can carry it.

#include <strata/core/concepts.hpp>
#include <strata/gateway/http.hpp>
#include <strata/gateway/json.hpp>
#include <strata/gateway/requests.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/queries.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <functional>
#include <type_traits>

namespace strata::gateway {

namespace detail {

/// What one partition answered here: the query's outcome, and the JSON
/// body when it is ok.
struct local_answer {
    runtime::query_outcome outcome;
    json body;
    /// The outcome is ok, but what was read cannot be written as JSON (a
    /// string that is not UTF-8, put in the topic by another producer): the
    /// body is unset and the record was counted as unrenderable.
    bool unrenderable = false;
};

/// Which entries of a partition a scan wants: from <= key <= to (keys as
/// written in a URL), key > after (a key's JSON, from a cursor).
struct scan_bounds {
    std::optional<std::string> from, to;
    std::optional<json> after;
};

/// A key-value store the gateway serves, whatever its types.
class kv_port {
public:
    virtual ~kv_port() = default;
    /// @throws bad_request the key does not parse
    [[nodiscard]] virtual local_answer get(std::string_view key, const runtime::read_options& o) const = 0;
    /// body: {"items": [{"key", "value"}], "more": whether entries remain after these}
    [[nodiscard]] virtual local_answer scan(std::int32_t p, const scan_bounds& b, std::size_t limit,
                                            const runtime::read_options& o) const = 0;
    [[nodiscard]] virtual bool ordered() const = 0;
};

/// A named read-only query over one store.
class query_port {
public:
    virtual ~query_port() = default;
    [[nodiscard]] virtual local_answer run(std::int32_t p, const query_args& a, const runtime::read_options& o) const = 0;
};

/// Up to `limit` entries after `after` within [from, to], in key order,
/// and whether more follow (under the store's lock). An entry whose key
/// or value JSON cannot carry is left out and counted: one such record
/// must not fail every page that reaches it, on every instance.
template <class Store, class K = typename Store::key_type, class V = typename Store::mapped_type>
json page_of(const Store& s, const std::optional<K>& from, const std::optional<K>& to, const std::optional<K>& after,
             std::size_t limit, metrics::counter& unrenderable) {
    const auto wanted = [&](const K& k) {
        return (!from || !(k < *from)) && (!to || !(*to < k)) && (!after || *after < k);
    };
    json items = json::array();
    bool more = false;
    std::uint64_t skipped = 0;
    // Adds one entry, unless it cannot be rendered; false once the page is full.
    const auto add = [&](const K& k, const V& v) {
        json entry{{"key", json(k)}, {"value", json(v)}};
        if (!renderable(entry)) {
            ++skipped;
            return true;
        }
        if (items.size() == limit) {
            more = true;
            return false;
        }
        items.push_back(std::move(entry));
        return true;
    };
    if constexpr (ordered_kv_store<Store>) {
        const auto take = [&](auto&& entries) {
            for (const auto& [k, v] : entries) {
                if (to && *to < k) break;
                if (!wanted(k)) continue;
                if (!add(k, v)) break;
            }
        };
        const std::optional<K>& start = after ? after : from;
        if (start && to) take(s.range(*start, *to));
        else take(s.all());
    } else {
        std::vector<std::pair<K, V>> got;
        for (const auto& [k, v] : s.all())
            if (wanted(k)) got.emplace_back(k, v);
        std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (const auto& [k, v] : got)
            if (!add(k, v)) break;
    }
    if (skipped > 0) unrenderable.inc(skipped);
    return json{{"items", std::move(items)}, {"more", more}};
}

template <class App, std::size_t I>
class kv_port_of final : public kv_port {
    using store = typename App::template store_type<I>;
    using K = typename store::key_type;
    using V = typename store::mapped_type;
    static_assert(kv_store<store>, "strata::gateway: serve_kv needs a key-value store; serve a custom store's reads "
                                   "with serve_query");
    static_assert(json_convertible<K> && json_convertible<V>,
                  "strata::gateway: the store's key and value types need a JSON form: give them to_json/from_json "
                  "functions (found by ADL), or specialize nlohmann::adl_serializer");
    static_assert(requires(const K& a, const K& b) { a < b; },
                  "strata::gateway: scans page through keys in their < order: the key type needs operator<");

public:
    kv_port_of(const App& app, metrics::counter& unrenderable) : app_(&app), unrenderable_(&unrenderable) {}

    local_answer get(std::string_view key, const runtime::read_options& o) const override {
        const K k = key_text<K>::parse(key);
        auto r = app_->template get<I>(k, o);
        local_answer a;
        a.outcome = r;
        if (r.ok()) {
            json key_json(k);
            json value = r.value->has_value() ? json(**r.value) : json(nullptr);
            if (!renderable(key_json) || !renderable(value)) {
                unrenderable_->inc();
                a.unrenderable = true;
                return a;
            }
            a.body = json{{"key", std::move(key_json)}, {"partition", r.partition}, {"position", r.position}};
            a.body["value"] = std::move(value);
            if (r.from_standby) a.body["standby_lag"] = r.standby_lag;
        }
        return a;
    }

    local_answer scan(std::int32_t p, const scan_bounds& b, std::size_t limit,
                      const runtime::read_options& o) const override {
        std::optional<K> from, to, after;
        if (b.from) from = key_text<K>::parse(*b.from);
        if (b.to) to = key_text<K>::parse(*b.to);
        if (b.after) after = key_text<K>::template from_json_checked<K>(*b.after, "cursor's key");
        auto r = app_->template query<I>(
            p, [&](const auto& s) { return page_of(s, from, to, after, limit, *unrenderable_); }, o);
        local_answer a;
        a.outcome = r;
        if (r.ok()) a.body = std::move(*r.value);
        return a;
    }

    bool ordered() const override { return ordered_kv_store<store>; }

private:
    const App* app_;
    metrics::counter* unrenderable_;
};

/// A global store (strata/runtime/global_store.hpp), served like a kv
/// store of one partition: every instance holds all of it, so every read
/// is answered here. A scan finds everything in partition 0; the others
/// are empty.
template <class Global>
class global_port_of final : public kv_port {
    using store = typename Global::store_type;
    using K = typename Global::key_type;
    using V = typename Global::mapped_type;
    static_assert(json_convertible<K> && json_convertible<V>,
                  "strata::gateway: the global store's key and value types need a JSON form: give them "
                  "to_json/from_json functions (found by ADL), or specialize nlohmann::adl_serializer");
    static_assert(requires(const K& a, const K& b) { a < b; },
                  "strata::gateway: scans page through keys in their < order: the key type needs operator<");

public:
    global_port_of(std::shared_ptr<const Global> g, metrics::counter& unrenderable)
        : g_(std::move(g)), unrenderable_(&unrenderable) {}

    local_answer get(std::string_view key, const runtime::read_options&) const override {
        const K k = key_text<K>::parse(key);
        local_answer a;
        if (!g_->bootstrapped()) {
            a.outcome.status = runtime::query_status::restoring;  // not read whole yet
            return a;
        }
        const std::optional<V> v = g_->get(k);
        a.outcome.status = runtime::query_status::ok;
        a.outcome.partition = 0;
        json key_json(k);
        json value = v ? json(*v) : json(nullptr);
        if (!renderable(key_json) || !renderable(value)) {
            unrenderable_->inc();
            a.unrenderable = true;
            return a;
        }
        a.body = json{{"key", std::move(key_json)}, {"partition", 0}, {"position", -1}, {"global", true}};
        a.body["value"] = std::move(value);
        return a;
    }

    local_answer scan(std::int32_t p, const scan_bounds& b, std::size_t limit,
                      const runtime::read_options&) const override {
        local_answer a;
        if (!g_->bootstrapped()) {
            a.outcome.status = runtime::query_status::restoring;
            return a;
        }
        a.outcome.status = runtime::query_status::ok;
        a.outcome.partition = p;
        if (p != 0) {
            a.body = json{{"items", json::array()}, {"more", false}};
            return a;
        }
        std::optional<K> from, to, after;
        if (b.from) from = key_text<K>::parse(*b.from);
        if (b.to) to = key_text<K>::parse(*b.to);
        if (b.after) after = key_text<K>::template from_json_checked<K>(*b.after, "cursor's key");
        a.body = g_->query([&](const store& s) { return page_of(s, from, to, after, limit, *unrenderable_); });
        return a;
    }

    bool ordered() const override { return ordered_kv_store<store>; }

private:
    std::shared_ptr<const Global> g_;
    metrics::counter* unrenderable_;
};

template <class App, std::size_t I, class F>
class query_port_of final : public query_port {
    using store = typename App::template store_type<I>;
    static_assert(std::is_invocable_r_v<json, const F&, const store&, const query_args&>,
                  "strata::gateway: a named query is f(const Store&, const query_args&) returning a value that "
                  "converts to nlohmann::json");

public:
    query_port_of(const App& app, F f, metrics::counter& unrenderable)
        : app_(&app), f_(std::move(f)), unrenderable_(&unrenderable) {}

    local_answer run(std::int32_t p, const query_args& a, const runtime::read_options& o) const override {
        auto r = app_->template query<I>(p, [&](const store& s) { return json(std::invoke(f_, s, a)); }, o);
        local_answer out;
        out.outcome = r;
        if (r.ok()) {
            if (renderable(*r.value)) {
                out.body = std::move(*r.value);
            } else {
                unrenderable_->inc();
                out.unrenderable = true;
            }
        }
        return out;
    }

private:
    const App* app_;
    F f_;
    metrics::counter* unrenderable_;
};

}  // namespace detail

}  // namespace strata::gateway
