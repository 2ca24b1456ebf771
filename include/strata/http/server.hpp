#pragma once
/// @file
/// @brief strata's HTTP/1.1 server, on Boost.Beast and Asio: a fixed number
/// of I/O threads serve every connection asynchronously, so idle keep-alive
/// connections and slow clients cost memory, never a thread.
///
///     strata::http::router routes;
///     routes.route_inline(strata::http::beast_http::verb::get, "/hello/{}", [](const strata::http::exchange& ex) {
///         return strata::http::response{200, "\"hello " + ex.capture(0) + "\""};
///     });
///     strata::http::server server(std::move(routes), {.host = "127.0.0.1", .port = 8080});
///     // serves until server.stop() or its destruction
///
/// Each connection goes through: waiting for a request (at most
/// `idle_timeout`, holding no buffer), its header (`header_timeout` from
/// the first byte, at most `header_limit` bytes, a target of at most
/// `target_limit`), its body (`body_timeout`, at most `body_limit` bytes),
/// the handler, and the response (`write_timeout`). Beyond a limit the
/// client gets an error body (every error has the same JSON body,
/// message.hpp) and the connection closes: 408, 413, 414, 431, or 400 for
/// what is not HTTP. Beyond `max_connections` a new connection is answered
/// 503 with Retry-After and closed; beyond `max_in_flight` requests being
/// handled at once, a request is answered 503 with Retry-After and its
/// connection stays. Requests on one connection are answered in turn.

#include <strata/core/error.hpp>
#include <strata/http/detail/connection.hpp>
#include <strata/http/router.hpp>
#include <strata/http/server_options.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

namespace strata::http {

namespace detail {

/// Raises the soft limit on open files to the hard one, so that the
/// connections the server allows have descriptors.
inline void raise_open_file_limit() noexcept {
    rlimit l{};
    if (::getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
        l.rlim_cur = l.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &l);
    }
}

}  // namespace detail

/// @brief An HTTP/1.1 server; see the file comment. It is bound once
/// constructed (its port known) and serves from `start` until `stop()` or
/// its destruction.
class server {
public:
    /// @brief Binds, and serves nothing yet (connections wait in the
    /// backlog): the port is known before the routes are, for an
    /// application that names its own endpoint.
    /// @throws boost::system::system_error the address cannot be bound
    explicit server(const server_options& o)
        : shared_(std::make_shared<detail::server_shared>(o)), acceptor_(net::make_strand(ioc_)),
          retry_(acceptor_.get_executor()) {
        detail::raise_open_file_limit();
        const tcp::endpoint at(net::ip::make_address(o.host), o.port);
        acceptor_.open(at.protocol());
        acceptor_.set_option(net::socket_base::reuse_address(true));
        acceptor_.bind(at);
        acceptor_.listen(net::socket_base::max_listen_connections);
        port_ = acceptor_.local_endpoint().port();
    }

    /// @brief Binds and serves `routes` at once.
    server(router routes, const server_options& o) : server(o) { start(std::move(routes)); }

    /// @brief Serves `routes` (once).
    void start(router routes) {
        if (!threads_.empty()) throw usage_error("strata::http::server: started twice");
        shared_->routes = std::move(routes);
        accept();
        const unsigned configured = shared_->options.io_threads;
        const unsigned n = configured != 0 ? configured : std::max(1U, std::thread::hardware_concurrency());
        threads_.reserve(n);
        for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { ioc_.run(); });
    }

    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server() { stop(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// "host:port", as peers and clients reach it.
    [[nodiscard]] std::string endpoint() const {
        const std::string& h = shared_->options.host;
        return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::to_string(port_);
    }
    [[nodiscard]] const server_counters& counters() const noexcept { return shared_->counters; }
    /// The executor of the I/O threads (a client for forwarding runs on it).
    [[nodiscard]] net::any_io_executor executor() { return ioc_.get_executor(); }
    [[nodiscard]] std::size_t open_connections() const noexcept { return shared_->connections.load(); }
    [[nodiscard]] std::size_t in_flight() const noexcept { return shared_->in_flight.load(); }

    /// @brief Stops accepting, lets the work pool's running jobs finish
    /// (queued ones are answered 500 as they go), and ends every connection.
    void stop() {
        if (shared_->stopping.exchange(true)) return;
        net::post(acceptor_.get_executor(), [this] {
            beast::error_code ec;
            acceptor_.close(ec);
            retry_.cancel();
        });
        shared_->pool.stop();
        ioc_.stop();
        for (std::thread& t : threads_)
            if (t.joinable()) t.join();
        shared_->stopped.store(true);
        // No handler runs now: the listening socket and every connection
        // close here, so that clients are refused, not left waiting.
        beast::error_code ec;
        acceptor_.close(ec);
        std::vector<std::shared_ptr<detail::server_connection>> open;
        {
            const std::lock_guard lock(shared_->live_mutex);
            for (auto& [key, weak] : shared_->live)
                if (auto c = weak.lock()) open.push_back(std::move(c));
        }
        for (auto& c : open) c->force_close();
    }

private:
    void accept() {
        acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted || shared_->stopping.load()) return;
            if (ec) {
                // Out of descriptors (EMFILE) or the like: try again shortly
                // instead of spinning; open connections are served meanwhile.
                retry_.expires_after(std::chrono::milliseconds(50));
                retry_.async_wait([this](beast::error_code e) {
                    if (!e) accept();
                });
                return;
            }
            shared_->counters.connections_accepted.fetch_add(1);
            const bool refuse = shared_->connections.load() >= shared_->options.max_connections;
            if (shared_->tls)
                std::make_shared<detail::connection<beast::ssl_stream<beast::tcp_stream>>>(shared_, std::move(s),
                                                                                          *shared_->tls)
                    ->start(refuse);
            else
                std::make_shared<detail::connection<beast::tcp_stream>>(shared_, std::move(s))->start(refuse);
            accept();
        });
    }

    std::shared_ptr<detail::server_shared> shared_;
    net::io_context ioc_;
    tcp::acceptor acceptor_;
    net::steady_timer retry_;
    std::uint16_t port_ = 0;
    std::vector<std::thread> threads_;
};

}  // namespace strata::http
