#pragma once
// The TCP fault proxy (test/support/tcp_proxy.py) as a child process: it
// listens on 127.0.0.1:<port> (inside a network namespace with `netns`),
// forwards to 127.0.0.1:<target> on this machine's loopback, and takes its
// mode ("pass", "delay 50", "stall", "drop", "refuse") on a Unix socket.
// Every failure throws std::runtime_error, so that a test (REQUIRE_NOTHROW
// or Catch2's report of the exception) and a benchmark both say what broke.

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
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

/// @brief tcp_proxy.py next to this header.
inline std::string fault_proxy_script() {
    return (std::filesystem::path(__FILE__).parent_path() / "tcp_proxy.py").string();
}

class fault_proxy {
public:
    struct options {
        int port = 0;                         ///< where it listens (127.0.0.1)
        int target = 0;                       ///< what it forwards to (127.0.0.1)
        std::filesystem::path control;        ///< its Unix control socket
        std::filesystem::path log;            ///< its output (empty: this process's)
        std::optional<std::string> netns;     ///< listen inside this network namespace
        std::string script = fault_proxy_script();
    };

    /// @brief Starts the proxy and returns once it answers on its control socket.
    explicit fault_proxy(options o) : o_(std::move(o)) {
        if (!std::filesystem::exists(o_.script)) throw std::runtime_error("no fault proxy at " + o_.script);
        std::filesystem::remove(o_.control);
        std::vector<std::string> args{"/usr/bin/python3", o_.script, "--port", std::to_string(o_.port),
                                      "--target", std::to_string(o_.target), "--control", o_.control.string()};
        if (o_.netns) args.insert(args.end(), {"--netns", *o_.netns});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        if (!o_.log.empty()) {
            posix_spawn_file_actions_addopen(&actions, 1, o_.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            posix_spawn_file_actions_adddup2(&actions, 1, 2);
        }
        const int spawned = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) throw std::runtime_error("cannot start the fault proxy: " + std::string(std::strerror(spawned)));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
        std::string answer;
        while (!try_command("status", answer)) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("the fault proxy exited at start (port " + std::to_string(o_.port) +
                                         " in use?)" + (o_.log.empty() ? "" : "; its log: " + o_.log.string()));
            }
            if (std::chrono::steady_clock::now() > deadline) {
                stop();
                throw std::runtime_error("the fault proxy did not answer on " + o_.control.string() + " within 15 s");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    fault_proxy(const fault_proxy&) = delete;
    fault_proxy& operator=(const fault_proxy&) = delete;
    ~fault_proxy() { stop(); }

    /// @brief Switches the mode; throws unless the proxy answers "ok".
    void set(const std::string& mode) const {
        std::string answer;
        if (!try_command(mode, answer) || answer.rfind("ok", 0) != 0)
            throw std::runtime_error("the fault proxy did not take '" + mode + "': " + answer);
    }

private:
    /// SIGTERM, and SIGKILL after 5 s.
    void stop() noexcept {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        for (int i = 0; i < 50; ++i) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ::kill(pid_, SIGKILL);
        (void)::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

    bool try_command(const std::string& command, std::string& answer) const {
        answer.clear();
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, o_.control.c_str(), sizeof addr.sun_path - 1);
        bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
        const std::string line = command + "\n";
        ok = ok && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
        char c = 0;
        while (ok && ::read(fd, &c, 1) == 1 && c != '\n') answer += c;
        ::close(fd);
        return ok && !answer.empty();
    }

    options o_;
    pid_t pid_ = -1;
};

}  // namespace test_support
