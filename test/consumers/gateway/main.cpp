// Uses strata::gateway from an installed strata: maps query statuses onto
// HTTP as the gateway documents, and builds with Boost.Beast and nlohmann-json
// through strata::gateway (strata::http). Exits non-zero on a wrong result.
#include <strata/gateway/gateway.hpp>

#include <iostream>

int main() {
    strata::runtime::query_outcome restoring;
    restoring.status = strata::runtime::query_status::restoring;
    restoring.restored = 5;
    restoring.to_restore = 10;
    const strata::gateway::answer a = strata::gateway::not_answered(restoring);
    strata::runtime::query_outcome late;
    late.status = strata::runtime::query_status::position_not_reached;
    const bool ok = a.code == 503 && a.retry && a.body["status"] == "restoring" && a.body["restored"] == 5 &&
                    strata::gateway::not_answered(late).code == 504 &&
                    strata::gateway::url_encode("a b/c") == "a%20b%2Fc" &&
                    strata::gateway::split_endpoint("127.0.0.1:8081").second == 8081;
    if (!ok) {
        std::cerr << "FAILED: the gateway's status mapping is not the documented one\n";
        return 1;
    }
    strata::http::router routes;  // strata::http's server side, through strata::gateway
    routes.route_inline(strata::http::beast_http::verb::get, "/", [](const strata::http::exchange&) {
        return strata::http::response(200, "{}");
    });
    std::cout << "strata::gateway consumer: statuses map as documented\n";
    return 0;
}
