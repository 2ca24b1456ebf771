// Fuzz target: a request as strata::http's server reads it
// (strata/http/server.hpp): Beast's parser with the server's limits, then
// the request as handlers see it (path, decoded query) and the router with
// routes shaped like the gateway's and the shared-state service's.
//
// Input: the bytes of one request, as a client would send them.
//
// Expected: the parser accepts the bytes or names an error; an accepted
// request gets exactly one answer from the router; every answer of 400 or
// more is the JSON error body {"status": string, "error": non-empty string};
// captures and parameters are whatever the bytes decode to, never a crash.
// Where strata::gateway is built, the gateway's own parameters too
// (position, wait_ms, allow_standby, max_lag, limit, cursor, after): each
// parses or is a bad_request; what a forwarded request says of them
// (request_options::to_query_string) reads back as the same; a cursor the
// gateway gives out reads back as the same page. Anything else is a finding.

#include "fuzz_support.hpp"

#include <strata/http/router.hpp>
#ifdef STRATA_FUZZ_GATEWAY
#include <strata/gateway/requests.hpp>
#endif

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace {

namespace h = strata::http;
using verb = h::beast_http::verb;

/// Keeps the one answer a request gets.
class capture final : public h::detail::reply_sink {
public:
    void deliver(h::response r) override {
        ++answers;
        last = std::move(r);
    }
    int answers = 0;
    std::optional<h::response> last;
};

const h::router& routes() {
    static const h::router r = [] {
        h::router out;
        const auto echo = [](const h::exchange& ex) {
            nlohmann::json j{{"captures", ex.captures()}, {"path", ex.req().path()}};
            for (const auto& [k, v] : ex.req().query_params()) j["query"][k] = v;
            // What a handler quotes back may be any bytes: dumped as the server would.
            return h::response(200, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        };
        out.route_inline(verb::get, "/strata/stores/{}/keys/{*}", echo);
        out.route_inline(verb::get, "/strata/stores/{}/partitions/{}/queries/{}", echo);
        out.route_inline(verb::get, "/strata/instances", echo);
        out.route_inline(verb::get, "/objects/{*}", echo);
        out.route_inline(verb::put, "/objects/{*}", echo);
        out.route_inline(verb::delete_, "/objects/{*}", echo);
        out.route_inline(verb::get, "/throws/{}", [](const h::exchange& ex) -> h::response {
            throw std::runtime_error("quoting " + ex.capture(0));
        });
        out.route_async(verb::get, "/drops", [](const h::exchange&) {});
        return out;
    }();
    return r;
}

void check_answer(const h::response& r) {
    strata_fuzz::expect(r.status >= 100 && r.status <= 599, "an answer with a status outside 100-599");
    const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
    strata_fuzz::expect(!body.is_discarded(), "an answer whose body is not JSON");
    if (r.status < 400) return;
    strata_fuzz::expect(body.is_object() && body.contains("status") && body["status"].is_string(),
                        "an error body without a string \"status\"");
    strata_fuzz::expect(body.contains("error") && body["error"].is_string() &&
                            !body["error"].get<std::string>().empty(),
                        "an error body without a message");
}

#ifdef STRATA_FUZZ_GATEWAY
h::request get_of(std::string target) {
    return h::request(h::beast_http::request<h::beast_http::string_body>(verb::get, target, 11), "127.0.0.1:1");
}

void check_gateway_parameters(const h::request& req) {
    namespace gw = strata::gateway;
    const gw::gateway_options o;
    try {
        const gw::request_options r = gw::request_options::from(req, o);
        const gw::request_options again = gw::request_options::from(get_of("/k?" + r.to_query_string().substr(1)), o);
        strata_fuzz::expect(again.read.allow_standby == r.read.allow_standby &&
                                again.read.max_standby_lag == r.read.max_standby_lag &&
                                again.read.min_position == r.read.min_position &&
                                again.read.position_wait == r.read.position_wait,
                            "a forwarded request's parameters that read back as others");
    } catch (const gw::bad_request&) {
    }
    try {
        const gw::page_request p = gw::page_request::parse(req, o);
        strata_fuzz::expect(p.limit >= 1 && p.limit <= o.max_page_size, "a page limit out of bounds");
        const gw::page_request again =
            gw::page_request::parse(get_of("/all?cursor=" + gw::page_request::cursor(p.partition, p.after)), o);
        strata_fuzz::expect(again.partition == p.partition && again.after == p.after,
                            "a cursor the gateway gives out that reads back as another page");
    } catch (const gw::bad_request&) {
    }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::allocation_watch watch(size, {});
    h::beast_http::request_parser<h::beast_http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(64 * 1024);
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t used = 0;
    const char* bytes = reinterpret_cast<const char*>(data);
    while (used < size && !parser.is_done()) {
        const std::size_t n = parser.put(boost::asio::buffer(bytes + used, size - used), ec);
        if (ec == h::beast_http::error::need_more) break;
        if (ec) return 0;  // refused with a named error: the server answers it (400, 413, 431)
        if (n == 0) break;
        used += n;
    }
    if (!parser.is_done()) return 0;  // incomplete: the server waits, then answers 408

    auto sink = std::make_shared<capture>();
    {
        auto state = std::make_shared<h::detail::exchange_state>(h::request(parser.release(), "127.0.0.1:1"), sink,
                                                                 nullptr, 1);
        const h::request& req = state->req;
        (void)req.param("q");
        (void)req.header("Authorization");
#ifdef STRATA_FUZZ_GATEWAY
        check_gateway_parameters(req);
#endif
        routes().dispatch(std::move(state));
    }
    strata_fuzz::expect(sink->answers == 1, "a request answered other than once");
    check_answer(*sink->last);
    return 0;
}
