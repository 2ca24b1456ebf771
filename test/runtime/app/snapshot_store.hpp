#pragma once
// A persistent kv store for the runtime tests: an ordered map that writes
// itself whole to a file on flush (temp file, fsync, rename) and reads that
// file back when it is opened. It keeps its data across restarts, so the
// runtime restores it from its checkpoint instead of from offset 0.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/detail/map_store_base.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace runtime_test {

template <class K, class V>
class snapshot_store : public strata::detail::map_store_base<std::map<K, V>> {
    using base = strata::detail::map_store_base<std::map<K, V>>;

public:
    snapshot_store(std::string name, std::filesystem::path file) : base(std::move(name)), file_(std::move(file)) {
        std::ifstream in(file_, std::ios::binary);
        if (!in) return;
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        strata::byte_reader r(strata::as_bytes(bytes), "snapshot");
        for (auto n = strata::serde<std::uint64_t>::read(r); n > 0; --n) {
            K k = strata::serde<K>::read(r);
            this->map_.insert_or_assign(std::move(k), strata::serde<V>::read(r));
        }
        r.expect_end();
    }

    [[nodiscard]] bool persistent() const noexcept { return true; }

    void flush() {
        strata::byte_buffer out;
        strata::serde<std::uint64_t>::write(this->map_.size(), out);
        for (const auto& [k, v] : this->map_) {
            strata::serde<K>::write(k, out);
            strata::serde<V>::write(v, out);
        }
        const std::filesystem::path tmp = file_.string() + ".tmp";
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw strata::error("snapshot_store: open " + tmp.string() + ": " + std::strerror(errno));
        const bool ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) && ::fsync(fd) == 0;
        ::close(fd);
        if (!ok) throw strata::error("snapshot_store: write " + tmp.string() + ": " + std::strerror(errno));
        std::filesystem::rename(tmp, file_);
    }

private:
    std::filesystem::path file_;
};

}  // namespace runtime_test
