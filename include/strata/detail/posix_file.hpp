#pragma once
/// @file
/// @brief Thin POSIX file helpers for the durable formats: an owning file
/// descriptor, EINTR-safe whole reads and writes, and the fsync calls that
/// crash safety depends on. Each helper throws `Error` (a strata exception
/// type) with the failing call, the path and the system's reason.

#include <strata/core/bytes.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace strata::detail {

/// The current time as ISO 8601 UTC text, e.g. 2026-12-01T23:59:30Z.
inline std::string utc_now_text() {
    const ::time_t now = ::time(nullptr);
    ::tm t{};
    char text[32] = {};
    if (::gmtime_r(&now, &t) == nullptr || ::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &t) == 0) return "?";
    return text;
}

/// @brief Owns a file descriptor; closes it on destruction. Move-only.
class unique_fd {
public:
    unique_fd() noexcept = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Closes the current descriptor (errors from close are not actionable here).
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

template <class Error>
[[noreturn]] inline void throw_errno(std::string_view call, const std::filesystem::path& p,
                                     int err) {
    throw Error("strata: " + std::string(call) + " failed for " + p.string() + ": " +
                std::system_category().message(err));
}

template <class Error>
[[nodiscard]] inline unique_fd open_file(const std::filesystem::path& p, int flags,
                                         ::mode_t mode = 0644) {
    for (;;) {
        const int fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
        if (fd >= 0) return unique_fd(fd);
        if (errno != EINTR) throw_errno<Error>("open", p, errno);
    }
}

/// @brief Writes every byte (write(2) may write less than asked).
template <class Error>
inline void write_all(int fd, bytes_view data, const std::filesystem::path& p) {
    while (!data.empty()) {
        const ::ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            throw_errno<Error>("write", p, errno);
        }
        data = data.subspan(static_cast<std::size_t>(n));
    }
}

/// @brief Reads up to out.size() bytes at `pos`; fewer only at end of file.
/// @returns the number of bytes read
template <class Error>
[[nodiscard]] inline std::size_t read_at(int fd, std::span<std::byte> out, std::uint64_t pos,
                                         const std::filesystem::path& p) {
    std::size_t done = 0;
    while (done < out.size()) {
        const ::ssize_t n = ::pread(fd, out.data() + done, out.size() - done,
                                    static_cast<::off_t>(pos + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw_errno<Error>("pread", p, errno);
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    return done;
}

template <class Error>
[[nodiscard]] inline std::uint64_t file_size(int fd, const std::filesystem::path& p) {
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) throw_errno<Error>("fstat", p, errno);
    return static_cast<std::uint64_t>(st.st_size);
}

/// @brief fdatasync: the file's data (and size) reach stable storage.
template <class Error>
inline void sync_data(int fd, const std::filesystem::path& p) {
    while (::fdatasync(fd) != 0)
        if (errno != EINTR) throw_errno<Error>("fdatasync", p, errno);
}

/// @brief fsync: data and all metadata reach stable storage.
template <class Error>
inline void sync_file(int fd, const std::filesystem::path& p) {
    while (::fsync(fd) != 0)
        if (errno != EINTR) throw_errno<Error>("fsync", p, errno);
}

/// @brief Makes a directory's entries durable: needed after creating,
/// renaming or removing a file in it, or a crash may forget the change.
template <class Error>
inline void sync_directory(const std::filesystem::path& dir) {
    const unique_fd fd = open_file<Error>(dir, O_RDONLY | O_DIRECTORY);
    sync_file<Error>(fd.get(), dir);
}

template <class Error>
inline void truncate_file(int fd, std::uint64_t size, const std::filesystem::path& p) {
    while (::ftruncate(fd, static_cast<::off_t>(size)) != 0)
        if (errno != EINTR) throw_errno<Error>("ftruncate", p, errno);
}

/// @brief rename(2): atomically replaces `to` with `from`.
template <class Error>
inline void rename_file(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (::rename(from.c_str(), to.c_str()) != 0) throw_errno<Error>("rename to " + to.string(), from, errno);
}

}  // namespace strata::detail
