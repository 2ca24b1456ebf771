// strata::http over TLS, on loopback, with a test CA that
// scripts/make-test-certs.sh makes for each run: the client trusts only
// servers its CA signed for the host it asked for, a server that requires
// client certificates admits only those its CA signed and names them to the
// handlers, and files that cannot be used are errors that name them.

#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

#include <strata/http/client.hpp>
#include <strata/http/server.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

namespace h = strata::http;
using verb = h::beast_http::verb;

/// The test CA and certificates, made once per process.
const test_support::temp_dir& certs() {
    static const test_support::temp_dir dir;
    static const bool made = test_support::make_test_certs(dir.path());
    REQUIRE(made);
    return dir;
}

std::string cert(const char* name) { return (certs() / name).string(); }

/// The server counts a failed handshake on its own thread, after the client
/// may already have seen the failure: wait (up to 10 s) for the count.
std::uint64_t tls_failures_reaching(const h::server& s, std::uint64_t at_least) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (s.counters().tls_failures < at_least && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return s.counters().tls_failures;
}

h::router whoami_routes() {
    h::router r;
    r.route_inline(verb::get, "/whoami", [](const h::exchange& ex) {
        return h::response(200, "{\"peer\":\"" + ex.req().peer_name() + "\"}");
    });
    return r;
}

h::server_options tls_server(const char* name, bool require_client_certificate = false) {
    h::server_options o;
    o.io_threads = 2;
    o.header_timeout = std::chrono::milliseconds(2'000);
    o.tls = h::tls_options{cert((std::string(name) + ".pem").c_str()), cert((std::string(name) + ".key").c_str()),
                           require_client_certificate ? cert("ca.pem") : ""};
    return o;
}

h::client_options tls_client(const char* ca, const char* own = nullptr) {
    h::client_options o;
    o.tls = h::client_tls_options{cert(ca), own ? cert((std::string(own) + ".pem").c_str()) : "",
                                  own ? cert((std::string(own) + ".key").c_str()) : ""};
    return o;
}

}  // namespace

TEST_CASE("http over TLS: a client that trusts the server's CA is served, over IPv4 and by name", "[http][tls]") {
    h::server s(whoami_routes(), tls_server("server"));
    h::client c(tls_client("ca.pem"));
    for (const std::string& at : {s.endpoint(), "localhost:" + std::to_string(s.port())}) {
        const h::client_result r = c.get(at, "/whoami");
        INFO(at << ": " << r.failure);
        REQUIRE(r.reply);
        CHECK(r.reply->status == 200);
        CHECK(r.reply->body == "{\"peer\":\"\"}");  // no client certificate asked for
    }
    // Plain HTTP to the TLS port: the handshake fails and the connection closes.
    h::client plain;
    CHECK_FALSE(plain.get(s.endpoint(), "/whoami").reply);
    CHECK(tls_failures_reaching(s, 1) >= 1);
}

TEST_CASE("http over TLS: a server no trusted CA signed is refused by the client, with the reason", "[http][tls]") {
    h::server stranger(whoami_routes(), tls_server("stranger"));
    h::client c(tls_client("ca.pem"));
    const h::client_result r = c.get(stranger.endpoint(), "/whoami");
    CHECK_FALSE(r.reply);
    CHECK_THAT(r.failure, Catch::Contains("TLS handshake with 127.0.0.1") && Catch::Contains("certificate verify failed"));

    // Trusting another CA than the one that signed the server: refused too.
    h::server s(whoami_routes(), tls_server("server"));
    h::client other(tls_client("other-ca.pem"));
    const h::client_result r2 = other.get(s.endpoint(), "/whoami");
    CHECK_FALSE(r2.reply);
    CHECK_THAT(r2.failure, Catch::Contains("certificate verify failed"));
}

TEST_CASE("http over TLS: with client certificates required, only clients the CA signed get in, and handlers see "
          "their name",
          "[http][tls]") {
    h::server s(whoami_routes(), tls_server("server", true));
    h::client peer(tls_client("ca.pem", "client"));
    const h::client_result in = peer.get(s.endpoint(), "/whoami");
    INFO(in.failure);
    REQUIRE(in.reply);
    CHECK(in.reply->body == "{\"peer\":\"strata-peer\"}");

    h::client anonymous(tls_client("ca.pem"));
    CHECK_FALSE(anonymous.get(s.endpoint(), "/whoami").reply);
    h::client stranger(tls_client("ca.pem", "stranger"));
    CHECK_FALSE(stranger.get(s.endpoint(), "/whoami").reply);
    CHECK(tls_failures_reaching(s, 2) >= 2);
}

TEST_CASE("http over TLS: a certificate, key or CA file that cannot be used is an error that names it", "[http][tls]") {
    h::server_options o = tls_server("server");
    o.tls->certificate_chain_file = (certs() / "missing.pem").string();
    CHECK_THROWS_WITH(h::server(whoami_routes(), o),
                      Catch::Contains("the TLS certificate chain '" + o.tls->certificate_chain_file + "' cannot be used"));
    o = tls_server("server");
    o.tls->private_key_file = cert("client.key");  // not the certificate's key
    CHECK_THROWS_WITH(h::server(whoami_routes(), o), Catch::Contains("the TLS private key"));
    h::client_options co = tls_client("ca.pem");
    co.tls->ca_file = (certs() / "nope.pem").string();
    CHECK_THROWS_WITH(h::client(co), Catch::Contains("the TLS CA file"));
}
