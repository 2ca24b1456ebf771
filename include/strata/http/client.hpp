#pragma once
/// @file
/// @brief strata's HTTP/1.1 client for requests between instances: a
/// bounded pool of keep-alive connections per peer, asynchronous on the
/// executor it is given (the server's, so forwarding costs no thread).
///
/// Each peer has at most `max_connections_per_peer` connections; a request
/// takes an idle one, or opens one while under the bound, or waits in the
/// peer's queue (at most `max_queued_per_peer`; beyond it fails at once).
/// A connection serves one request at a time and is reused while both
/// sides keep it alive. A GET sent on a reused connection that the peer had
/// closed meanwhile is sent once more on a new one.

#include <strata/core/error.hpp>
#include <strata/http/detail/tls.hpp>
#include <strata/http/message.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::http {

/// @brief TLS for a client: whom it trusts, and its own certificate for
/// servers that require one (mutual TLS).
struct client_tls_options {
    std::string ca_file;                 ///< PEM: the CAs a server's certificate must be signed by (empty: the system's)
    std::string certificate_chain_file;  ///< PEM: the client's certificate (optional)
    std::string private_key_file;        ///< PEM, unencrypted
};

/// @brief How a client reaches its peers.
struct client_options {
    std::size_t max_connections_per_peer = 32;
    std::size_t max_queued_per_peer = 1'024;
    std::chrono::milliseconds connect_timeout{2'000};
    std::chrono::milliseconds request_timeout{2'000};  ///< from sending the request to the whole response
    std::uint64_t body_limit = 64 * 1024 * 1024;        ///< of a response
    /// HTTPS to every peer when set: the server's certificate must be signed
    /// by a trusted CA and name the host asked for (an IP address or a DNS
    /// name in its subjectAltName).
    std::optional<client_tls_options> tls;
};

/// @brief A peer's response.
struct client_response {
    int status = 0;
    std::string body;
    std::string content_type;                ///< its Content-Type header
    std::optional<std::string> retry_after;  ///< its Retry-After header, if any
};

/// @brief A response, or why there is none (the transport's error in words).
struct client_result {
    std::optional<client_response> reply;
    std::string failure;
};

/// @brief Headers to send, (name, value).
using header_list = std::vector<std::pair<std::string, std::string>>;

namespace detail {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

struct client_call {
    beast_http::verb method = beast_http::verb::get;
    std::string target;
    header_list headers;
    std::string body;
    std::function<void(client_result)> done;
    bool retried = false;
};

class client_peer;

/// One connection to a peer, plain or TLS; runs one call at a time.
class client_connection {
public:
    virtual ~client_connection() = default;
    virtual void run(client_call call) = 0;
};

/// The TLS context of a client's options.
/// @throws usage_error a file that cannot be read or used, named
inline std::shared_ptr<net::ssl::context> make_client_tls(const client_tls_options& t) {
    auto ctx = std::make_shared<net::ssl::context>(net::ssl::context::tls_client);
    modern_tls_only(*ctx);
    const auto load = [](const std::string& what, const std::string& file, auto&& f) { use_tls_file(what, file, f); };
    if (t.ca_file.empty()) ctx->set_default_verify_paths();
    else load("CA file", t.ca_file, [&] { ctx->load_verify_file(t.ca_file); });
    if (!t.certificate_chain_file.empty()) {
        load("certificate chain", t.certificate_chain_file,
             [&] { ctx->use_certificate_chain_file(t.certificate_chain_file); });
        load("private key", t.private_key_file,
             [&] { ctx->use_private_key_file(t.private_key_file, net::ssl::context::pem); });
    }
    ctx->set_verify_mode(net::ssl::verify_peer);
    return ctx;
}

template <class Stream>
class client_connection_of final : public client_connection,
                                   public std::enable_shared_from_this<client_connection_of<Stream>> {
    static constexpr bool tls = !std::is_same_v<Stream, beast::tcp_stream>;

public:
    template <class... StreamArgs>
    client_connection_of(net::any_io_executor ex, std::shared_ptr<client_peer> peer, const client_options& o,
                         StreamArgs&... stream_args)
        : stream_(net::make_strand(ex), stream_args...), resolver_(tcp().get_executor()), peer_(std::move(peer)),
          options_(&o) {}

    void run(client_call call) override;

private:
    beast::tcp_stream& tcp() noexcept { return beast::get_lowest_layer(stream_); }
    void connect();
    void handshake();
    void send();
    void finish(client_result r, bool reusable);

    Stream stream_;
    tcp::resolver resolver_;
    std::shared_ptr<client_peer> peer_;
    const client_options* options_;
    client_call call_;
    beast::flat_buffer buffer_;
    std::optional<beast_http::request<beast_http::string_body>> req_;
    std::optional<beast_http::response_parser<beast_http::string_body>> parser_;
    bool connected_ = false;
    bool used_ = false;  // served a call before this one
};

/// The connections and the queue of one peer.
class client_peer : public std::enable_shared_from_this<client_peer> {
public:
    client_peer(net::any_io_executor ex, std::string host, std::string port, client_options o,
                std::shared_ptr<net::ssl::context> tls)
        : executor_(std::move(ex)), host_(std::move(host)), port_(std::move(port)), options_(std::move(o)),
          tls_(std::move(tls)) {}

    [[nodiscard]] const std::string& host() const noexcept { return host_; }
    [[nodiscard]] const std::string& port() const noexcept { return port_; }

    void submit(client_call call) {
        std::shared_ptr<client_connection> c;
        {
            const std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                c = std::move(idle_.back());
                idle_.pop_back();
            } else if (open_ < options_.max_connections_per_peer) {
                ++open_;
                c = make_connection();
            } else if (queue_.size() < options_.max_queued_per_peer) {
                queue_.push_back(std::move(call));
                return;
            }
        }
        if (!c) {
            fail(std::move(call), "over " + std::to_string(options_.max_queued_per_peer) +
                                      " requests wait for a connection to " + host_ + ":" + port_);
            return;
        }
        c->run(std::move(call));
    }

    /// A connection finished its call: it takes the next queued one, or
    /// waits idle (`keep`), or goes.
    void returned(const std::shared_ptr<client_connection>& c, bool keep) {
        std::optional<client_call> next;
        {
            const std::lock_guard lock(mutex_);
            if (!queue_.empty()) {
                next = std::move(queue_.front());
                queue_.pop_front();
            }
            if (!keep) {
                if (!next) {
                    --open_;
                    return;
                }
            } else if (!next) {
                if (!closed_) idle_.push_back(c);
                else --open_;
                return;
            }
        }
        if (keep) {
            c->run(std::move(*next));
        } else {
            // The queued call gets a new connection in this one's place.
            make_connection()->run(std::move(*next));
        }
    }

    void fail(client_call call, std::string why) {
        net::post(executor_, [done = std::move(call.done), why = std::move(why)]() mutable {
            done(client_result{std::nullopt, std::move(why)});
        });
    }

    /// A call again, on a new connection that takes the slot of the one
    /// that failed it (not an idle one: those may have been closed too).
    void resend(client_call call) { make_connection()->run(std::move(call)); }

    std::shared_ptr<client_connection> make_connection() {
        if (tls_)
            return std::make_shared<client_connection_of<beast::ssl_stream<beast::tcp_stream>>>(executor_, shared_from_this(),
                                                                                              options_, *tls_);
        return std::make_shared<client_connection_of<beast::tcp_stream>>(executor_, shared_from_this(), options_);
    }

    /// Closes the idle connections, and each busy one once its call is
    /// done (the client goes).
    void close() {
        const std::lock_guard lock(mutex_);
        closed_ = true;
        idle_.clear();
    }

private:
    net::any_io_executor executor_;
    std::string host_, port_;
    client_options options_;
    std::shared_ptr<net::ssl::context> tls_;  // HTTPS when set
    std::mutex mutex_;
    std::vector<std::shared_ptr<client_connection>> idle_;
    std::deque<client_call> queue_;
    std::size_t open_ = 0;
    bool closed_ = false;
};

template <class Stream>
void client_connection_of<Stream>::run(client_call call) {
    net::post(tcp().get_executor(), [self = this->shared_from_this(), call = std::move(call)]() mutable {
        self->call_ = std::move(call);
        if (self->connected_) self->send();
        else self->connect();
    });
}

template <class Stream>
void client_connection_of<Stream>::connect() {
    used_ = false;
    resolver_.async_resolve(peer_->host(), peer_->port(),
                            [self = this->shared_from_this()](beast::error_code ec, const tcp::resolver::results_type& r) {
                                if (ec) return self->finish({std::nullopt, "resolve: " + ec.message()}, false);
                                self->tcp().expires_after(self->options_->connect_timeout);
                                self->tcp().async_connect(r, [self](beast::error_code e, const tcp::endpoint&) {
                                    if (e) return self->finish({std::nullopt, "connect: " + e.message()}, false);
                                    beast::error_code ignored;
                                    self->tcp().socket().set_option(tcp::no_delay(true), ignored);
                                    if constexpr (tls) {
                                        self->handshake();
                                    } else {
                                        self->connected_ = true;
                                        self->send();
                                    }
                                });
                            });
}

template <class Stream>
void client_connection_of<Stream>::handshake() {
    if constexpr (tls) {
        const std::string& host = peer_->host();
        beast::error_code ec;
        (void)net::ip::make_address(host, ec);
        // SNI for a name; an address is checked against the certificate's IP entries.
        if (ec) (void)SSL_set_tlsext_host_name(stream_.native_handle(), host.c_str());
        stream_.set_verify_callback(net::ssl::host_name_verification(host));
        stream_.async_handshake(net::ssl::stream_base::client, [self = this->shared_from_this()](beast::error_code e) {
            if (e)
                return self->finish({std::nullopt, "TLS handshake with " + self->peer_->host() + ":" +
                                                       self->peer_->port() + ": " + e.message()},
                                    false);
            self->connected_ = true;
            self->send();
        });
    }
}

template <class Stream>
void client_connection_of<Stream>::send() {
    req_.emplace(call_.method, call_.target, 11);
    req_->set(beast_http::field::host, peer_->host() + ":" + peer_->port());
    req_->keep_alive(true);
    for (const auto& [name, value] : call_.headers) req_->set(name, value);
    req_->body() = call_.body;
    req_->prepare_payload();
    parser_.emplace();
    parser_->body_limit(options_->body_limit);
    tcp().expires_after(options_->request_timeout);
    beast_http::async_write(stream_, *req_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
        // A peer may answer before it read the whole request (413 to a body
        // over its limit) and close: its answer is read all the same.
        const bool answered_early = ec == net::error::broken_pipe || ec == net::error::connection_reset;
        if (ec && !answered_early) return self->finish({std::nullopt, "send: " + ec.message()}, false);
        beast_http::async_read(self->stream_, self->buffer_, *self->parser_,
                               [self, ec](beast::error_code e, std::size_t) {
                                   if (e && ec) return self->finish({std::nullopt, "send: " + ec.message()}, false);
                                   if (e) return self->finish({std::nullopt, "read: " + e.message()}, false);
                                   auto& m = self->parser_->get();
                                   client_response r;
                                   r.status = static_cast<int>(m.result_int());
                                   if (const auto it = m.find(beast_http::field::retry_after); it != m.end())
                                       r.retry_after = std::string(it->value());
                                   r.content_type = std::string(m[beast_http::field::content_type]);
                                   r.body = std::move(m.body());
                                   const bool keep = m.keep_alive() && !ec;
                                   self->finish({std::move(r), {}}, keep);
                               });
    });
}

template <class Stream>
void client_connection_of<Stream>::finish(client_result r, bool reusable) {
    const bool was_reused = used_;
    if (!reusable) {
        beast::error_code ec;
        tcp().socket().close(ec);
        connected_ = false;  // never used again: the peer drops it (returned)
    }
    used_ = true;
    client_call call = std::move(call_);
    call_ = {};
    const bool idempotent = call.method == beast_http::verb::get || call.method == beast_http::verb::head ||
                            call.method == beast_http::verb::put || call.method == beast_http::verb::delete_;
    if (!r.reply && was_reused && !call.retried && idempotent) {
        // The peer closed the kept-alive connection before this request
        // reached it (its idle timeout): once more, on another connection.
        call.retried = true;
        peer_->resend(std::move(call));
        return;
    }
    auto done = std::move(call.done);
    peer_->returned(this->shared_from_this(), reusable);
    done(std::move(r));
}

}  // namespace detail

/// @brief Keep-alive HTTP clients to peers; see the file comment.
/// Thread-safe. The executor's threads must run while calls are made.
class client {
public:
    /// @brief A client on another's threads (a server's executor).
    /// @throws usage_error a TLS file that cannot be used
    client(boost::asio::any_io_executor ex, client_options o = {})
        : executor_(std::move(ex)), options_(std::move(o)), tls_(tls_of(options_)) {}

    /// @brief A client with threads of its own (`threads`, at least one).
    explicit client(client_options o = {}, unsigned threads = 1)
        : owned_(std::make_unique<owned_threads>(threads)), executor_(owned_->ioc.get_executor()),
          options_(std::move(o)), tls_(tls_of(options_)) {}

    client(const client&) = delete;
    client& operator=(const client&) = delete;
    ~client() {
        const std::lock_guard lock(mutex_);
        for (auto& [endpoint, p] : peers_) p->close();
    }

    /// @brief Where `done` callbacks run (for timers that go with calls).
    [[nodiscard]] boost::asio::any_io_executor executor() const { return executor_; }

    /// @brief GETs `target` (path and query) from `endpoint` ("host:port",
    /// "[::1]:port"); `done` gets the response or the failure, on the
    /// executor's threads.
    void async_get(const std::string& endpoint, std::string target, header_list headers,
                   std::function<void(client_result)> done) {
        async_request(beast_http::verb::get, endpoint, std::move(target), std::move(headers), {}, std::move(done));
    }

    /// @brief Sends a request with any method and body (its Content-Type
    /// among the headers); as async_get.
    void async_request(beast_http::verb method, const std::string& endpoint, std::string target, header_list headers,
                       std::string body, std::function<void(client_result)> done) {
        std::shared_ptr<detail::client_peer> p;
        try {
            p = peer(endpoint);
        } catch (const std::exception& e) {
            boost::asio::post(executor_, [done = std::move(done), why = std::string(e.what())] {
                done(client_result{std::nullopt, why});
            });
            return;
        }
        p->submit(detail::client_call{method, std::move(target), std::move(headers), std::move(body), std::move(done)});
    }

    /// @brief async_get, waited for. Never call it on the executor's own
    /// threads (it would wait for itself).
    client_result get(const std::string& endpoint, std::string target, header_list headers = {}) {
        return request(beast_http::verb::get, endpoint, std::move(target), std::move(headers));
    }

    /// @brief async_request, waited for (not on the executor's threads).
    client_result request(beast_http::verb method, const std::string& endpoint, std::string target,
                          header_list headers = {}, std::string body = {}) {
        std::promise<client_result> promise;
        std::future<client_result> f = promise.get_future();
        async_request(method, endpoint, std::move(target), std::move(headers), std::move(body),
                      [&promise](client_result r) { promise.set_value(std::move(r)); });
        return f.get();
    }

private:
    static std::shared_ptr<boost::asio::ssl::context> tls_of(const client_options& o) {
        return o.tls ? detail::make_client_tls(*o.tls) : nullptr;
    }

    struct owned_threads {
        explicit owned_threads(unsigned n) : guard(boost::asio::make_work_guard(ioc)) {
            for (unsigned i = 0; i < (n == 0 ? 1 : n); ++i) threads.emplace_back([this] { ioc.run(); });
        }
        owned_threads(const owned_threads&) = delete;
        owned_threads& operator=(const owned_threads&) = delete;
        ~owned_threads() {
            guard.reset();
            ioc.stop();
            for (std::thread& t : threads) t.join();
        }
        boost::asio::io_context ioc;
        boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
        std::vector<std::thread> threads;
    };

    std::shared_ptr<detail::client_peer> peer(const std::string& endpoint) {
        const std::lock_guard lock(mutex_);
        if (const auto it = peers_.find(endpoint); it != peers_.end()) return it->second;
        const auto colon = endpoint.rfind(':');
        if (colon == std::string::npos || colon + 1 == endpoint.size())
            throw usage_error("endpoint '" + endpoint + "' is not host:port");
        std::string host = endpoint.substr(0, colon);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        auto p = std::make_shared<detail::client_peer>(executor_, std::move(host), endpoint.substr(colon + 1), options_,
                                                       tls_);
        peers_.emplace(endpoint, p);
        return p;
    }

    std::unique_ptr<owned_threads> owned_;  // first: its threads stop after the rest is gone
    boost::asio::any_io_executor executor_;
    client_options options_;
    std::shared_ptr<boost::asio::ssl::context> tls_;  // HTTPS when set
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<detail::client_peer>, std::less<>> peers_;
};

}  // namespace strata::http
