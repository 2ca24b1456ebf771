#pragma once
/// @file
/// @brief `strata::checkpoint_file`: remembers, per (store, partition), the
/// changelog offset a persistent store's local data is known to cover, so
/// restore replays only what came after.
///
/// File format (integers little-endian):
///
///     "SCKP"  magic
///     u32     version (1)
///     u32     number of entries
///     entries: u32 name length, name bytes, i32 partition, u64 offset
///     u32     CRC32C of every byte before it
///
/// The file is replaced whole on each save (temp file, fsync, rename, fsync
/// directory), so a crash leaves either the old or the new checkpoint.

#include <strata/detail/crc32c.hpp>
#include <strata/detail/little_endian.hpp>
#include <strata/detail/posix_file.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>

namespace strata {

/// @brief A durable map (store name, partition) -> changelog offset.
class checkpoint_file {
public:
    using key_type = std::pair<std::string, std::int32_t>;
    using entries_type = std::map<key_type, offset_t, std::less<>>;

    static constexpr std::uint32_t format_version = 1;

    explicit checkpoint_file(std::filesystem::path file) : file_(std::move(file)) {}

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return file_; }

    /// @brief The offset saved for a store's partition.
    /// @returns nullopt when the file or the entry does not exist (restore
    ///          then starts at the beginning of the changelog)
    /// @throws corruption_error the file is damaged; error on an I/O failure
    [[nodiscard]] std::optional<offset_t> load(std::string_view store,
                                               std::int32_t partition = 0) const {
        const entries_type all = entries();
        const auto it = all.find(std::pair{std::string(store), partition});
        if (it == all.end()) return std::nullopt;
        return it->second;
    }

    /// @brief Every entry in the file (empty when there is no file).
    [[nodiscard]] entries_type entries() const {
        byte_buffer bytes;
        if (!read_file(bytes)) return {};
        return parse(bytes);
    }

    /// @brief Durably records `offset` for a store's partition, keeping the
    /// other entries. Saves from several objects, threads or processes on the
    /// same file are serialized by a lock file next to it.
    /// @throws corruption_error the existing file is damaged (it is left as
    ///         it is; delete it to start over); error on an I/O failure
    void save(std::string_view store, std::int32_t partition, offset_t offset) {
        update([&](entries_type& e) { e[std::pair{std::string(store), partition}] = offset; });
    }

    /// @brief Forgets a store's partition, e.g. when its local data is wiped.
    /// @returns whether there was an entry
    bool erase(std::string_view store, std::int32_t partition = 0) {
        bool found = false;
        update([&](entries_type& e) { found = e.erase(std::pair{std::string(store), partition}) > 0; });
        return found;
    }

private:
    static constexpr std::array<std::byte, 4> magic{std::byte{'S'}, std::byte{'C'},
                                                    std::byte{'K'}, std::byte{'P'}};

    template <class Change>
    void update(Change&& change) {
        auto lock_path = file_;
        lock_path += ".lock";
        const detail::unique_fd lock = detail::open_file<error>(lock_path, O_RDWR | O_CREAT);
        while (::flock(lock.get(), LOCK_EX) != 0)
            if (errno != EINTR) detail::throw_errno<error>("flock", lock_path, errno);

        entries_type all = entries();
        change(all);
        const byte_buffer bytes = serialize(all);

        auto temp = file_;
        temp += ".tmp";
        {
            const detail::unique_fd fd =
                detail::open_file<error>(temp, O_WRONLY | O_CREAT | O_TRUNC);
            detail::write_all<error>(fd.get(), bytes, temp);
            detail::sync_file<error>(fd.get(), temp);
        }
        detail::rename_file<error>(temp, file_);
        const auto dir = file_.parent_path();
        detail::sync_directory<error>(dir.empty() ? std::filesystem::path(".") : dir);
    }

    /// @returns false when the file does not exist
    bool read_file(byte_buffer& out) const {
        const int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT) return false;
            detail::throw_errno<error>("open", file_, errno);
        }
        const detail::unique_fd owned(fd);
        out.resize(static_cast<std::size_t>(detail::file_size<error>(fd, file_)));
        out.resize(detail::read_at<error>(fd, out, 0, file_));
        return true;
    }

    static byte_buffer serialize(const entries_type& all) {
        byte_buffer out(magic.begin(), magic.end());
        detail::put_le<std::uint32_t>(out, format_version);
        detail::put_le<std::uint32_t>(out, static_cast<std::uint32_t>(all.size()));
        for (const auto& [key, offset] : all) {
            detail::put_le<std::uint32_t>(out, static_cast<std::uint32_t>(key.first.size()));
            append_bytes(out, as_bytes(key.first));
            detail::put_le<std::uint32_t>(out, static_cast<std::uint32_t>(key.second));
            detail::put_le<std::uint64_t>(out, offset);
        }
        detail::put_le<std::uint32_t>(out, detail::crc32c(out));
        return out;
    }

    [[nodiscard]] entries_type parse(bytes_view bytes) const {
        constexpr std::size_t header = 12, trailer = 4;
        if (bytes.size() < header + trailer) fail(0, "checkpoint file is truncated");
        if (!std::equal(magic.begin(), magic.end(), bytes.begin()))
            fail(0, "not a checkpoint file (bad magic)");
        const std::size_t crc_at = bytes.size() - trailer;
        if (detail::load_le<std::uint32_t>(bytes.data() + crc_at) !=
            detail::crc32c(bytes.first(crc_at)))
            fail(crc_at, "checkpoint checksum mismatch");
        const auto version = detail::load_le<std::uint32_t>(bytes.data() + 4);
        if (version != format_version)
            fail(4, "unsupported checkpoint version " + std::to_string(version));

        const auto count = detail::load_le<std::uint32_t>(bytes.data() + 8);
        entries_type all;
        std::size_t pos = header;
        for (std::uint32_t i = 0; i < count; ++i) {
            if (crc_at - pos < 4) fail(pos, "entry runs past the end");
            const std::size_t name_len = detail::load_le<std::uint32_t>(bytes.data() + pos);
            if (crc_at - pos - 4 < name_len + 12) fail(pos, "entry runs past the end");
            std::string name(as_chars(bytes.subspan(pos + 4, name_len)));
            pos += 4 + name_len;
            const auto partition =
                static_cast<std::int32_t>(detail::load_le<std::uint32_t>(bytes.data() + pos));
            const auto offset = detail::load_le<std::uint64_t>(bytes.data() + pos + 4);
            pos += 12;
            if (!all.emplace(std::pair{std::move(name), partition}, offset).second)
                fail(pos - 16 - name_len, "duplicate entry");
        }
        if (pos != crc_at) fail(pos, "trailing bytes after the last entry");
        return all;
    }

    [[noreturn]] void fail(std::size_t at, std::string_view what) const {
        throw corruption_error(file_.string(), at, what);
    }

    std::filesystem::path file_;
};

}  // namespace strata
