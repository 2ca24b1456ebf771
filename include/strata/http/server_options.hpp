#pragma once
/// @file
/// @brief How a strata::http::server listens, its limits and timeouts
/// (server_options, with tls_options for HTTPS), and what it counts.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace strata::http {

/// @brief TLS for a server: its certificate, and optionally the CA its
/// clients' certificates must be signed by (mutual TLS).
struct tls_options {
    std::string certificate_chain_file;  ///< PEM: the server's certificate, then any intermediates
    std::string private_key_file;        ///< PEM, unencrypted
    /// PEM; when set, a client must present a certificate signed by one of
    /// these CAs, or its handshake fails (request::peer_name() then names it).
    std::string client_ca_file;
};

/// @brief How a server listens, and its limits.
struct server_options {
    std::string host = "127.0.0.1";  ///< loopback unless told otherwise
    std::uint16_t port = 0;          ///< 0: a free port (server::port() says which)
    unsigned io_threads = 0;         ///< 0: one per core
    std::size_t max_connections = 16'384;  ///< open at once; the process's open-file limit is raised to fit
    std::size_t max_in_flight = 4'096;     ///< requests being handled at once, over all connections
    std::size_t work_threads = 16;         ///< the pool for routes whose work may block (router.hpp)
    std::size_t work_queue = 1'024;        ///< requests waiting for a worker, at most
    std::chrono::milliseconds idle_timeout{60'000};    ///< a keep-alive connection with no request
    std::chrono::milliseconds header_timeout{5'000};   ///< from a request's first byte to its last header
    std::chrono::milliseconds body_timeout{30'000};    ///< for the body, once the header is in
    std::chrono::milliseconds write_timeout{30'000};   ///< for a response
    std::uint32_t header_limit = 16 * 1024;            ///< the request line and headers, in bytes
    std::uint64_t body_limit = 1024 * 1024;            ///< bytes
    std::size_t target_limit = 8 * 1024;               ///< the request target (path and query), in bytes
    int retry_after_s = 1;                             ///< Retry-After of a 503 for load
    std::optional<tls_options> tls;                    ///< HTTPS when set (the handshake within header_timeout)
};

/// @brief What a server counted (read from any thread).
struct server_counters {
    std::atomic<std::uint64_t> connections_accepted{0};
    std::atomic<std::uint64_t> connections_refused{0};  ///< over max_connections
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> refused_busy{0};  ///< 503: over max_in_flight, or the work queue full
    std::atomic<std::uint64_t> timeouts{0};      ///< connections closed for a slow header, body or write
    std::atomic<std::uint64_t> bad_requests{0};  ///< 400, 413, 414, 431 of the server itself
    std::atomic<std::uint64_t> tls_failures{0};  ///< handshakes that failed (an untrusted or missing client certificate, not TLS)
};

}  // namespace strata::http
