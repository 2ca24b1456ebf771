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

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace test_support {

class own_network {
public:
    /// @param ns the namespace's name (unique on the machine: e.g. with the pid in it)
    /// @param bootstrap the broker, "127.0.0.1:<port>"
    /// @param proxy the path of tcp_proxy.py
    /// @param log where the proxy's output goes
    own_network(std::string ns, const std::string& bootstrap, const std::string& proxy,
                const std::filesystem::path& log)
        : ns_(std::move(ns)), control_(std::filesystem::temp_directory_path() / (ns_ + ".control")) {
        const std::string port = bootstrap.substr(bootstrap.rfind(':') + 1);
        (void)std::system(("ip netns del " + ns_ + " 2>/dev/null").c_str());  // left over from a run that died
        if (std::system(("ip netns add " + ns_).c_str()) != 0 ||
            std::system(("ip -n " + ns_ + " link set lo up").c_str()) != 0)
            throw std::runtime_error("cannot make network namespace " + ns_ + " (root and iproute2 are needed)");
        std::filesystem::remove(control_);
        std::vector<std::string> args{"/usr/bin/python3", proxy, "--port", port, "--target", port,
                                      "--control", control_.string(), "--netns", ns_};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        const int spawned = ::posix_spawn(&proxy_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) throw std::runtime_error("cannot start the proxy of " + ns_);
        for (int i = 0; i < 200 && !std::filesystem::exists(control_); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!std::filesystem::exists(control_)) throw std::runtime_error("the proxy of " + ns_ + " did not start");
    }
    own_network(const own_network&) = delete;
    own_network& operator=(const own_network&) = delete;
    ~own_network() {
        ::kill(proxy_, SIGTERM);
        int status = 0;
        (void)::waitpid(proxy_, &status, 0);
        (void)std::system(("ip netns del " + ns_ + " 2>/dev/null").c_str());
    }

    /// @brief Whether this machine can make one (root, with `ip`).
    [[nodiscard]] static bool available() { return ::geteuid() == 0 && ::access("/usr/sbin/ip", X_OK) == 0; }

    /// @brief `argv` run inside the namespace.
    [[nodiscard]] std::vector<std::string> wrap(std::vector<std::string> argv) const {
        argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns_});
        return argv;
    }
    void cut() { command("stall"); }
    void heal() { command("pass"); }

private:
    void command(const std::string& what) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) throw std::runtime_error("socket failed");
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, control_.c_str(), sizeof addr.sun_path - 1);
        std::string reply;
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
            const std::string line = what + "\n";
            if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
                char c = 0;
                while (::read(fd, &c, 1) == 1 && c != '\n') reply += c;
            }
        }
        ::close(fd);
        if (reply.rfind("ok", 0) != 0)
            throw std::runtime_error("the proxy of " + ns_ + " did not take '" + what + "': " + reply);
    }

    std::string ns_;
    std::filesystem::path control_;
    pid_t proxy_ = -1;
};

}  // namespace test_support
