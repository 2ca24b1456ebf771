#pragma once
// What the microbenchmarks share: key streams drawn before timing (uniform or
// Zipf), a changelog that costs only the copy of each record, and for the
// benchmarks that touch the disk a scratch directory, a timer and a way to
// make the next read of a file come from the disk.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace bench {

using u64 = std::uint64_t;

/// Zipf(s) over ranks 1..n: P(rank = r) is proportional to 1 / r^s. Draws
/// invert a cumulative table by binary search; key streams are drawn before
/// any timing, so the table's build cost and size (8 bytes a rank) are
/// outside every measurement.
class zipf_distribution {
public:
    zipf_distribution(u64 n, double s) : cumulative_(n) {
        double sum = 0;
        for (u64 r = 0; r < n; ++r) cumulative_[r] = sum += std::pow(static_cast<double>(r + 1), -s);
        for (double& c : cumulative_) c /= sum;
    }
    template <class Rng>
    u64 operator()(Rng& rng) {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        const auto it = std::lower_bound(cumulative_.begin(), cumulative_.end(), u);
        return static_cast<u64>(std::min<std::ptrdiff_t>(it - cumulative_.begin(),
                                                         static_cast<std::ptrdiff_t>(cumulative_.size()) - 1)) +
               1;
    }

private:
    std::vector<double> cumulative_;
};

/// `length` keys in [0, keys): uniform, or Zipf(0.99) ranks spread over the
/// key space (rank r -> (r - 1) * 2654435761 mod keys, a bijection while keys
/// is not a multiple of that prime), so hot keys are not neighbours.
inline std::vector<u64> key_stream(u64 keys, bool zipf, std::size_t length, u64 seed) {
    std::mt19937_64 rng(seed);
    std::vector<u64> out(length);
    if (!zipf) {
        std::uniform_int_distribution<u64> u(0, keys - 1);
        for (auto& k : out) k = u(rng);
    } else {
        zipf_distribution z(keys, 0.99);
        for (auto& k : out) k = ((z(rng) - 1) * 2654435761ULL) % keys;
    }
    return out;
}

/// A changelog that copies each record into one buffer and drops it at
/// flush: strata's own cost of logging, without a disk or a broker. The copy
/// is a memcpy into a buffer that grows by doubling, as a log's write buffer
/// would be: vector::insert's general path costs more than the copy of a
/// 16-byte record, and would be measured as strata's.
struct discarding_log {
    std::unique_ptr<std::byte[]> buffer;
    std::size_t used = 0;
    std::size_t capacity = 0;
    strata::offset_t end = 0;
    void append(const strata::record_view& r) {
        const std::size_t value = r.value ? r.value->size() : 0;
        if (capacity - used < r.key.size() + value) grow(used + r.key.size() + value);
        copy(r.key);
        if (r.value) copy(*r.value);
        ++end;
    }
    strata::offset_t flush() {
        used = 0;
        return end;
    }
    strata::offset_t end_offset() const { return end; }
    std::vector<strata::record_view> replay(strata::offset_t) const { return {}; }

private:
    void copy(strata::bytes_view b) {
        std::memcpy(buffer.get() + used, b.data(), b.size());
        used += b.size();
    }
    void grow(std::size_t need) {
        const std::size_t bigger = std::max({need, capacity * 2, std::size_t{1} << 16});
        auto next = std::make_unique_for_overwrite<std::byte[]>(bigger);
        if (used != 0) std::memcpy(next.get(), buffer.get(), used);
        buffer = std::move(next);
        capacity = bigger;
    }
};
static_assert(strata::changelog<discarding_log>);

/// A 100-byte value for update n: one of 16 strings, so that values change
/// without being made inside the timed loop.
inline const std::string& value_of(std::uint64_t n) {
    static const std::vector<std::string> pool = [] {
        std::vector<std::string> p;
        for (int i = 0; i < 16; ++i) p.emplace_back(100, static_cast<char>('a' + i));
        return p;
    }();
    return pool[n & 15];
}

/// Per-operation times of timed batches: reports ns_per_op (total time over
/// operations) and the p50 and p99 of the batches' per-operation times as
/// counters of a benchmark::State.
struct percentiles {
    std::vector<double> samples;
    template <class State>
    void report(State& state, double total_ns, double ops) {
        std::sort(samples.begin(), samples.end());
        auto at = [&](double q) {
            if (samples.empty()) return 0.0;
            return samples[std::min(samples.size() - 1, static_cast<std::size_t>(q * static_cast<double>(samples.size())))];
        };
        state.counters["ns_per_op"] = ops > 0 ? total_ns / ops : 0.0;
        state.counters["p50_ns"] = at(0.50);
        state.counters["p99_ns"] = at(0.99);
    }
};

// ---- files

using clock_type = std::chrono::steady_clock;

/// Throws naming `what` unless `ok`: a benchmark that cannot do its I/O must
/// not report a figure.
inline void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string(what) + " failed");
}

/// The scratch directory: $STRATA_BENCH_DIR (scripts/bench.sh sets it),
/// else ./bench-tmp; created if missing.
inline std::filesystem::path bench_dir() {
    const char* env = std::getenv("STRATA_BENCH_DIR");
    std::filesystem::path p = env && *env ? std::filesystem::path(env) : std::filesystem::path("bench-tmp");
    std::filesystem::create_directories(p);
    return std::filesystem::absolute(p);
}

inline double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Makes the next read of the file `p` come from the disk, not the page cache.
inline void drop_page_cache(const std::filesystem::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY);
    check(fd >= 0, "open");
    check(::fdatasync(fd) == 0, "fdatasync");
    check(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "posix_fadvise");
    ::close(fd);
}

/// drop_page_cache for every file of the directory `dir` but a log's lock
/// file: closing a descriptor of that file would release the lock an open
/// log holds on it (POSIX record locks belong to the process).
inline void drop_dir_page_cache(const std::filesystem::path& dir) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file() && e.path().filename() != "strata.lock") drop_page_cache(e.path());
}

/// The bytes of the files in the directory `dir`.
inline std::uint64_t dir_bytes(const std::filesystem::path& dir) {
    std::uint64_t bytes = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file()) bytes += e.file_size();
    return bytes;
}

}  // namespace bench
