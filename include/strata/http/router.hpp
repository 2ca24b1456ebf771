#pragma once
/// @file
/// @brief Routes of strata's HTTP server, and the exchange a handler gets:
/// one request and the means to answer it once, from any thread.
///
/// Each route says where its work runs, since the server's I/O threads are
/// few (one per core) and serve every connection:
///
/// | kind             | runs on           | for |
/// |------------------|-------------------|-----|
/// | `route_inline`   | the I/O thread    | work of microseconds: a local store read, metadata |
/// | `route_blocking` | the work pool     | work that may wait: a read for a position, user code, a page gathered from peers |
/// | `route_async`    | the I/O thread, answered later from anywhere | work that waits on I/O without a thread: a forwarded read |
///
/// Patterns match the path segment by segment: a literal matches itself,
/// `{}` one segment, `{*}` the rest of the path (one segment or more, '/'
/// included). Captures are percent-decoded after matching, so an encoded
/// '/' (%2F) never splits a segment. A path that matches no route is a 404,
/// one that matches with another method a 405 with Allow; HEAD is served by
/// the GET route without its body.

#include <strata/http/message.hpp>
#include <strata/http/work_pool.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::http {

namespace detail {

/// The connection side of an exchange: where its response goes.
class reply_sink {
public:
    virtual ~reply_sink() = default;
    /// Hands the response to the connection (any thread).
    virtual void deliver(response r) = 0;
};

struct exchange_state {
    exchange_state(request r, std::shared_ptr<reply_sink> s, work_pool* p, int retry)
        : req(std::move(r)), sink(std::move(s)), pool(p), retry_after_s(retry) {}
    exchange_state(const exchange_state&) = delete;
    exchange_state& operator=(const exchange_state&) = delete;
    ~exchange_state() {
        // A handler that dropped the request without an answer: the client
        // still gets one, and the connection goes on.
        if (!answered.exchange(true)) sink->deliver(error_response(500, "the request's handler gave no answer"));
    }

    request req;
    std::vector<std::string> captures;
    std::shared_ptr<reply_sink> sink;
    work_pool* pool;
    int retry_after_s;
    std::atomic<std::uint64_t>* refused_busy = nullptr;  // counts a request the work pool had no room for
    std::atomic<bool> answered{false};
};

}  // namespace detail

/// @brief One request and its answer. Copies share the request; the first
/// `respond` answers it and later ones are ignored. Dropped unanswered (the
/// last copy destroyed), it answers 500.
class exchange {
public:
    explicit exchange(std::shared_ptr<detail::exchange_state> s) : s_(std::move(s)) {}

    [[nodiscard]] const request& req() const noexcept { return s_->req; }
    /// The route's captures, in pattern order, percent-decoded.
    [[nodiscard]] const std::vector<std::string>& captures() const noexcept { return s_->captures; }
    [[nodiscard]] const std::string& capture(std::size_t i) const { return s_->captures.at(i); }

    /// @brief Answers the request (from any thread); false when it was answered already.
    bool respond(response r) const {
        if (s_->answered.exchange(true)) return false;
        s_->sink->deliver(std::move(r));
        return true;
    }

    /// @brief Runs `work` (returning a response) and answers with it, or
    /// with 500 and what it threw.
    template <class F>
    void respond_with(F&& work) const {
        try {
            respond(std::forward<F>(work)());
        } catch (const std::exception& e) {
            respond(error_response(500, std::string("the request's handler failed: ") + e.what()));
        } catch (...) {
            respond(error_response(500, "the request's handler failed"));
        }
    }

    /// @brief Runs `work` on the server's work pool and answers with what
    /// it returns; when the pool's queue is full, answers 503 with
    /// Retry-After at once.
    template <class F>
    void offload(F work) const {
        exchange self = *this;
        const bool queued = s_->pool->try_post([self, work = std::move(work)]() mutable { self.respond_with(work); });
        if (queued) return;
        if (s_->refused_busy != nullptr) s_->refused_busy->fetch_add(1);
        respond(error_response(503, "unavailable", "the server has too many requests waiting for a worker",
                                   s_->retry_after_s));
    }

    [[nodiscard]] bool answered() const noexcept { return s_->answered.load(); }

private:
    friend class router;
    void set_captures(std::vector<std::string> c) const { s_->captures = std::move(c); }

    std::shared_ptr<detail::exchange_state> s_;
};

/// @brief Routes by method and path pattern; see the file comment.
class router {
public:
    using handler = std::function<void(const exchange&)>;
    using answerer = std::function<response(const exchange&)>;

    /// @brief A route answered on the I/O thread: microseconds of work only.
    router& route_inline(beast_http::verb method, std::string pattern, answerer fn) {
        return add(method, std::move(pattern), [fn = std::move(fn)](const exchange& ex) {
            ex.respond_with([&] { return fn(ex); });
        });
    }

    /// @brief A route answered on the work pool: work that may block.
    router& route_blocking(beast_http::verb method, std::string pattern, answerer fn) {
        return add(method, std::move(pattern), [fn = std::move(fn)](const exchange& ex) {
            ex.offload([fn, ex] { return fn(ex); });
        });
    }

    /// @brief A route whose handler answers when it can, from any thread
    /// (it must not block the I/O thread it is called on).
    router& route_async(beast_http::verb method, std::string pattern, handler fn) {
        return add(method, std::move(pattern), std::move(fn));
    }

    /// @brief Answers the request by its route (404 or 405 when none).
    void dispatch(std::shared_ptr<detail::exchange_state> state) const {
        const exchange ex(std::move(state));
        const request& req = ex.req();
        const beast_http::verb asked = req.verb() == beast_http::verb::head ? beast_http::verb::get : req.verb();
        std::string allow;
        for (const route& r : routes_) {
            std::vector<std::string> got;
            if (!match(r.segments, req.path(), got)) continue;
            if (r.method != asked) {
                const auto name = beast_http::to_string(r.method);
                if (allow.find(std::string_view(name.data(), name.size())) == std::string::npos)
                    allow += (allow.empty() ? "" : ", ") + std::string(name.data(), name.size());
                continue;
            }
            ex.set_captures(std::move(got));
            try {
                r.fn(ex);
            } catch (const std::exception& e) {
                ex.respond(error_response(500, std::string("the request's handler failed: ") + e.what()));
            }
            return;
        }
        if (!allow.empty()) {
            response r = error_response(405, "method_not_allowed",
                                        "no route for " + std::string(req.method()) + " " + req.path() +
                                            " (it answers " + allow + ")");
            r.header("Allow", allow);
            ex.respond(std::move(r));
            return;
        }
        ex.respond(error_response(404, "not_found", "no route for " + std::string(req.method()) + " " + req.path()));
    }

private:
    struct route {
        beast_http::verb method;
        std::vector<std::string> segments;
        handler fn;
    };

    router& add(beast_http::verb method, std::string pattern, handler fn) {
        routes_.push_back(route{method, split(pattern), std::move(fn)});
        return *this;
    }

    static std::vector<std::string> split(std::string_view path) {
        std::vector<std::string> out;
        if (!path.empty() && path.front() == '/') path.remove_prefix(1);
        for (;;) {
            const std::size_t slash = path.find('/');
            out.emplace_back(path.substr(0, slash));
            if (slash == std::string_view::npos) return out;
            path.remove_prefix(slash + 1);
        }
    }

    static bool match(const std::vector<std::string>& pattern, std::string_view path, std::vector<std::string>& got) {
        if (path.empty() || path.front() != '/') return false;
        path.remove_prefix(1);
        for (std::size_t i = 0; i < pattern.size(); ++i) {
            const std::string& p = pattern[i];
            if (p == "{*}") {
                if (path.empty()) return false;
                got.push_back(percent_decode(path));
                return true;
            }
            const std::size_t slash = path.find('/');
            const std::string_view seg = path.substr(0, slash);
            const bool last = i + 1 == pattern.size();
            if (last != (slash == std::string_view::npos)) return false;
            if (p == "{}") {
                if (seg.empty()) return false;
                got.push_back(percent_decode(seg));
            } else if (p != seg) {
                return false;
            }
            if (!last) path.remove_prefix(slash + 1);
        }
        return true;
    }

    std::vector<route> routes_;
};

}  // namespace strata::http
