#pragma once
// One program's own network, on loopback alone: a network namespace whose
// loopback holds only the TCP fault proxy (test/support/tcp_proxy.py,
// --netns) on the broker's port, forwarding to the broker on this machine's
// loopback. The program runs in it (`wrap` its command line: `ip netns exec`),
// sees the broker at the address the broker advertises, 127.0.0.1:<port>, and
// reaches it only through the proxy. `cut()` makes the proxy stall both
// directions and keep the connections open, as a link that drops every
// packet does: that program is partitioned from the cluster and nothing else
// is. `heal()` lets through what was held. Needs root and iproute2.

#include "fault_proxy.hpp"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace test_support {

class own_network {
public:
    /// @param ns the namespace's name (unique on the machine: e.g. with the pid in it)
    /// @param bootstrap the broker, "127.0.0.1:<port>"
    /// @param proxy the path of tcp_proxy.py
    /// @param log where the proxy's output goes
    own_network(std::string ns, const std::string& bootstrap, const std::string& proxy,
                const std::filesystem::path& log)
        : ns_(std::move(ns)) {
        const int port = std::stoi(bootstrap.substr(bootstrap.rfind(':') + 1));
        remove_namespace();  // left over from a run that died
        if (std::system(("ip netns add " + ns_).c_str()) != 0 ||
            std::system(("ip -n " + ns_ + " link set lo up").c_str()) != 0)
            throw std::runtime_error("cannot make network namespace " + ns_ + " (root and iproute2 are needed)");
        try {
            proxy_ = std::make_unique<fault_proxy>(fault_proxy::options{
                .port = port,
                .target = port,
                .control = std::filesystem::temp_directory_path() / (ns_ + ".control"),
                .log = log,
                .netns = ns_,
                .script = proxy});
        } catch (...) {
            remove_namespace();
            throw;
        }
    }
    own_network(const own_network&) = delete;
    own_network& operator=(const own_network&) = delete;
    ~own_network() {
        proxy_.reset();
        remove_namespace();
    }

    /// @brief Whether this machine can make one (root, with `ip`).
    [[nodiscard]] static bool available() { return ::geteuid() == 0 && ::access("/usr/sbin/ip", X_OK) == 0; }

    /// @brief `argv` run inside the namespace.
    [[nodiscard]] std::vector<std::string> wrap(std::vector<std::string> argv) const {
        argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns_});
        return argv;
    }
    void cut() { proxy_->set("stall"); }
    void heal() { proxy_->set("pass"); }

private:
    void remove_namespace() const { (void)std::system(("ip netns del " + ns_ + " 2>/dev/null").c_str()); }

    std::string ns_;
    std::unique_ptr<fault_proxy> proxy_;
};

}  // namespace test_support
