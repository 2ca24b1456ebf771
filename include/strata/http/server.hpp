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

#include <strata/http/message.hpp>
#include <strata/http/router.hpp>
#include <strata/http/work_pool.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/resource.h>

namespace strata::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

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

namespace detail {

/// What every connection of one server reaches.
/// The TLS context of a server's options.
/// @throws std::runtime_error a file that cannot be read or used, named
inline net::ssl::context make_server_tls(const tls_options& t) {
    net::ssl::context ctx(net::ssl::context::tls_server);
    ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
    const auto load = [](const std::string& what, const std::string& file, auto&& f) {
        try {
            f();
        } catch (const boost::system::system_error& e) {
            throw std::runtime_error("strata::http: the TLS " + what + " '" + file + "' cannot be used: " + e.what());
        }
    };
    load("certificate chain", t.certificate_chain_file, [&] { ctx.use_certificate_chain_file(t.certificate_chain_file); });
    load("private key", t.private_key_file, [&] { ctx.use_private_key_file(t.private_key_file, net::ssl::context::pem); });
    if (!t.client_ca_file.empty()) {
        load("client CA file", t.client_ca_file, [&] { ctx.load_verify_file(t.client_ca_file); });
        ctx.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
    }
    return ctx;
}

struct server_shared {
    explicit server_shared(const server_options& o) : options(o), pool(o.work_threads, o.work_queue) {
        if (o.tls) tls.emplace(make_server_tls(*o.tls));
    }

    const server_options options;
    router routes;  // set once, before the I/O threads start
    work_pool pool;
    std::atomic<std::size_t> connections{0};
    std::atomic<std::size_t> in_flight{0};
    std::atomic<bool> stopping{false};
    std::atomic<bool> stopped{false};  // the I/O threads are gone: nothing more is posted
    server_counters counters;
    std::optional<net::ssl::context> tls;  // HTTPS when set
    std::mutex live_mutex;
    std::unordered_map<const void*, std::weak_ptr<class server_connection>> live;  // open connections, closed by stop()
};

/// What server::stop needs of a connection of either kind.
class server_connection : public reply_sink {
public:
    /// Closes the socket; only once the I/O threads are gone (server::stop).
    virtual void force_close() noexcept = 0;
};

/// One connection, from its accept to its close, over a plain or a TLS
/// stream. Its handlers run on a strand, one at a time; an answer from
/// another thread is posted there.
template <class Stream>
class connection final : public server_connection, public std::enable_shared_from_this<connection<Stream>> {
    static constexpr bool tls = !std::is_same_v<Stream, beast::tcp_stream>;

public:
    template <class... StreamArgs>
    connection(std::shared_ptr<server_shared> shared, tcp::socket s, StreamArgs&... stream_args)
        : stream_(std::move(s), stream_args...), timer_(tcp().get_executor()), shared_(std::move(shared)) {
        beast::error_code ec;
        tcp().socket().set_option(tcp::no_delay(true), ec);  // a response goes out at once, not after a delayed ACK
        const tcp::endpoint peer = tcp().socket().remote_endpoint(ec);
        if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
        shared_->connections.fetch_add(1);
    }

    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() override {
        {
            const std::lock_guard lock(shared_->live_mutex);
            shared_->live.erase(this);
        }
        shared_->connections.fetch_sub(1);
    }

    void force_close() noexcept override {
        beast::error_code ec;
        tcp().socket().close(ec);
    }

    /// Serves requests; with `refuse`, answers 503 and closes (over max_connections).
    void start(bool refuse) {
        {
            const std::lock_guard lock(shared_->live_mutex);
            shared_->live.emplace(this, this->weak_from_this());
        }
        net::dispatch(tcp().get_executor(), [self = this->shared_from_this(), refuse] {
            if constexpr (tls) self->handshake(refuse);
            else self->begin(refuse);
        });
    }

    void deliver(response r) override {
        if (shared_->stopped.load()) return;
        net::post(tcp().get_executor(),
                  [self = this->shared_from_this(), r = std::move(r)]() mutable { self->write(std::move(r)); });
    }

private:
    const server_options& options() const noexcept { return shared_->options; }
    beast::tcp_stream& tcp() noexcept { return beast::get_lowest_layer(stream_); }

    /// TLS: the handshake, within header_timeout; one that fails (no
    /// client certificate where one is required, one no trusted CA signed,
    /// not TLS at all) closes the connection.
    void handshake(bool refuse) {
        arm(options().header_timeout);
        stream_.async_handshake(net::ssl::stream_base::server,
                                [self = this->shared_from_this(), refuse](beast::error_code ec) {
                                    self->disarm();
                                    if (ec) {
                                        self->shared_->counters.tls_failures.fetch_add(1);
                                        return self->close();
                                    }
                                    self->peer_name_ = self->verified_peer_name();
                                    self->begin(refuse);
                                });
    }

    /// The common name of the client's certificate, when the handshake verified one.
    std::string verified_peer_name() {
        if constexpr (tls) {
            X509* cert = SSL_get_peer_certificate(stream_.native_handle());
            if (cert == nullptr) return {};
            std::string name;
            char buf[256] = {};
            if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf) > 0) name = buf;
            X509_free(cert);
            return name;
        } else {
            return {};
        }
    }

    void begin(bool refuse) {
        if (!refuse) return await_request();
        shared_->counters.connections_refused.fetch_add(1);
        version_ = 11;
        finish_with(error_response(503, "unavailable", "the server has too many open connections",
                                   shared_->options.retry_after_s));
    }

    // Waits for the next request's first byte with no buffer held: an idle
    // connection costs its socket and this object.
    void await_request() {
        if (shared_->stopping.load()) return close();
        if (buffer_.size() > 0) return read_header();  // a pipelined request is here already
        arm(options().idle_timeout);
        if constexpr (tls) {
            // The TLS stream may hold the request's bytes already (read from
            // the socket with the handshake's last ones): the socket would not
            // wake for them, so the first bytes are read through TLS. A TLS
            // connection costs its buffers anyway (two TLS records).
            tcp().expires_never();
            return stream_.async_read_some(buffer_.prepare(first_read_size),
                                           [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                                               if (ec || self->timed_out_) return self->close();
                                               self->buffer_.commit(n);
                                               self->read_header();
                                           });
        }
        buffer_.shrink_to_fit();
        tcp().socket().async_wait(tcp::socket::wait_read, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec || self->timed_out_) return self->close();  // gone, or idle too long: closed quietly
            self->read_header();
        });
    }

    // The timeouts of reads are this connection's own timer, not the
    // stream's: the stream closes the socket when its timer expires, and a
    // request that is late gets a 408 first. Expired, the timer cancels
    // the read, which completes with timed_out_ set.
    void arm(std::chrono::milliseconds t) {
        timed_out_ = false;
        const std::uint64_t armed = ++timer_generation_;
        timer_.expires_after(t);
        timer_.async_wait([self = this->shared_from_this(), armed](beast::error_code ec) {
            if (ec || armed != self->timer_generation_) return;
            self->timed_out_ = true;
            beast::error_code ignored;
            self->tcp().socket().cancel(ignored);
        });
    }

    void disarm() {
        ++timer_generation_;
        timer_.cancel();
    }

    void read_header() {
        // The stream's own expiry is for writes only: one set for the last
        // response would otherwise cut this read short, and close the socket.
        tcp().expires_never();
        parser_.emplace();
        parser_->header_limit(options().header_limit);
        parser_->body_limit(options().body_limit);
        arm(options().header_timeout);
        beast_http::async_read_header(stream_, buffer_, *parser_,
                                      [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                                          self->on_header(ec);
                                      });
    }

    void on_header(beast::error_code ec) {
        if (ec) return failed(ec, "headers");
        disarm();
        const auto& m = parser_->get();
        version_ = m.version();
        if (m.target().size() > options().target_limit)
            return refuse(414, "the request target is " + std::to_string(m.target().size()) + " bytes, over the " +
                                   std::to_string(options().target_limit) + " this server accepts");
        if (parser_->is_done()) return dispatch();
        arm(options().body_timeout);
        if (beast::iequals(m[beast_http::field::expect], "100-continue")) {
            // The client waits for this before it sends the body (curl does for a second).
            auto cont = std::make_shared<beast_http::response<beast_http::empty_body>>(beast_http::status::continue_,
                                                                                       version_);
            tcp().expires_after(options().write_timeout);
            return beast_http::async_write(stream_, *cont,
                                           [self = this->shared_from_this(), cont](beast::error_code e, std::size_t) {
                                               if (e) return self->close();
                                               self->read_body();
                                           });
        }
        read_body();
    }

    void read_body() {
        tcp().expires_never();  // after a 100 Continue's write: the body timeout is arm()'s
        beast_http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->failed(ec, "body");
            self->disarm();
            self->dispatch();
        });
    }

    /// A read that failed: the peer went away (closed quietly), or the
    /// request broke a limit or is not HTTP (answered, then closed).
    void failed(beast::error_code ec, const char* part) {
        disarm();
        if (timed_out_) {
            shared_->counters.timeouts.fetch_add(1);
            const auto limit = std::string(part) == "body" ? options().body_timeout : options().header_timeout;
            return finish_with(error_response(408, "request_timeout",
                                              std::string("the request's ") + part + " did not arrive within " +
                                                  std::to_string(limit.count()) + " ms"));
        }
        if (ec == beast_http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
            ec == net::error::operation_aborted || ec == net::error::broken_pipe)
            return close();
        if (ec == beast_http::error::header_limit)
            return refuse(431, "the request line and headers are over the " + std::to_string(options().header_limit) +
                                   " bytes this server accepts");
        if (ec == beast_http::error::body_limit)
            return refuse(413, "the request body is over the " + std::to_string(options().body_limit) +
                                   " bytes this server accepts");
        refuse(400, "the request is not HTTP this server can read: " + ec.message());
    }

    void refuse(int code, const std::string& what) {
        shared_->counters.bad_requests.fetch_add(1);
        finish_with(error_response(code, what));
    }

    /// Answers and closes: what is left of the request cannot be read.
    void finish_with(response r) {
        keep_alive_ = false;
        head_ = false;
        linger_ = true;
        write(std::move(r));
    }

    void dispatch() {
        beast_http::request<beast_http::string_body> m = parser_->release();
        parser_.reset();
        shared_->counters.requests.fetch_add(1);
        keep_alive_ = m.keep_alive();
        head_ = m.method() == beast_http::verb::head;
        if (shared_->in_flight.fetch_add(1) >= options().max_in_flight) {
            shared_->in_flight.fetch_sub(1);
            shared_->counters.refused_busy.fetch_add(1);
            return write(error_response(503, "unavailable", "the server is handling too many requests",
                                        options().retry_after_s));
        }
        counted_ = true;
        auto state = std::make_shared<exchange_state>(request(std::move(m), remote_, peer_name_), this->shared_from_this(),
                                                      &shared_->pool, options().retry_after_s);
        state->refused_busy = &shared_->counters.refused_busy;
        shared_->routes.dispatch(std::move(state));
    }

    void write(response r) {
        if (closed_) return release_slot();
        auto res = std::make_shared<beast_http::response<beast_http::string_body>>(
            static_cast<beast_http::status>(r.status), version_ == 0 ? 11 : version_);
        res->set(beast_http::field::server, "strata");
        res->set(beast_http::field::content_type, r.content_type);
        for (auto& [name, value] : r.headers) res->set(name, value);
        res->body() = std::move(r.body);
        res->keep_alive(keep_alive_ && !shared_->stopping.load());
        res->prepare_payload();
        if (head_) {
            const std::size_t n = res->body().size();
            res->body().clear();
            res->content_length(n);
        }
        tcp().expires_after(options().write_timeout);
        beast_http::async_write(stream_, *res, [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
            self->release_slot();
            if (ec == beast::error::timeout) self->shared_->counters.timeouts.fetch_add(1);
            if (!ec && self->linger_) return self->linger();
            if (ec || !res->keep_alive()) return self->close();
            self->await_request();
        });
    }

    void release_slot() {
        if (counted_) shared_->in_flight.fetch_sub(1);
        counted_ = false;
    }

    /// After an error answer to a request still arriving: no more is sent,
    /// and what the client still sends is read and dropped for a while
    /// before the close. Closing with unread bytes makes the kernel reset
    /// the connection, and a reset can drop the answer before the client
    /// reads it.
    void linger() {
        beast::error_code ec;
        tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
        if (!discard_) discard_ = std::make_unique<char[]>(discard_size);
        tcp().expires_after(std::chrono::seconds(2));
        drain();
    }

    void drain() {
        stream_.async_read_some(net::buffer(discard_.get(), discard_size),
                                [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->drained_ += n;
                                    if (ec || self->drained_ > linger_limit) return self->close();
                                    self->drain();
                                });
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        beast::error_code ec;
        disarm();
        tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
        tcp().socket().close(ec);
    }

    Stream stream_;
    net::steady_timer timer_;  // the idle, header and body timeouts
    std::uint64_t timer_generation_ = 0;  // an expiry of an older arming is ignored
    bool timed_out_ = false;
    std::shared_ptr<server_shared> shared_;
    beast::flat_buffer buffer_;
    std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
    std::string remote_;
    std::string peer_name_;  // TLS: the verified client certificate's common name
    unsigned version_ = 0;
    bool keep_alive_ = false;
    bool head_ = false;
    bool counted_ = false;  // holds a max_in_flight slot
    bool linger_ = false;  // close after the answer, reading what still comes for a while
    bool closed_ = false;
    static constexpr std::size_t first_read_size = 1024;  // TLS: the first read of a request
    static constexpr std::size_t discard_size = 16 * 1024;
    static constexpr std::size_t linger_limit = 64 * 1024 * 1024;  // bytes read and dropped at most (2 s at most)
    std::unique_ptr<char[]> discard_;  // only while lingering
    std::size_t drained_ = 0;
};

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
        if (!threads_.empty()) throw std::logic_error("strata::http::server: started twice");
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
