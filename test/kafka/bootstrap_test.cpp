// A wrong bootstrap address gives a clear error within a bounded time, both
// where nothing listens (connection refused) and where nothing answers at all
// (a listener that accepts connections and never replies), instead of a
// delivery timeout minutes later. Every address is on this machine; a host
// name that does not resolve is not tried, since finding that out asks the
// machine's DNS server, which is not on this machine.

#include "kafka_test_support.hpp"

#include <strata/kafka/changelog.hpp>

#include <chrono>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kafka = strata::kafka;

namespace {
void check_refused_in_time(const std::string& address) {
    strata::kafka::changelog_options o;
    o.bootstrap_servers = address;
    o.topic = kafka_test::unique_name("wrong-bootstrap");
    o.connect_timeout = std::chrono::milliseconds(2000);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_THROWS_WITH(kafka::changelog(o), Catch::Contains("no answer from the Kafka cluster at '" + address + "'") &&
                                                 Catch::Contains("within 2000 ms"));
    const auto took = std::chrono::steady_clock::now() - start;
    INFO("took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    REQUIRE(took < std::chrono::seconds(8));
}

/// A TCP listener on 127.0.0.1 that never accepts and never answers: the
/// kernel completes the handshake into its backlog, so a client connects and
/// then waits for a reply that never comes (what a hung broker looks like).
class silent_listener {
public:
    silent_listener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;  // any free port
        REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd_, 64) == 0);
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
    }
    silent_listener(const silent_listener&) = delete;
    silent_listener& operator=(const silent_listener&) = delete;
    ~silent_listener() { ::close(fd_); }

    [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

private:
    int fd_ = -1;
    unsigned port_ = 0;
};
}  // namespace

TEST_CASE("bootstrap: nothing listening at the address", "[kafka][bootstrap]") {
    kafka_test::bootstrap();  // the suite runs with a broker: this address is wrong on purpose
    check_refused_in_time("127.0.0.1:1");
}

TEST_CASE("bootstrap: an address that never answers", "[kafka][bootstrap]") {
    const silent_listener hung;
    check_refused_in_time(hung.address());
}
