#pragma once
/// @file
/// @brief The TLS contexts of strata::http's server and client: TLS 1.2 and
/// later only, a file that cannot be used named in the error, and the
/// server's context made from its options.

#include <strata/core/error.hpp>
#include <strata/http/server_options.hpp>

#include <boost/asio/ssl.hpp>
#include <boost/system/system_error.hpp>

#include <string>

namespace strata::http::detail {

/// No SSL 2 or 3, no TLS 1.0 or 1.1.
inline void modern_tls_only(boost::asio::ssl::context& ctx) {
    using c = boost::asio::ssl::context;
    ctx.set_options(c::default_workarounds | c::no_sslv2 | c::no_sslv3 | c::no_tlsv1 | c::no_tlsv1_1);
}

/// Runs `use`, a call of the context that reads `file`; its failure becomes
/// an error that names the file and what it was for.
/// @throws usage_error the file cannot be read or used
template <class Use>
void use_tls_file(const std::string& what, const std::string& file, Use&& use) {
    try {
        use();
    } catch (const boost::system::system_error& e) {
        throw usage_error("strata::http: the TLS " + what + " '" + file + "' cannot be used: " + e.what());
    }
}

/// The TLS context of a server's options.
/// @throws usage_error a file that cannot be read or used, named
inline boost::asio::ssl::context make_server_tls(const tls_options& t) {
    namespace ssl = boost::asio::ssl;
    ssl::context ctx(ssl::context::tls_server);
    modern_tls_only(ctx);
    const auto load = [](const std::string& what, const std::string& file, auto&& f) { use_tls_file(what, file, f); };
    load("certificate chain", t.certificate_chain_file, [&] { ctx.use_certificate_chain_file(t.certificate_chain_file); });
    load("private key", t.private_key_file, [&] { ctx.use_private_key_file(t.private_key_file, ssl::context::pem); });
    if (!t.client_ca_file.empty()) {
        load("client CA file", t.client_ca_file, [&] { ctx.load_verify_file(t.client_ca_file); });
        ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    return ctx;
}

}  // namespace strata::http::detail
