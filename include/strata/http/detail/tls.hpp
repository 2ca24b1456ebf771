#pragma once
/// @file
/// @brief What the TLS contexts of strata::http's server and client share:
/// TLS 1.2 and later only, and a file that cannot be used named in the error.

#include <boost/asio/ssl.hpp>
#include <boost/system/system_error.hpp>

#include <stdexcept>
#include <string>

namespace strata::http::detail {

/// No SSL 2 or 3, no TLS 1.0 or 1.1.
inline void modern_tls_only(boost::asio::ssl::context& ctx) {
    using c = boost::asio::ssl::context;
    ctx.set_options(c::default_workarounds | c::no_sslv2 | c::no_sslv3 | c::no_tlsv1 | c::no_tlsv1_1);
}

/// Runs `use`, a call of the context that reads `file`; its failure becomes
/// an error that names the file and what it was for.
/// @throws std::runtime_error the file cannot be read or used
template <class Use>
void use_tls_file(const std::string& what, const std::string& file, Use&& use) {
    try {
        use();
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("strata::http: the TLS " + what + " '" + file + "' cannot be used: " + e.what());
    }
}

}  // namespace strata::http::detail
