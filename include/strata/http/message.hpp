#pragma once
/// @file
/// @brief The messages of strata's HTTP server and client (server.hpp,
/// client.hpp): a request as a handler sees it (method, path, decoded query
/// parameters, headers, body), a response, percent-decoding, and the one
/// JSON error body every 4xx and 5xx carries: {"status": name, "error": words}.

#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::http {

namespace beast_http = boost::beast::http;

/// @brief Query parameters by name, percent-decoded (the first of a repeated name).
using params = std::map<std::string, std::string, std::less<>>;

/// @brief Decodes %XX escapes (and '+' as a space when `plus_is_space`, as
/// in a query string). A malformed escape stays as it is.
[[nodiscard]] inline std::string percent_decode(std::string_view s, bool plus_is_space = false) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
            i += 2;
        } else if (plus_is_space && s[i] == '+') {
            out.push_back(' ');
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

/// @brief The parameters of a query string ("a=1&b=x%20y").
[[nodiscard]] inline params parse_query_string(std::string_view q) {
    params out;
    while (!q.empty()) {
        const std::size_t amp = q.find('&');
        const std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
        if (pair.empty()) continue;
        const std::size_t eq = pair.find('=');
        std::string name = percent_decode(pair.substr(0, eq), true);
        std::string value = eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
        out.emplace(std::move(name), std::move(value));  // the first of a name stays
    }
    return out;
}

/// @brief A request as a handler sees it.
class request {
public:
    request() = default;
    request(beast_http::request<beast_http::string_body> m, std::string remote, std::string peer_name = {})
        : message_(std::move(m)), remote_(std::move(remote)), peer_name_(std::move(peer_name)) {
        const std::string_view target(message_.target().data(), message_.target().size());
        const std::size_t q = target.find('?');
        path_ = std::string(target.substr(0, q));
        if (q != std::string_view::npos) params_ = parse_query_string(target.substr(q + 1));
    }

    /// "GET", "PUT", ...
    [[nodiscard]] std::string_view method() const {
        const auto m = message_.method_string();
        return {m.data(), m.size()};
    }
    [[nodiscard]] beast_http::verb verb() const { return message_.method(); }
    /// The path as sent (still percent-encoded: an encoded '/' is no separator).
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// The parameters of the target's query string.
    [[nodiscard]] const params& query_params() const noexcept { return params_; }
    [[nodiscard]] bool has_param(std::string_view name) const { return params_.find(name) != params_.end(); }
    /// The parameter's decoded value, or "" when absent.
    [[nodiscard]] std::string param(std::string_view name) const {
        const auto it = params_.find(name);
        return it == params_.end() ? std::string() : it->second;
    }
    [[nodiscard]] bool has_header(std::string_view name) const {
        return message_.find(boost::beast::string_view(name.data(), name.size())) != message_.end();
    }
    /// The header's value, or "" when absent (names are case-insensitive).
    [[nodiscard]] std::string_view header(std::string_view name) const {
        const auto it = message_.find(boost::beast::string_view(name.data(), name.size()));
        if (it == message_.end()) return {};
        return {it->value().data(), it->value().size()};
    }
    [[nodiscard]] const std::string& body() const noexcept { return message_.body(); }
    /// The peer's address and port, "127.0.0.1:51234".
    [[nodiscard]] const std::string& remote() const noexcept { return remote_; }
    /// Over TLS with client certificates required: the common name of the
    /// client's certificate, which the handshake verified; else "".
    [[nodiscard]] const std::string& peer_name() const noexcept { return peer_name_; }
    [[nodiscard]] bool keep_alive() const { return message_.keep_alive(); }
    [[nodiscard]] const beast_http::request<beast_http::string_body>& message() const noexcept { return message_; }

private:
    beast_http::request<beast_http::string_body> message_;
    std::string remote_;
    std::string peer_name_;
    std::string path_;
    params params_;
};

/// @brief A response: status, body, content type and any other headers.
struct response {
    response() = default;
    response(int code, std::string b, std::string type = "application/json")
        : status(code), body(std::move(b)), content_type(std::move(type)) {}

    int status = 200;
    std::string body;
    std::string content_type = "application/json";
    /// Headers besides Server, Content-Type, Content-Length and Connection,
    /// which the server writes itself.
    std::vector<std::pair<std::string, std::string>> headers;

    response& header(std::string name, std::string value) {
        headers.emplace_back(std::move(name), std::move(value));
        return *this;
    }
};

/// @brief The "status" of an error body by HTTP status, for the answers the
/// server gives by itself.
[[nodiscard]] inline std::string_view status_name(int code) noexcept {
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

/// @brief The error body {"status", "error"}: `what` that is not UTF-8 (a
/// message quoting a bad parameter back) gets U+FFFD for its bad bytes.
/// `retry_after_s` > 0 adds Retry-After: the condition is temporary.
[[nodiscard]] inline response error_response(int code, std::string_view status, std::string_view what,
                                             int retry_after_s = 0) {
    response r;
    r.status = code;
    r.body = nlohmann::json{{"status", status}, {"error", what}}.dump(-1, ' ', false,
                                                                       nlohmann::json::error_handler_t::replace);
    if (retry_after_s > 0) r.header("Retry-After", std::to_string(retry_after_s));
    return r;
}

/// @brief error_response with the status named by its code (status_name).
[[nodiscard]] inline response error_response(int code, std::string_view what, int retry_after_s = 0) {
    return error_response(code, status_name(code), what, retry_after_s);
}

}  // namespace strata::http
