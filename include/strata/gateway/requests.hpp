#pragma once
/// @file
/// @brief What a gateway request asks, from its path's query and headers:
/// the gateway's options, a read's options (standby, lag, position), who
/// sent it (forwarded by another instance), and the page of a scan (limit,
/// range, cursor).

#include <strata/gateway/error.hpp>
#include <strata/gateway/http.hpp>
#include <strata/http/message.hpp>
#include <strata/runtime/queries.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::gateway {

/// @brief Compares a secret in time that does not depend on where it differs.
[[nodiscard]] inline bool same_secret(std::string_view given, std::string_view expected) noexcept {
    unsigned char diff = given.size() == expected.size() ? 0 : 1;
    for (std::size_t i = 0; i < expected.size(); ++i)
        diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
    return diff == 0;
}

/// @brief The refusal of a read that does not carry
/// `Authorization: Bearer <token>`: 401 without the header, 403 with
/// another token ("the bearer token is not <whose>"); none when `token` is
/// empty (no token asked for).
[[nodiscard]] inline std::optional<answer> bearer_refusal(const http::request& req, std::string_view token,
                                                          std::string_view whose) {
    if (token.empty()) return std::nullopt;
    const std::string_view auth = req.header("Authorization");
    if (auth.empty()) return error_answer(401, "unauthorized", "reads need the header Authorization: Bearer <token>");
    if (!same_secret(auth, "Bearer " + std::string(token)))
        return error_answer(403, "forbidden", "the bearer token is not " + std::string(whose));
    return std::nullopt;
}

/// @brief The query parameters of a request, by name (percent-decoded).
using query_args = std::map<std::string, std::string, std::less<>>;

/// @brief How a gateway serves.
struct gateway_options {
    std::string prefix = "/strata";                     ///< every route lives under it
    std::chrono::milliseconds forward_timeout{2'000};   ///< connect and read timeout of a forwarded request
    /// A read that a standby may answer (`allow_standby`) is also sent to
    /// the next copy when the one asked has not answered within this (0:
    /// never; the next is asked only after a failure or forward_timeout):
    /// an owner that hangs costs this much, not forward_timeout.
    std::chrono::milliseconds hedge_after{50};
    std::size_t default_page_size = 100;                ///< entries per page of a scan when the request names none
    std::size_t max_page_size = 1'000;                  ///< more is a bad request
    std::chrono::milliseconds max_position_wait{10'000};  ///< the most a read-your-writes request may wait

    /// Reads need `Authorization: Bearer <token>` when set: 401 without
    /// the header, 403 with another token. Forwarded requests carry it on.
    std::string bearer_token{};
    /// Who may mark a request as forwarded (`X-Strata-Forwarded`: the
    /// instance answers it or says why not, and never forwards it). With a
    /// secret, only a request that also carries it (`X-Strata-Peer-Secret`,
    /// which every instance sends when it forwards); with peer names, only a
    /// TLS client whose verified certificate has one of them as its common
    /// name (request::peer_name). Otherwise anyone may (a 403 `forbidden`
    /// otherwise). Neither set: anyone, which suits a private network only.
    std::string peer_secret{};
    std::vector<std::string> peer_names{};
    /// TLS to the other instances when forwarding (their endpoints serve
    /// HTTPS); with a certificate and key, for servers that require one.
    std::optional<http::client_tls_options> peer_tls{};
};

/// @brief What a request asks besides its key, from its query parameters
/// and headers.
struct request_options {
    runtime::read_options read{};
    /// The request came from another instance's gateway: it is answered here
    /// or refused with the reason, never forwarded again (so a stale view of
    /// the assignment cannot bounce it between instances).
    bool forwarded = false;
    std::string authorization{};  ///< the Authorization header, passed on when forwarding

    /// @throws bad_request a parameter that does not parse
    static request_options from(const http::request& req, const gateway_options& o) {
        request_options r;
        r.forwarded = req.has_header(forwarded_header);
        r.authorization = std::string(req.header("Authorization"));
        if (req.has_param("allow_standby")) {
            const std::string v = req.param("allow_standby");
            r.read.allow_standby = v.empty() || v == "true" || v == "1";
        }
        if (req.has_param("max_lag")) r.read.max_standby_lag = count(req, "max_lag");
        if (req.has_param("position")) r.read.min_position = count(req, "position");
        r.read.position_wait = std::min(o.max_position_wait, req.has_param("wait_ms")
                                                                 ? std::chrono::milliseconds(count(req, "wait_ms"))
                                                                 : std::chrono::milliseconds(2'000));
        return r;
    }

    /// The query string that says the same to another instance.
    [[nodiscard]] std::string to_query_string() const {
        std::string q;
        if (read.allow_standby) q += "&allow_standby=true";
        if (read.max_standby_lag != std::numeric_limits<std::int64_t>::max())
            q += "&max_lag=" + std::to_string(read.max_standby_lag);
        if (read.min_position >= 0) q += "&position=" + std::to_string(read.min_position);
        q += "&wait_ms=" + std::to_string(read.position_wait.count());
        return q;
    }

    static constexpr const char* forwarded_header = "X-Strata-Forwarded";
    static constexpr const char* peer_secret_header = "X-Strata-Peer-Secret";

    /// A parameter that is a count (0 or more): a position, a lag, a wait.
    /// @throws bad_request not an integer, or negative
    static std::int64_t count(const http::request& req, const char* name) {
        const std::int64_t n = number(req, name);
        if (n < 0) throw bad_request(std::string("the parameter ") + name + "=" + std::to_string(n) + " is negative");
        return n;
    }

    static std::int64_t number(const http::request& req, const char* name) {
        const std::string v = req.param(name);
        std::int64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size())
            throw bad_request(std::string("the parameter ") + name + "='" + v + "' is not an integer");
        return n;
    }
};

/// @brief Which page of a scan a request wants.
struct page_request {
    std::size_t limit = 100;
    std::optional<std::string> from, to;  ///< a range's bounds, as keys are written in a URL
    std::int32_t partition = 0;           ///< the partition the page starts in
    std::optional<json> after;            ///< the last key of the previous page in that partition

    /// The cursor of a page that starts in partition p after key `after` (opaque to clients).
    static std::string cursor(std::int32_t p, const std::optional<json>& after) {
        std::string c = std::to_string(p);
        if (after) {
            static constexpr char hex[] = "0123456789abcdef";
            c += '~';
            for (const unsigned char ch : after->dump()) {
                c.push_back(hex[ch >> 4]);
                c.push_back(hex[ch & 15]);
            }
        }
        return c;
    }

    /// @throws bad_request a limit out of bounds, a cursor that is not one
    static page_request parse(const http::request& req, const gateway_options& o) {
        page_request r;
        r.limit = o.default_page_size;
        if (req.has_param("limit")) {
            const std::int64_t n = request_options::number(req, "limit");
            if (n <= 0 || static_cast<std::size_t>(n) > o.max_page_size)
                throw bad_request("limit must be between 1 and " + std::to_string(o.max_page_size));
            r.limit = static_cast<std::size_t>(n);
        }
        if (req.has_param("from")) r.from = req.param("from");
        if (req.has_param("to")) r.to = req.param("to");
        if (req.has_param("cursor")) parse_cursor(req.param("cursor"), r);
        if (req.has_param("after")) {
            json a = json::parse(req.param("after"), nullptr, false);
            if (a.is_discarded()) throw bad_request("the parameter after= is not JSON");
            r.after = std::move(a);
        }
        return r;
    }

private:
    static void parse_cursor(const std::string& c, page_request& r) {
        const auto bad = [&] { return bad_request("'" + c + "' is not a cursor this gateway gave out"); };
        const auto tilde = c.find('~');
        const std::string p = c.substr(0, tilde);
        const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), r.partition);
        if (ec != std::errc() || end != p.data() + p.size() || r.partition < 0) throw bad();
        if (tilde == std::string::npos) return;
        const std::string hex = c.substr(tilde + 1);
        if (hex.size() % 2 != 0) throw bad();
        std::string text;
        for (std::size_t i = 0; i < hex.size(); i += 2) {
            unsigned v = 0;
            const auto [e, err] = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
            if (err != std::errc() || e != hex.data() + i + 2) throw bad();
            text.push_back(static_cast<char>(v));
        }
        json a = json::parse(text, nullptr, false);
        if (a.is_discarded()) throw bad();
        r.after = std::move(a);
    }
};

}  // namespace strata::gateway
