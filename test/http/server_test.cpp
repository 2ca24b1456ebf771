// strata's HTTP server and client (include/strata/http/) on loopback: routes
// and their error bodies, every limit and timeout answered with a JSON error,
// idle and slow connections that hold up no one, the bounds on connections,
// requests in flight and queued work, and the client's bounded keep-alive pool.

#include <strata/http/client.hpp>
#include <strata/http/server.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
namespace h = strata::http;
using verb = h::beast_http::verb;
using clock_type = std::chrono::steady_clock;

/// A plain TCP connection to the server, for what a client library would not send.
class raw_socket {
public:
    explicit raw_socket(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    raw_socket(const raw_socket&) = delete;
    raw_socket& operator=(const raw_socket&) = delete;
    raw_socket(raw_socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    ~raw_socket() {
        if (fd_ >= 0) ::close(fd_);
    }

    /// False once the peer no longer takes bytes.
    bool send(std::string_view s) {
        while (!s.empty()) {
            const ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            s.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    /// What arrives within `wait`, until the peer closes (then `closed`).
    std::string receive(std::chrono::milliseconds wait, bool until_close = true) {
        std::string got;
        const auto until = clock_type::now() + wait;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
            if (left.count() <= 0) return got;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
            char buf[4096];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                closed = true;
                return got;
            }
            got.append(buf, static_cast<std::size_t>(n));
            if (!until_close && got.find("\r\n\r\n") != std::string::npos) {
                // One response: its header, and its body by Content-Length.
                const auto end = got.find("\r\n\r\n") + 4;
                const auto cl = got.find("Content-Length: ");
                if (cl == std::string::npos || cl > end) return got;
                if (got.size() >= end + std::stoul(got.substr(cl + 16))) return got;
            }
        }
    }

    bool closed = false;

private:
    int fd_;
};

int status_of(const std::string& response) {
    REQUIRE(response.rfind("HTTP/1.1 ", 0) == 0);
    return std::stoi(response.substr(9, 3));
}

nlohmann::json body_of(const std::string& response) {
    const auto at = response.find("\r\n\r\n");
    REQUIRE(at != std::string::npos);
    return nlohmann::json::parse(response.substr(at + 4));
}

h::router hello_routes() {
    h::router r;
    r.route_inline(verb::get, "/hello/{}", [](const h::exchange& ex) {
        return h::response{200, nlohmann::json{{"hello", ex.capture(0)}}.dump()};
    });
    r.route_inline(verb::get, "/keys/{*}", [](const h::exchange& ex) {
        return h::response{200, nlohmann::json{{"key", ex.capture(0)}, {"q", ex.req().param("q")}}.dump()};
    });
    r.route_inline(verb::put, "/keys/{*}", [](const h::exchange& ex) {
        return h::response{200, nlohmann::json{{"stored", ex.req().body().size()}}.dump()};
    });
    return r;
}

h::server_options quick_options() {
    h::server_options o;
    o.io_threads = 2;
    return o;
}

template <class F>
bool eventually(F done, std::chrono::milliseconds within = 10s) {
    const auto until = clock_type::now() + within;
    while (!done()) {
        if (clock_type::now() >= until) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

}  // namespace

TEST_CASE("http server: routes by method and pattern, decodes captures, and answers every miss with a JSON error",
          "[http]") {
    h::server s(hello_routes(), quick_options());
    h::client c(s.executor());
    const std::string at = s.endpoint();

    h::client_result r = c.get(at, "/hello/world");
    REQUIRE(r.reply);
    CHECK(r.reply->status == 200);
    CHECK(nlohmann::json::parse(r.reply->body)["hello"] == "world");

    // An encoded '/' is part of a key, not a separator; query values decode.
    r = c.get(at, "/keys/a%2Fb/c%20d?q=x%26y+z");
    REQUIRE(r.reply);
    CHECK(nlohmann::json::parse(r.reply->body) == nlohmann::json{{"key", "a/b/c d"}, {"q", "x&y z"}});

    // A client with threads of its own, any method and a body.
    h::client own;
    r = own.request(verb::put, at, "/keys/k", {{"Content-Type", "application/json"}}, "hello");
    REQUIRE(r.reply);
    CHECK(nlohmann::json::parse(r.reply->body)["stored"] == 5);

    r = c.get(at, "/nothing/here");
    REQUIRE(r.reply);
    CHECK(r.reply->status == 404);
    CHECK(nlohmann::json::parse(r.reply->body)["status"] == "not_found");

    raw_socket sock(s.port());
    REQUIRE(sock.send("DELETE /hello/x HTTP/1.1\r\nHost: t\r\n\r\n"));
    const std::string answer = sock.receive(2s, false);
    CHECK(status_of(answer) == 405);
    CHECK(answer.find("Allow: GET") != std::string::npos);
    CHECK(body_of(answer)["status"] == "method_not_allowed");

    // HEAD: the GET route's headers, no body.
    REQUIRE(sock.send("HEAD /hello/x HTTP/1.1\r\nHost: t\r\n\r\n"));
    const std::string head = sock.receive(500ms, true);
    CHECK(status_of(head) == 200);
    CHECK(head.find("Content-Length: 13") != std::string::npos);  // {"hello":"x"}
    CHECK(head.substr(head.find("\r\n\r\n") + 4).empty());

    // Stopped, it closes its connections and refuses new ones.
    s.stop();
    CHECK(sock.receive(1s).empty());
    CHECK(sock.closed);
    const h::client_result after = own.get(at, "/hello/x");
    CHECK_FALSE(after.reply);
    CHECK_THAT(after.failure, Catch::Contains("connect"));
}

TEST_CASE("http server: a keep-alive connection idle for longer than the write timeout still serves its next request",
          "[http]") {
    h::server_options o = quick_options();
    o.write_timeout = 100ms;  // the timeout of the last response's write must not carry over to the next read
    o.idle_timeout = 5s;
    h::server s(hello_routes(), o);
    raw_socket sock(s.port());
    for (int i = 0; i < 2; ++i) {
        REQUIRE(sock.send("GET /hello/again HTTP/1.1\r\nHost: t\r\n\r\n"));
        const std::string got = sock.receive(2s, false);
        CHECK(status_of(got) == 200);
        CHECK_FALSE(sock.closed);
        std::this_thread::sleep_for(400ms);
    }
    CHECK(s.counters().connections_accepted == 1);
    CHECK(s.counters().timeouts == 0);
}

TEST_CASE("http server: pipelined requests are answered in turn, HTTP/1.0 keeps its connection only when asked, and a "
          "response its client does not read is cut at the write timeout",
          "[http]") {
    h::router routes = hello_routes();
    routes.route_inline(verb::get, "/big", [](const h::exchange&) {
        return h::response{200, std::string(std::size_t{32} << 20, 'x'), "text/plain"};
    });
    h::server_options o = quick_options();
    o.write_timeout = 500ms;
    h::server s(std::move(routes), o);

    {
        raw_socket sock(s.port());
        constexpr int n = 300;  // one segment of requests, the next read before the last is answered
        std::string batch;
        for (int i = 0; i < n; ++i) batch += "GET /hello/p" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n";
        REQUIRE(sock.send(batch));
        std::string got;
        const auto count = [&] {
            std::size_t k = 0;
            for (std::size_t at = got.find("HTTP/1.1 200"); at != std::string::npos; at = got.find("HTTP/1.1 200", at + 1))
                ++k;
            return k;
        };
        const auto until = clock_type::now() + 10s;
        while (count() < n && clock_type::now() < until && !sock.closed) got += sock.receive(100ms);
        REQUIRE(count() == n);
        std::size_t last = 0;
        for (int i = 0; i < n; ++i) {
            const std::size_t at = got.find("{\"hello\":\"p" + std::to_string(i) + "\"}");
            REQUIRE(at != std::string::npos);
            CHECK(at > last);
            last = at;
        }
        CHECK_FALSE(sock.closed);
    }
    {
        raw_socket sock(s.port());
        REQUIRE(sock.send("GET /hello/old HTTP/1.0\r\n\r\n"));
        const std::string got = sock.receive(2s);
        CHECK(got.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
        CHECK(got.find("Connection:") == std::string::npos);
        CHECK(sock.closed);
    }
    {
        raw_socket sock(s.port());
        REQUIRE(sock.send("GET /hello/old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        CHECK(sock.receive(2s, false).find("Connection: keep-alive\r\n") != std::string::npos);
        REQUIRE(sock.send("GET /hello/again HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
        const std::string got = sock.receive(2s);
        CHECK(got.find("Connection: close\r\n") != std::string::npos);
        CHECK(sock.closed);
    }
    {
        // Reads nothing of 32 MB: the write stalls once the socket's buffers are full.
        raw_socket sock(s.port());
        REQUIRE(sock.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n"));
        CHECK(eventually([&] { return s.counters().timeouts == 1; }, 5s));
        std::size_t read = 0;
        const auto until = clock_type::now() + 5s;
        while (!sock.closed && clock_type::now() < until) read += sock.receive(200ms).size();
        CHECK(sock.closed);
        CHECK(read < (std::size_t{32} << 20));
        CHECK(s.in_flight() == 0);
    }
}

TEST_CASE("http server: requests beyond its limits, or not HTTP, get a JSON error and the connection closes",
          "[http]") {
    h::server_options o = quick_options();
    o.header_limit = 4 * 1024;
    o.target_limit = 1024;
    o.body_limit = 1024;
    h::server s(hello_routes(), o);

    const auto ask = [&](const std::string& request) {
        raw_socket sock(s.port());
        (void)sock.send(request);
        const std::string got = sock.receive(3s);
        CHECK(sock.closed);
        return got;
    };
    std::string got = ask("GET /keys/" + std::string(2'000, 'k') + " HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(status_of(got) == 414);
    CHECK(body_of(got)["status"] == "uri_too_long");

    got = ask("GET /hello/x HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5'000, 'h') + "\r\n\r\n");
    CHECK(status_of(got) == 431);
    CHECK(body_of(got)["status"] == "headers_too_large");

    got = ask("PUT /keys/a HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n" + std::string(2'000, 'b'));
    CHECK(status_of(got) == 413);
    CHECK(body_of(got)["status"] == "body_too_large");

    got = ask("this is not http\r\n\r\n");
    CHECK(status_of(got) == 400);
    CHECK(body_of(got)["status"] == "bad_request");

    // Within the limits, a body is read (after 100 Continue when asked for).
    raw_socket sock(s.port());
    REQUIRE(sock.send("PUT /keys/a HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    CHECK(sock.receive(1s, false).rfind("HTTP/1.1 100 Continue", 0) == 0);
    REQUIRE(sock.send("hello"));
    got = sock.receive(2s, false);
    CHECK(status_of(got) == 200);
    CHECK(body_of(got)["stored"] == 5);
    CHECK(s.counters().bad_requests == 4);
}

TEST_CASE("http server: slow clients time out with 408, idle ones are closed, and neither holds up a GET",
          "[http]") {
    h::server_options o = quick_options();
    o.header_timeout = 2s;
    o.idle_timeout = 2500ms;
    h::server s(hello_routes(), o);
    h::client c(s.executor());

    // 32 clients that send their headers a byte at a time, and 200 idle ones.
    std::vector<raw_socket> slow, idle;
    for (int i = 0; i < 32; ++i) slow.emplace_back(s.port());
    for (int i = 0; i < 200; ++i) idle.emplace_back(s.port());
    const std::string request = "GET /hello/slow HTTP/1.1\r\nHost: t\r\n\r\n";
    std::atomic<bool> done{false};
    std::thread dribble([&] {
        for (std::size_t i = 0; i < request.size() && !done; ++i) {
            for (auto& sock : slow) (void)sock.send(request.substr(i, 1));
            std::this_thread::sleep_for(30ms);
        }
    });
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
        const auto t0 = clock_type::now();
        const h::client_result r = c.get(s.endpoint(), "/hello/fast");
        ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        REQUIRE(r.reply);
        CHECK(r.reply->status == 200);
        std::this_thread::sleep_for(10ms);
    }
    done = true;
    dribble.join();
    std::sort(ms.begin(), ms.end());
    INFO("slowest GET " << ms.back() << " ms");
    CHECK(ms.back() < 1000);  // none waited for a slow client's timeout (2 s)

    for (auto& sock : slow) {
        const std::string got = sock.receive(4s);
        CHECK(status_of(got) == 408);
        CHECK(body_of(got)["status"] == "request_timeout");
    }
    for (auto& sock : idle) {
        CHECK(sock.receive(4s).empty());
        CHECK(sock.closed);  // closed quietly after idle_timeout
    }
    CHECK(s.counters().timeouts >= 32);
}

TEST_CASE("http server: beyond max_connections a connection gets 503 with Retry-After", "[http]") {
    h::server_options o = quick_options();
    o.max_connections = 4;
    h::server s(hello_routes(), o);
    std::vector<raw_socket> held;
    for (int i = 0; i < 4; ++i) held.emplace_back(s.port());
    REQUIRE(eventually([&] { return s.open_connections() == 4; }));
    raw_socket extra(s.port());
    const std::string got = extra.receive(2s);
    CHECK(status_of(got) == 503);
    CHECK(got.find("Retry-After: 1") != std::string::npos);
    CHECK(body_of(got)["status"] == "unavailable");
    CHECK(extra.closed);
    CHECK(s.counters().connections_refused == 1);

    // One of the four goes: a new connection is served again.
    held.pop_back();
    REQUIRE(eventually([&] { return s.open_connections() == 3; }));
    raw_socket again(s.port());
    REQUIRE(again.send("GET /hello/again HTTP/1.1\r\nHost: t\r\n\r\n"));
    CHECK(status_of(again.receive(2s, false)) == 200);
}

TEST_CASE("http server: a request beyond max_in_flight gets 503 with Retry-After at once, and its connection stays",
          "[http]") {
    h::server_options o = quick_options();
    o.max_in_flight = 2;
    std::mutex m;
    std::vector<h::exchange> held;
    h::router r = hello_routes();
    r.route_async(verb::get, "/hold", [&](const h::exchange& ex) {
        const std::lock_guard lock(m);
        held.push_back(ex);  // answered later, from this test's thread
    });
    h::server s(std::move(r), o);
    raw_socket a(s.port()), b(s.port()), third(s.port());
    REQUIRE(a.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"));
    REQUIRE(b.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"));
    REQUIRE(eventually([&] { return s.in_flight() == 2; }));

    REQUIRE(third.send("GET /hello/x HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::string got = third.receive(2s, false);
    CHECK(status_of(got) == 503);
    CHECK(got.find("Retry-After: 1") != std::string::npos);
    CHECK(body_of(got)["error"] == "the server is handling too many requests");
    CHECK_FALSE(third.closed);

    {
        const std::lock_guard lock(m);
        REQUIRE(held.size() == 2);
        for (auto& ex : held) CHECK(ex.respond(h::response{200, "{\"held\":true}"}));
        CHECK_FALSE(held.front().respond(h::response{500, "{}"}));  // answered once only
        held.clear();
    }
    CHECK(body_of(a.receive(2s, false))["held"] == true);
    CHECK(body_of(b.receive(2s, false))["held"] == true);
    REQUIRE(eventually([&] { return s.in_flight() == 0; }));
    REQUIRE(third.send("GET /hello/x HTTP/1.1\r\nHost: t\r\n\r\n"));  // the same connection, served now
    CHECK(status_of(third.receive(2s, false)) == 200);
    CHECK(s.counters().refused_busy == 1);
}

TEST_CASE("http server: work that may block runs on the work pool, and beyond its queue a request gets 503 at once",
          "[http]") {
    h::server_options o = quick_options();
    o.work_threads = 1;
    o.work_queue = 1;
    std::mutex m;
    std::condition_variable cv;
    bool release = false;
    std::atomic<int> running{0};
    h::router r = hello_routes();
    r.route_blocking(verb::get, "/wait", [&](const h::exchange&) {
        ++running;
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return release; });
        return h::response{200, "{}"};
    });
    h::server s(std::move(r), o);
    raw_socket first(s.port()), second(s.port()), third(s.port()), fast(s.port());
    REQUIRE(first.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n"));
    REQUIRE(eventually([&] { return running == 1; }));
    REQUIRE(second.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n"));  // queued
    REQUIRE(eventually([&] { return s.in_flight() == 2; }));
    REQUIRE(third.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n"));  // the queue is full
    const std::string got = third.receive(2s, false);
    CHECK(status_of(got) == 503);
    CHECK(got.find("Retry-After: 1") != std::string::npos);
    CHECK(body_of(got)["error"] == "the server has too many requests waiting for a worker");

    // The I/O threads are free meanwhile.
    REQUIRE(fast.send("GET /hello/x HTTP/1.1\r\nHost: t\r\n\r\n"));
    CHECK(status_of(fast.receive(1s, false)) == 200);

    {
        const std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    CHECK(status_of(first.receive(2s, false)) == 200);
    CHECK(status_of(second.receive(2s, false)) == 200);
    CHECK(s.counters().refused_busy == 1);
}

TEST_CASE("http server: a handler that throws, or drops the request unanswered, gets the client a 500 with a JSON body",
          "[http]") {
    h::router r;
    r.route_inline(verb::get, "/throws", [](const h::exchange&) -> h::response { throw std::runtime_error("boom"); });
    r.route_async(verb::get, "/drops", [](const h::exchange&) {});
    r.route_async(verb::get, "/later", [](const h::exchange& ex) {
        std::thread([ex] {
            std::this_thread::sleep_for(50ms);
            ex.respond(h::response{200, "{\"late\":true}"});
        }).detach();
    });
    h::server s(std::move(r), quick_options());
    h::client c(s.executor());
    h::client_result got = c.get(s.endpoint(), "/throws");
    REQUIRE(got.reply);
    CHECK(got.reply->status == 500);
    CHECK(nlohmann::json::parse(got.reply->body)["error"] == "the request's handler failed: boom");
    got = c.get(s.endpoint(), "/drops");
    REQUIRE(got.reply);
    CHECK(got.reply->status == 500);
    CHECK(nlohmann::json::parse(got.reply->body)["error"] == "the request's handler gave no answer");
    got = c.get(s.endpoint(), "/later");
    REQUIRE(got.reply);
    CHECK(got.reply->status == 200);
    CHECK(nlohmann::json::parse(got.reply->body)["late"] == true);
}

TEST_CASE("http server: 10,000 idle keep-alive connections and 50 slow clients, held by another process, and GETs "
          "are still answered at once",
          "[http]") {
    h::server s(hello_routes(), quick_options());
    h::client c(s.executor());
    // benchmarks/http/held_connections.py holds them (its own descriptors:
    // this process has the server's 10,000).
    int out[2];
    REQUIRE(::pipe(out) == 0);
    const pid_t held = ::fork();
    REQUIRE(held >= 0);
    if (held == 0) {
        ::dup2(out[1], 1);
        ::close(out[0]);
        const std::string script = std::string(STRATA_SOURCE_DIR) + "/benchmarks/http/held_connections.py";
        const std::string port = std::to_string(s.port());
        ::execlp("python3", "python3", script.c_str(), "--port", port.c_str(), "--idle", "10000", "--slow", "50",
                 "--path", "/hello/x", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(out[1]);
    std::string first;
    for (char ch = 0; ::read(out[0], &ch, 1) == 1 && ch != '\n';) first += ch;
    INFO("held_connections.py said: " << first);
    const nlohmann::json opened = nlohmann::json::parse(first, nullptr, false);
    REQUIRE(opened.is_object());
    CHECK(opened["idle"] == 10'000);
    CHECK(opened["failed"] == 0);
    CHECK(s.open_connections() >= 10'000);

    std::vector<double> ms;
    for (int i = 0; i < 500; ++i) {
        const auto t0 = clock_type::now();
        const h::client_result r = c.get(s.endpoint(), "/hello/x");
        ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        REQUIRE(r.reply);
        CHECK(r.reply->status == 200);
    }
    std::sort(ms.begin(), ms.end());
    INFO("p50 " << ms[250] << " ms, slowest " << ms.back() << " ms");
    CHECK(ms.back() < 1000);  // not queued behind the idle connections or the slow clients
    ::kill(held, SIGTERM);
    int status = 0;
    ::waitpid(held, &status, 0);
    ::close(out[0]);
    CHECK(s.counters().connections_refused == 0);
}

TEST_CASE("http client: at most max_connections_per_peer connections, a bounded queue, and a closed keep-alive "
          "connection replaced",
          "[http]") {
    h::server_options so = quick_options();
    so.idle_timeout = 200ms;
    h::router r = hello_routes();
    r.route_blocking(verb::get, "/slow", [](const h::exchange&) {
        std::this_thread::sleep_for(50ms);
        return h::response{200, "{}"};
    });
    h::server s(std::move(r), so);
    h::client_options co;
    co.max_connections_per_peer = 2;
    co.max_queued_per_peer = 100;
    h::client c(s.executor(), co);

    std::vector<std::future<h::client_result>> calls;
    for (int i = 0; i < 20; ++i)
        calls.push_back(std::async(std::launch::async, [&] { return c.get(s.endpoint(), "/slow"); }));
    for (auto& f : calls) {
        const h::client_result got = f.get();
        REQUIRE(got.reply);
        CHECK(got.reply->status == 200);
    }
    CHECK(s.counters().connections_accepted == 2);

    // The server closes both after its idle timeout: the next GET goes out
    // on a new connection, not failed.
    std::this_thread::sleep_for(500ms);
    const h::client_result after = c.get(s.endpoint(), "/hello/again");
    REQUIRE(after.reply);
    CHECK(after.reply->status == 200);
    CHECK(s.counters().connections_accepted == 3);

    h::client_options tight;
    tight.max_connections_per_peer = 1;
    tight.max_queued_per_peer = 1;
    h::client t(s.executor(), tight);
    std::vector<std::future<h::client_result>> over;
    for (int i = 0; i < 4; ++i)
        over.push_back(std::async(std::launch::async, [&] { return t.get(s.endpoint(), "/slow"); }));
    int ok = 0, refused = 0;
    for (auto& f : over) {
        const h::client_result got = f.get();
        if (got.reply) ++ok;
        else {
            ++refused;
            CHECK_THAT(got.failure, Catch::Contains("requests wait for a connection to"));
        }
    }
    CHECK(ok >= 2);
    CHECK(ok + refused == 4);

    const h::client_result nobody = c.get("127.0.0.1:1", "/");
    CHECK_FALSE(nobody.reply);
    CHECK_THAT(nobody.failure, Catch::Contains("connect"));
}
