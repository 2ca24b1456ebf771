#pragma once
/// @file
/// @brief The local state of one instance: `<state_dir>/<application_id>/`,
/// locked while the instance runs, with one folder per task holding the
/// task's checkpoint and the data of its persistent stores.

#include <strata/core/error.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace strata::runtime::detail {

/// @brief Owns `<root>/<application_id>/` for the lifetime of an instance.
///
/// The lock is an exclusive `flock` on a `.lock` file in the folder: it is
/// released when the process dies, however it dies, and two instances (in
/// different processes or in the same one) cannot hold it at once.
class state_directory {
public:
    /// @throws usage_error another instance holds the folder
    /// @throws error the folder cannot be created or locked
    state_directory(const std::filesystem::path& root, const std::string& application_id)
        : dir_(root / application_id) {
        if (root.empty()) throw usage_error("strata::runtime: application_options::state_dir is empty");
        std::error_code ec;
        std::filesystem::create_directories(dir_, ec);
        if (ec) throw error("strata::runtime: cannot create the state directory " + dir_.string() + ": " + ec.message());
        const std::filesystem::path lock = dir_ / ".lock";
        fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw error("strata::runtime: cannot open " + lock.string() + ": " + std::strerror(errno));
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int e = errno;
            std::string holder;
            char buf[32] = {};
            if (const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0); n > 0) holder = std::string(buf, static_cast<std::size_t>(n));
            ::close(fd_);
            fd_ = -1;
            if (e == EWOULDBLOCK)
                throw usage_error("strata::runtime: the state directory " + dir_.string() +
                                  " is in use by another instance" +
                                  (holder.empty() ? std::string() : " (process " + holder + ")") +
                                  "; give each instance a state_dir of its own");
            throw error("strata::runtime: cannot lock " + lock.string() + ": " + std::strerror(e));
        }
        const std::string pid = std::to_string(::getpid());
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
            // The pid is only for the message above; the lock is what counts.
        }
    }

    state_directory(const state_directory&) = delete;
    state_directory& operator=(const state_directory&) = delete;
    ~state_directory() {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return dir_; }

    /// @brief The folder of task `partition`, created when missing.
    [[nodiscard]] std::filesystem::path task_dir(std::int32_t partition) const {
        std::filesystem::path d = dir_ / ("task-" + std::to_string(partition));
        std::error_code ec;
        std::filesystem::create_directories(d, ec);
        if (ec) throw error("strata::runtime: cannot create " + d.string() + ": " + ec.message());
        return d;
    }

    /// @brief The checkpoint file of task `partition`.
    [[nodiscard]] std::filesystem::path checkpoint(std::int32_t partition) const {
        return task_dir(partition) / ".checkpoint";
    }

    /// @brief Deletes everything in the task's folder: local data that no
    /// checkpoint vouches for cannot be trusted (it may hold writes the
    /// changelog never got, or miss deletes that compaction has since removed
    /// from the changelog), so the task restores from the beginning instead.
    void wipe_task(std::int32_t partition) const {
        const std::filesystem::path d = task_dir(partition);
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(d, ec)) {
            std::filesystem::remove_all(entry.path(), ec);
            if (ec) throw error("strata::runtime: cannot wipe " + entry.path().string() + ": " + ec.message());
        }
        if (ec) throw error("strata::runtime: cannot list " + d.string() + ": " + ec.message());
    }

private:
    std::filesystem::path dir_;
    int fd_ = -1;
};

}  // namespace strata::runtime::detail
