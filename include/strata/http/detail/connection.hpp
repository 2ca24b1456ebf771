#pragma once
/// @file
/// @brief One connection of strata::http::server, plain or TLS, from its
/// accept to its close: the idle wait, the header and body reads with their
/// timeouts and limits, the dispatch to the routes, the response, the
/// lingering close after an error answer. See server.hpp.

#include <strata/http/detail/tls.hpp>
#include <strata/http/message.hpp>
#include <strata/http/router.hpp>
#include <strata/http/server_options.hpp>
#include <strata/http/work_pool.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>


namespace strata::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

namespace detail {

/// What every connection of one server reaches.
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

/// Appends the status line and headers of `r` to `out`: Server,
/// Content-Type, r's own headers, Content-Length (of r's body, also for a
/// HEAD answer, which sends none), and Connection where the version's
/// default is not what `keep_alive` says. A CR or LF in a name or value
/// becomes a space, so no value can end the head or add a header.
inline void append_response_head(std::string& out, const response& r, unsigned version, bool keep_alive) {
    const auto put = [&out](std::string_view name, std::string_view value) {
        const std::size_t at = out.size();
        out.append(name).append(": ").append(value);
        for (std::size_t i = at; i < out.size(); ++i)
            if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
        out.append("\r\n");
    };
    const auto reason = beast_http::obsolete_reason(static_cast<beast_http::status>(r.status));
    out.append(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ")
        .append(std::to_string(r.status))
        .append(" ")
        .append(reason.data(), reason.size())
        .append("\r\n");
    put("Server", "strata");
    put("Content-Type", r.content_type);
    for (const auto& [name, value] : r.headers) put(name, value);
    put("Content-Length", std::to_string(r.body.size()));
    if (version == 10 && keep_alive) put("Connection", "keep-alive");
    if (version != 10 && !keep_alive) put("Connection", "close");
    out.append("\r\n");
}

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
        tcp().socket().non_blocking(true, ec);  // for the first read of a request, tried before an asynchronous one
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
        // On this connection's strand already (a route answered inline), the
        // response is written at once; from another thread it is posted.
        net::dispatch(tcp().get_executor(),
                      [self = this->shared_from_this(), r = std::move(r)]() mutable { self->write(std::move(r)); });
    }

private:
    const server_options& options() const noexcept { return shared_->options; }
    beast::tcp_stream& tcp() noexcept { return beast::get_lowest_layer(stream_); }

    /// TLS: the handshake, within header_timeout; one that fails (no
    /// client certificate where one is required, one no trusted CA signed,
    /// not TLS at all) closes the connection.
    void handshake(bool refuse) {
        set_deadline(options().header_timeout);
        stream_.async_handshake(net::ssl::stream_base::server,
                                [self = this->shared_from_this(), refuse](beast::error_code ec) {
                                    self->clear_deadline();
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
        set_deadline(options().idle_timeout);
        if constexpr (tls) {
            // The TLS stream may hold the request's bytes already (read from
            // the socket with the handshake's last ones): the socket would not
            // wake for them, so the first bytes are read through TLS. A TLS
            // connection costs its buffers anyway (two TLS records).
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

    // Every timeout (idle, header, body, write, linger) is one deadline and
    // one timer, which is re-armed only when a deadline comes earlier than
    // the one it waits for. A request answered within its timeouts moves
    // the deadline later each time and costs no timer operation (each one
    // locks the reactor's timer queue and runs a cancelled handler); the
    // timer wakes once per idle timeout at most, finds the deadline moved,
    // and waits again. Past the deadline the timer cancels the socket's
    // operations, which complete with timed_out_ set. The stream's own
    // expiry is not used: it closes the socket when it runs out, and a
    // request that is late gets a 408 first.
    using clock = net::steady_timer::clock_type;

    void set_deadline(std::chrono::milliseconds t) {
        timed_out_ = false;
        deadline_ = clock::now() + t;
        if (!timer_waiting_ || deadline_ < timer_.expiry()) wait_for_deadline();
    }

    void clear_deadline() noexcept { deadline_ = clock::time_point::max(); }

    void wait_for_deadline() {
        timer_waiting_ = true;
        const std::uint64_t armed = ++timer_generation_;
        timer_.expires_at(deadline_);  // a wait pending runs cancelled, and is ignored: it is of an older generation
        timer_.async_wait([self = this->shared_from_this(), armed](beast::error_code ec) {
            if (armed != self->timer_generation_) return;
            self->timer_waiting_ = false;
            if (ec || self->closed_ || self->deadline_ == clock::time_point::max()) return;
            if (clock::now() < self->deadline_) return self->wait_for_deadline();  // moved later meanwhile
            self->timed_out_ = true;
            beast::error_code ignored;
            self->tcp().socket().cancel(ignored);
        });
    }

    void read_header() {
        parser_.emplace();
        parser_->header_limit(options().header_limit);
        parser_->body_limit(options().body_limit);
        if constexpr (!tls) {
            // Most requests arrive whole in one segment: read and parsed here
            // at once, they cost no asynchronous operation and no timer.
            beast::error_code ec;
            beast_http::read_header(tcp().socket(), buffer_, *parser_, ec);
            if (ec != net::error::would_block && ec != net::error::try_again) return on_header(ec);
        }
        set_deadline(options().header_timeout);
        beast_http::async_read_header(stream_, buffer_, *parser_,
                                      [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                                          self->on_header(ec);
                                      });
    }

    void on_header(beast::error_code ec) {
        if (ec) return failed(ec, "headers");
        clear_deadline();
        const auto& m = parser_->get();
        version_ = m.version();
        if (m.target().size() > options().target_limit)
            return refuse(414, "the request target is " + std::to_string(m.target().size()) + " bytes, over the " +
                                   std::to_string(options().target_limit) + " this server accepts");
        if (parser_->is_done()) return dispatch();
        set_deadline(options().body_timeout);
        if (beast::iequals(m[beast_http::field::expect], "100-continue")) {
            // The client waits for this before it sends the body (curl does for a second).
            auto cont = std::make_shared<beast_http::response<beast_http::empty_body>>(beast_http::status::continue_,
                                                                                       version_);
            return beast_http::async_write(stream_, *cont,
                                           [self = this->shared_from_this(), cont](beast::error_code e, std::size_t) {
                                               if (e || self->timed_out_) return self->close();
                                               self->read_body();
                                           });
        }
        read_body();
    }

    void read_body() {
        beast_http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->failed(ec, "body");
            self->clear_deadline();
            self->dispatch();
        });
    }

    /// A read that failed: the peer went away (closed quietly), or the
    /// request broke a limit or is not HTTP (answered, then closed).
    void failed(beast::error_code ec, const char* part) {
        clear_deadline();
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

    // The response goes out as its head and its body, written at once
    // while the socket takes them (a small response always fits), and
    // asynchronously, under write_timeout, for what it does not take.
    void write(response r) {
        if (closed_) return release_slot();
        write_keep_alive_ = keep_alive_ && !shared_->stopping.load();
        out_head_.clear();
        append_response_head(out_head_, r, version_ == 0 ? 11 : version_, write_keep_alive_);
        out_body_ = head_ ? std::string() : std::move(r.body);
        beast::buffers_suffix<std::array<net::const_buffer, 2>> rest(
            std::array<net::const_buffer, 2>{net::buffer(out_head_), net::buffer(out_body_)});
        if constexpr (!tls) {
            beast::error_code ec;
            rest.consume(tcp().socket().write_some(rest, ec));
            if (ec && ec != net::error::would_block && ec != net::error::try_again) {
                release_slot();
                return close();
            }
            if (beast::buffer_bytes(rest) == 0) return wrote();
        }
        set_deadline(options().write_timeout);
        net::async_write(stream_, rest, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (self->timed_out_) {
                self->release_slot();
                self->shared_->counters.timeouts.fetch_add(1);
                return self->close();
            }
            if (ec) {
                self->release_slot();
                return self->close();
            }
            self->wrote();
        });
    }

    void wrote() {
        release_slot();
        if (linger_) return linger();
        if (!write_keep_alive_) return close();
        if (buffer_.size() > 0) {
            // A pipelined request: read on the next turn of the strand, not
            // from this call, which may come from the last request's reading.
            return net::post(tcp().get_executor(), [self = this->shared_from_this()] { self->await_request(); });
        }
        await_request();
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
        set_deadline(std::chrono::seconds(2));
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
        clear_deadline();
        timer_.cancel();
        tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
        tcp().socket().close(ec);
    }

    Stream stream_;
    net::steady_timer timer_;  // every timeout: see set_deadline
    clock::time_point deadline_ = clock::time_point::max();  // max: none
    std::uint64_t timer_generation_ = 0;  // a completion of an older wait is ignored
    bool timer_waiting_ = false;
    bool timed_out_ = false;  // the deadline passed: the operation it cancelled failed for it
    std::shared_ptr<server_shared> shared_;
    beast::flat_buffer buffer_;
    std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
    std::string remote_;
    std::string peer_name_;  // TLS: the verified client certificate's common name
    unsigned version_ = 0;
    bool keep_alive_ = false;
    bool head_ = false;
    bool write_keep_alive_ = false;  // the response being written keeps the connection
    std::string out_head_;  // the response being written
    std::string out_body_;
    bool counted_ = false;  // holds a max_in_flight slot
    bool linger_ = false;  // close after the answer, reading what still comes for a while
    bool closed_ = false;
    static constexpr std::size_t first_read_size = 1024;  // TLS: the first read of a request
    static constexpr std::size_t discard_size = 16 * 1024;
    static constexpr std::size_t linger_limit = 64 * 1024 * 1024;  // bytes read and dropped at most (2 s at most)
    std::unique_ptr<char[]> discard_;  // only while lingering
    std::size_t drained_ = 0;
};

}  // namespace detail

}  // namespace strata::http
