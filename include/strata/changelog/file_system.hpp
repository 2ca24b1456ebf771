#pragma once
/// @file
/// @brief The file operations a `basic_file_log` is built on, and
/// `posix_file_system`, the one `file_log` uses.
///
/// Every byte the file log reads or writes, and every fsync it depends on,
/// goes through this interface, so that a test can put a file system that
/// injects faults under the log (short writes, EIO, ENOSPC, a crash that
/// loses unsynced pages or keeps a later page and not an earlier one) and
/// check that nothing flushed is lost. A file system is a small copyable
/// handle; every operation throws `changelog_error` naming the call, the
/// path and the reason.

#include <strata/detail/posix_file.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace strata {

/// @brief What `basic_file_log` needs from a file system.
///
/// Semantics are those of POSIX: `append` writes at the end of a file
/// opened by `open_append` or `create_new`; nothing is durable until `sync_data` (a file's data and size)
/// or `sync_directory` (a directory's entries: created, renamed and removed
/// files) returns.
template <class Fs>
concept file_system = std::copyable<Fs> && requires(Fs fs, const typename Fs::file& f,
                                                     const std::filesystem::path& p,
                                                     std::span<std::byte> out, bytes_view in,
                                                     std::uint64_t n) {
    typename Fs::file;
    requires std::movable<typename Fs::file>;
    fs.create_directories(p);
    { fs.list(p) } -> std::same_as<std::vector<std::string>>;
    { fs.exists(p) } -> std::same_as<bool>;
    { fs.open_read(p) } -> std::same_as<typename Fs::file>;
    { fs.open_append(p) } -> std::same_as<typename Fs::file>;
    { fs.create_new(p) } -> std::same_as<typename Fs::file>;
    { fs.create_truncated(p) } -> std::same_as<typename Fs::file>;
    { fs.open_write(p) } -> std::same_as<typename Fs::file>;
    { fs.size(f, p) } -> std::same_as<std::uint64_t>;
    { fs.read_at(f, out, n, p) } -> std::same_as<std::size_t>;
    fs.append(f, in, p);
    fs.write_at(f, in, n, p);
    fs.sync_data(f, p);
    fs.truncate(f, n, p);
    fs.rename(p, p);
    fs.remove(p);
    fs.sync_directory(p);
    { fs.lock(p) } -> std::same_as<typename Fs::file>;
};

/// @brief The real file system, through POSIX calls.
struct posix_file_system {
    using file = detail::unique_fd;

    void create_directories(const std::filesystem::path& dir) const {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw changelog_error("strata: cannot create directory " + dir.string() + ": " + ec.message());
    }

    /// @returns the names of the entries of `dir`
    [[nodiscard]] std::vector<std::string> list(const std::filesystem::path& dir) const {
        std::vector<std::string> out;
        std::error_code ec;
        std::filesystem::directory_iterator it(dir, ec);
        for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
            out.push_back(it->path().filename().string());
        if (ec) throw changelog_error("strata: cannot list " + dir.string() + ": " + ec.message());
        return out;
    }

    [[nodiscard]] bool exists(const std::filesystem::path& p) const {
        std::error_code ec;
        const bool found = std::filesystem::exists(p, ec);
        if (ec) throw changelog_error("strata: cannot look for " + p.string() + ": " + ec.message());
        return found;
    }

    [[nodiscard]] file open_read(const std::filesystem::path& p) const {
        return detail::open_file<changelog_error>(p, O_RDONLY);
    }
    /// An existing file, written at its end.
    [[nodiscard]] file open_append(const std::filesystem::path& p) const {
        return detail::open_file<changelog_error>(p, O_WRONLY | O_APPEND);
    }
    /// A new file, written at its end; fails if the file exists.
    [[nodiscard]] file create_new(const std::filesystem::path& p) const {
        return detail::open_file<changelog_error>(p, O_WRONLY | O_CREAT | O_EXCL | O_APPEND);
    }
    /// A file emptied (or created): `append` writes from its start on, and
    /// `write_at` where it is told.
    [[nodiscard]] file create_truncated(const std::filesystem::path& p) const {
        return detail::open_file<changelog_error>(p, O_WRONLY | O_CREAT | O_TRUNC);
    }
    /// An existing file, for `write_at` and `truncate`.
    [[nodiscard]] file open_write(const std::filesystem::path& p) const {
        return detail::open_file<changelog_error>(p, O_WRONLY);
    }

    [[nodiscard]] std::uint64_t size(const file& f, const std::filesystem::path& p) const {
        return detail::file_size<changelog_error>(f.get(), p);
    }
    /// @returns the bytes read at `pos`: fewer than asked only at the end of the file
    [[nodiscard]] std::size_t read_at(const file& f, std::span<std::byte> out, std::uint64_t pos,
                                      const std::filesystem::path& p) const {
        return detail::read_at<changelog_error>(f.get(), out, pos, p);
    }
    void append(const file& f, bytes_view data, const std::filesystem::path& p) const {
        detail::write_all<changelog_error>(f.get(), data, p);
    }
    void write_at(const file& f, bytes_view data, std::uint64_t pos, const std::filesystem::path& p) const {
        while (!data.empty()) {
            const ::ssize_t n = ::pwrite(f.get(), data.data(), data.size(), static_cast<::off_t>(pos));
            if (n < 0) {
                if (errno == EINTR) continue;
                detail::throw_errno<changelog_error>("pwrite", p, errno);
            }
            data = data.subspan(static_cast<std::size_t>(n));
            pos += static_cast<std::uint64_t>(n);
        }
    }
    /// fdatasync: the file's data and size reach stable storage.
    void sync_data(const file& f, const std::filesystem::path& p) const {
        detail::sync_data<changelog_error>(f.get(), p);
    }
    void truncate(const file& f, std::uint64_t n, const std::filesystem::path& p) const {
        detail::truncate_file<changelog_error>(f.get(), n, p);
    }
    /// Atomically replaces `to` with `from` (durable after `sync_directory`).
    void rename(const std::filesystem::path& from, const std::filesystem::path& to) const {
        detail::rename_file<changelog_error>(from, to);
    }
    void remove(const std::filesystem::path& p) const {
        std::error_code ec;
        if (!std::filesystem::remove(p, ec) || ec)
            throw changelog_error("strata: cannot remove " + p.string() + ": " +
                                  (ec ? ec.message() : std::string("no such file")));
    }
    void sync_directory(const std::filesystem::path& dir) const {
        detail::sync_directory<changelog_error>(dir);
    }
    /// @brief Takes an exclusive lock on `p` (created if needed), held
    /// while the returned file is open. The holder writes its process id
    /// and the time into the file, so that a refused opener can say who
    /// holds the directory.
    /// @throws changelog_error the lock is held by another open log
    [[nodiscard]] file lock(const std::filesystem::path& p) const {
        file fd = detail::open_file<changelog_error>(p, O_RDWR | O_CREAT);
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) throw changelog_error(lock_refusal(p, fd));
            detail::throw_errno<changelog_error>("flock", p, errno);
        }
        // Best effort: the note only improves a later error message.
        const std::string note = "pid " + std::to_string(::getpid()) + ", opened " + detail::utc_now_text() + "\n";
        if (::ftruncate(fd.get(), 0) == 0) (void)!::pwrite(fd.get(), note.data(), note.size(), 0);
        return fd;
    }

private:
    /// Why the lock on `p` is refused, naming the holder from its note.
    static std::string lock_refusal(const std::filesystem::path& p, const file& fd) {
        std::string note(128, '\0');
        const ssize_t n = ::pread(fd.get(), note.data(), note.size(), 0);
        note.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        if (const auto end = note.find('\n'); end != std::string::npos) note.resize(end);
        std::string msg = "strata: file_log in " + p.parent_path().string() + " is already open elsewhere";
        const std::string self = "pid " + std::to_string(::getpid()) + ",";
        if (note.starts_with(self)) {
            msg += ": by another strata::file_log object in this process (" + note +
                   "). A directory is one log: give that object to every user (logged(log) keeps a reference), "
                   "or destroy it before opening the directory again";
        } else if (!note.empty()) {
            msg += ": by another process (" + note + ")";
        }
        return msg;
    }

public:
};

static_assert(file_system<posix_file_system>);

}  // namespace strata
