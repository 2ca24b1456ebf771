#pragma once
/// @file
/// @brief The HTTP side of the query gateway: answers as (status, JSON
/// body), how each query_status maps onto an HTTP status, the one error body
/// every 4xx and 5xx carries (strata/http/message.hpp; the server's own
/// refusals have it too), what JSON can carry (UTF-8), URL encoding, and the
/// forwarding of a request to another instance over strata::http's client.

#include <strata/gateway/error.hpp>
#include <strata/runtime/queries.hpp>

#include <strata/http/client.hpp>
#include <strata/http/message.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::gateway {

using json = nlohmann::json;

/// @brief An HTTP answer: status code and JSON body. Every error body has
/// "status" (a query_status name; one of the gateway's own: not_found,
/// unknown_store, unknown_query, bad_request, owner_unreachable,
/// unrenderable; or, for what the HTTP server refuses by itself, the name
/// http::status_name gives its code) and "error" (what happened, in words).
struct answer {
    answer() = default;
    answer(int c, json b, bool r = false) : code(c), body(std::move(b)), retry(r) {}

    int code = 200;
    json body;
    bool retry = false;  ///< the condition is temporary: the response carries Retry-After: 1
    /// The body as another instance sent it, passed on unparsed (then `body`
    /// is unset): a forwarded answer costs no parse and no dump.
    std::string raw;

    [[nodiscard]] bool ok() const noexcept { return code == 200; }

    /// The body as JSON, parsing a forwarded one first.
    json& parsed() {
        if (!raw.empty()) {
            body = json::parse(raw, nullptr, false);
            raw.clear();
        }
        return body;
    }

    /// The HTTP response. A string that is not UTF-8 (a message that quotes
    /// a bad parameter back) is written with U+FFFD in place of its bad
    /// bytes instead of failing the dump: the data paths check what they
    /// render first (`renderable`), so only messages get here.
    [[nodiscard]] http::response to_response() const {
        http::response r(code, raw.empty() ? body.dump(-1, ' ', false, json::error_handler_t::replace) : raw);
        if (retry) r.header("Retry-After", "1");
        return r;
    }
};

/// @brief Percent-encodes everything but RFC 3986's unreserved characters,
/// so that any key fits in one path segment or query value.
[[nodiscard]] inline std::string url_encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

/// @brief A path as it may be quoted back in a message: slashes kept,
/// everything else outside RFC 3986's unreserved characters percent-encoded.
[[nodiscard]] inline std::string url_encode_path(std::string_view path) {
    std::string out;
    for (std::size_t from = 0;;) {
        const std::size_t slash = path.find('/', from);
        out += url_encode(path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from));
        if (slash == std::string_view::npos) return out;
        out += '/';
        from = slash + 1;
    }
}

/// @brief The error answer of a gateway condition.
[[nodiscard]] inline answer error_answer(int code, std::string_view status, std::string_view what, bool retry = false) {
    return answer{code, json{{"status", status}, {"error", what}}, retry};
}

/// @brief Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF), the only text a JSON string holds.
[[nodiscard]] inline bool valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const auto tail = [&](std::size_t k) { return k < s.size() && (at(k) & 0xC0) == 0x80; };
    while (i < s.size()) {
        const unsigned char c = at(i);
        if (c < 0x80) {
            ++i;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (!tail(i + 1)) return false;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (!tail(i + 1) || !tail(i + 2)) return false;
            if (c == 0xE0 && at(i + 1) < 0xA0) return false;   // overlong
            if (c == 0xED && at(i + 1) >= 0xA0) return false;  // a surrogate
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (!tail(i + 1) || !tail(i + 2) || !tail(i + 3)) return false;
            if (c == 0xF0 && at(i + 1) < 0x90) return false;   // overlong
            if (c == 0xF4 && at(i + 1) >= 0x90) return false;  // above U+10FFFF
            i += 4;
        } else {
            return false;  // a continuation byte first, 0xC0, 0xC1, 0xF5 and above
        }
    }
    return true;
}

/// @brief Whether a JSON value can be written out: every string and object
/// key in it is UTF-8. nlohmann::json holds any bytes in a string, and
/// fails only when it dumps one (type_error 316), after the answer is built.
[[nodiscard]] inline bool renderable(const json& j) {
    switch (j.type()) {
        case json::value_t::string: return valid_utf8(j.get_ref<const std::string&>());
        case json::value_t::array:
            for (const json& e : j)
                if (!renderable(e)) return false;
            return true;
        case json::value_t::object:
            for (const auto& [k, v] : j.items())
                if (!valid_utf8(k) || !renderable(v)) return false;
            return true;
        default: return true;
    }
}

/// @brief The HTTP status of a query that did not answer:
///
/// | query_status          | HTTP | Retry-After |
/// |-----------------------|------|-------------|
/// | not_running           | 503  | 1           |
/// | restoring             | 503  | 1           |
/// | rebalancing           | 503  | 1           |
/// | not_owned             | 503  | 1 (only when forwarding is not allowed: a forwarded request that met a stale owner) |
/// | position_not_reached  | 504  |             |
/// | unknown_partition     | 400  |             |
///
/// The body names the status, the partition, the owner and its endpoint
/// where known, and a restore's progress.
[[nodiscard]] inline answer not_answered(const runtime::query_outcome& o) {
    using runtime::query_status;
    answer a;
    a.body = json{{"status", runtime::to_string(o.status)}, {"partition", o.partition}};
    if (!o.owner.empty()) a.body["owner"] = o.owner;
    if (!o.owner_endpoint.empty()) a.body["owner_endpoint"] = o.owner_endpoint;
    switch (o.status) {
        case query_status::ok: a.code = 200; break;
        case query_status::restoring:
            a.code = 503;
            a.retry = true;
            a.body["restored"] = o.restored;
            a.body["to_restore"] = o.to_restore;
            a.body["error"] = "the partition's stores are restoring here";
            break;
        case query_status::not_running:
            a.code = 503;
            a.retry = true;
            a.body["error"] = "the instance is not running, or does not know the assignment yet";
            break;
        case query_status::rebalancing:
            a.code = 503;
            a.retry = true;
            a.body["error"] = "the partition is moving between instances";
            break;
        case query_status::not_owned:
            a.code = 503;
            a.retry = true;
            a.body["error"] = "another instance runs the partition";
            break;
        case query_status::position_not_reached:
            a.code = 504;
            a.body["position"] = o.position;
            a.body["error"] = "the partition had not processed the asked position within the wait";
            break;
        case query_status::unknown_partition:
            a.code = 400;
            a.body["error"] = "no such partition";
            break;
    }
    return a;
}

/// @brief host and port of an endpoint "host:port" ("[::1]:80" for IPv6).
/// @throws bad_request the endpoint has no port
[[nodiscard]] inline std::pair<std::string, int> split_endpoint(std::string_view endpoint) {
    const auto colon = endpoint.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == endpoint.size())
        throw bad_request("endpoint '" + std::string(endpoint) + "' is not host:port");
    std::string host(endpoint.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int port = 0;
    for (const char c : endpoint.substr(colon + 1)) {
        if (c < '0' || c > '9') throw bad_request("endpoint '" + std::string(endpoint) + "' has no numeric port");
        port = port * 10 + (c - '0');
        if (port > 65535) throw bad_request("endpoint '" + std::string(endpoint) + "' has a port over 65535");
    }
    return {std::move(host), port};
}

/// @brief The result of forwarding a request: the peer's answer, or why
/// there is none.
struct forwarded {
    std::optional<answer> reply;
    std::string failure;  ///< when there is no reply: the transport's error
};

/// @brief Forwards requests to other instances over a bounded pool of
/// keep-alive connections per instance (strata::http::client, on threads of
/// its own, so a caller on any thread may wait for an answer).
class client_pool {
public:
    /// @throws usage_error a TLS file that cannot be used
    explicit client_pool(std::chrono::milliseconds timeout, std::size_t connections_per_peer = 32,
                         std::optional<http::client_tls_options> tls = std::nullopt)
        : client_(options(timeout, connections_per_peer, std::move(tls)), 2) {}

    /// @brief GETs `path` (with its query) from `endpoint`; `done` gets the
    /// result on the pool's threads. With `parse` false, the reply's body
    /// stays raw (answer::raw).
    void async_get(const std::string& endpoint, std::string path, http::header_list headers, bool parse,
                   std::function<void(forwarded)> done) {
        client_.async_get(endpoint, std::move(path), std::move(headers),
                          [parse, done = std::move(done)](http::client_result r) { done(to_forwarded(std::move(r), parse)); });
    }

    /// @brief Where async_get's `done` runs (for timers that go with calls).
    [[nodiscard]] boost::asio::any_io_executor executor() const { return client_.executor(); }

    /// @brief async_get, waited for.
    forwarded get(const std::string& endpoint, std::string path, http::header_list headers, bool parse = true) {
        return to_forwarded(client_.get(endpoint, std::move(path), std::move(headers)), parse);
    }

private:
    static http::client_options options(std::chrono::milliseconds timeout, std::size_t per_peer,
                                        std::optional<http::client_tls_options> tls) {
        http::client_options o;
        o.tls = std::move(tls);
        o.connect_timeout = timeout;
        o.request_timeout = timeout;
        o.max_connections_per_peer = per_peer;
        return o;
    }

    static forwarded to_forwarded(http::client_result r, bool parse) {
        forwarded f;
        if (!r.reply) {
            f.failure = std::move(r.failure);
            return f;
        }
        answer a;
        a.code = r.reply->status;
        a.retry = r.reply->retry_after.has_value();
        if (!parse && !r.reply->body.empty() && r.reply->body.front() == '{') {
            a.raw = std::move(r.reply->body);
            f.reply = std::move(a);
            return f;
        }
        a.body = json::parse(r.reply->body, nullptr, false);
        if (a.body.is_discarded())
            f.failure = "the peer answered " + std::to_string(r.reply->status) + " with a body that is not JSON";
        else
            f.reply = std::move(a);
        return f;
    }

    http::client client_;
};

}  // namespace strata::gateway
