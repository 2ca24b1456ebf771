#pragma once
/// @file
/// @brief The HTTP side of the query gateway: answers as (status, JSON
/// body), how each query_status maps onto an HTTP status, the one error body
/// every 4xx and 5xx carries (the HTTP server's own refusals included), what
/// JSON can carry (UTF-8), URL encoding, and a pool of keep-alive clients for
/// forwarding to other instances.

#include <strata/core/error.hpp>
#include <strata/runtime/queries.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
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

/// @brief A request the gateway cannot serve as asked (bad key, bad
/// parameter): answered with 400 and the message.
class bad_request : public error {
public:
    explicit bad_request(const std::string& what) : error(what) {}
};

/// @brief An HTTP answer: status code and JSON body. Every error body has
/// "status" (a query_status name; one of the gateway's own: not_found,
/// unknown_store, unknown_query, bad_request, owner_unreachable,
/// unrenderable; or, for what the HTTP server refuses by itself, the name
/// http_status_name gives its code) and "error" (what happened, in words).
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

    /// Writes it into an httplib response. A string that is not UTF-8 (a
    /// message that quotes a bad parameter back) is written with U+FFFD in
    /// place of its bad bytes instead of failing the dump: the data paths
    /// check what they render first (`renderable`), so only messages get here.
    void write_to(httplib::Response& res) const {
        res.status = code;
        if (retry) res.set_header("Retry-After", "1");
        res.set_content(raw.empty() ? body.dump(-1, ' ', false, json::error_handler_t::replace) : raw,
                        "application/json");
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

/// @brief The "status" of an error body by HTTP status, for the answers the
/// HTTP server gives by itself (no route, a body or URI over its limits, a
/// handler that threw).
[[nodiscard]] inline std::string_view http_status_name(int code) noexcept {
    switch (code) {
        case 400: return "bad_request";
        case 401: return "unauthorized";
        case 403: return "forbidden";
        case 404: return "not_found";
        case 405: return "method_not_allowed";
        case 408: return "request_timeout";
        case 413: return "body_too_large";
        case 414: return "uri_too_long";
        case 415: return "unsupported_media_type";
        case 416: return "range_not_satisfiable";
        case 431: return "headers_too_large";
        case 500: return "internal_error";
        case 501: return "not_implemented";
        case 503: return "unavailable";
        default: return code >= 500 ? "server_error" : "client_error";
    }
}

/// @brief Gives every error answer of `server` the gateway's error body,
/// {"status", "error"}, also the ones cpp-httplib makes by itself, which
/// otherwise have an empty body: 400 (a request line or header it cannot
/// parse, a header line over CPPHTTPLIB_HEADER_MAX_LENGTH, 8 KB), 404 (no
/// route), 413 (a body over set_payload_max_length, or a form body over
/// CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, 8 KB), 414 (a request
/// line over CPPHTTPLIB_REQUEST_URI_MAX_LENGTH, 8 KB) and 500 (a handler
/// that threw: the message says what it threw). An answer that already has
/// a body keeps it. It replaces the server's error and exception handlers.
inline void json_error_bodies(httplib::Server& server) {
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "the request's handler failed";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what += ": ";
            what += e.what();
        } catch (...) {
        }
        error_answer(500, "internal_error", what).write_to(res);
    });
    server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string what;
        switch (res.status) {
            case 400: what = "the request is not HTTP this server can read (its request line or a header)"; break;
            case 404: what = "no route for " + req.method + " " + url_encode_path(req.path); break;
            case 413: what = "the request body is over what this server accepts"; break;
            case 414: what = "the request line is over what this server accepts"; break;
            default: what = "HTTP " + std::to_string(res.status); break;
        }
        error_answer(res.status, http_status_name(res.status), what).write_to(res);
        return httplib::Server::HandlerResponse::Handled;
    }));
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

/// @brief Keep-alive HTTP clients to other instances, reused across
/// requests (an httplib client serves one request at a time, so each
/// endpoint has as many as requests in flight to it).
class client_pool {
public:
    explicit client_pool(std::chrono::milliseconds timeout) : timeout_(timeout) {}

    /// @brief GETs `path` (with its query) from `endpoint`; with `parse`
    /// false, the reply's body stays raw (answer::raw).
    forwarded get(const std::string& endpoint, const std::string& path, const httplib::Headers& headers,
                  bool parse = true) {
        std::unique_ptr<httplib::Client> c = borrow(endpoint);
        forwarded f;
        if (httplib::Result r = c->Get(path, headers)) {
            answer a;
            a.code = r->status;
            a.retry = r->has_header("Retry-After");
            if (!parse && !r->body.empty() && r->body.front() == '{') {
                a.raw = std::move(r->body);
                f.reply = std::move(a);
                give_back(endpoint, std::move(c));
                return f;
            }
            a.body = json::parse(r->body, nullptr, false);
            if (a.body.is_discarded()) {
                f.failure = "the peer answered " + std::to_string(r->status) + " with a body that is not JSON";
            } else {
                f.reply = std::move(a);
                give_back(endpoint, std::move(c));
            }
        } else {
            f.failure = httplib::to_string(r.error());
        }
        return f;
    }

private:
    std::unique_ptr<httplib::Client> borrow(const std::string& endpoint) {
        {
            const std::lock_guard lock(mutex_);
            auto& idle = idle_[endpoint];
            if (!idle.empty()) {
                std::unique_ptr<httplib::Client> c = std::move(idle.back());
                idle.pop_back();
                return c;
            }
        }
        const auto [host, port] = split_endpoint(endpoint);
        auto c = std::make_unique<httplib::Client>(host, port);
        c->set_keep_alive(true);
        c->set_tcp_nodelay(true);  // a request's header and body go out at once, not 40 ms apart (Nagle)
        c->set_connection_timeout(timeout_);
        c->set_read_timeout(timeout_);
        c->set_write_timeout(timeout_);
        return c;
    }

    void give_back(const std::string& endpoint, std::unique_ptr<httplib::Client> c) {
        const std::lock_guard lock(mutex_);
        idle_[endpoint].push_back(std::move(c));
    }

    std::chrono::milliseconds timeout_;
    std::mutex mutex_;
    std::map<std::string, std::vector<std::unique_ptr<httplib::Client>>, std::less<>> idle_;
};

}  // namespace strata::gateway
