#pragma once
/// @file
/// @brief Which writes go through the cache: every one while the cache
/// coalesces, otherwise a key on its second write, so a stream of keys that
/// never repeat passes the cache by instead of churning it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

/// @brief A bit per hash, set on a key's first write (TinyLFU's doorkeeper,
/// with one hash function).
///
/// It answers "was this key written since the last reset?" with no false
/// negatives and a false positive rate of at most 1/16 (it resets once a
/// sixteenth of its bits are set); a false positive only admits a key one
/// write early. It is sized for the cache: at least 16 bits per entry the
/// cache can hold, so a reset comes after as many new keys as the cache
/// holds entries, and the cost of re-marking the cached keys (the cache
/// keeps every key it holds marked) is constant per write.
class doorkeeper {
public:
    explicit doorkeeper(std::size_t max_entries) {
        std::size_t bits = 4096;
        while (bits < 16 * max_entries) bits *= 2;
        words_.assign(bits / 64, 0);
        mask_ = bits - 1;
    }

    /// @returns whether h was marked; marks it
    bool test_and_mark(std::size_t h) noexcept {
        std::uint64_t& w = word(h);
        const std::uint64_t bit = bit_of(h);
        if ((w & bit) != 0) return true;
        w |= bit;
        ++marked_;
        return false;
    }
    void mark(std::size_t h) noexcept { static_cast<void>(test_and_mark(h)); }

    /// @brief Whether enough bits are set that it should be reset.
    [[nodiscard]] bool saturated() const noexcept { return marked_ * 16 > mask_ + 1; }
    void reset() noexcept {
        std::fill(words_.begin(), words_.end(), 0);
        marked_ = 0;
    }

private:
    // The table takes a key's slot from the hash's low bits: take the bit
    // from higher ones, so keys that share a run of slots do not share a bit.
    [[nodiscard]] std::size_t index(std::size_t h) const noexcept { return (h >> 20) & mask_; }
    std::uint64_t& word(std::size_t h) noexcept { return words_[index(h) / 64]; }
    [[nodiscard]] std::uint64_t bit_of(std::size_t h) const noexcept { return std::uint64_t{1} << (index(h) & 63); }

    std::vector<std::uint64_t> words_;
    std::size_t mask_ = 0;
    std::size_t marked_ = 0;
};

/// @brief The cache's admission policy.
///
/// Every key goes through while the cache pays: in the last window of
/// writes at least one in 8 found its key cached, and none evicted an
/// entry. Otherwise the cache is selective: a key goes through if the cache
/// holds it or on its second write since the doorkeeper's last reset, and a
/// first write logs its record at once, as without a cache. Keys that rarely
/// repeat would only add the cache's cost, and in a full cache each would
/// evict an entry that may be written again.
///
/// While selective, the doorkeeper must know every key the cache holds (a
/// key the cache holds must always go through, or its entry would miss the
/// write): the cache reports each key it inserts, and `cached(mark)`, which
/// calls mark(hash) for every key the cache holds, re-marks them all when
/// the doorkeeper is reset.
class admission {
public:
    explicit admission(std::size_t max_entries) : seen_(max_entries) {}

    /// @brief A put or erase of the key with hash h: whether it goes through
    /// the cache. `evictions`: the cache's evictions so far.
    template <class ForEachCached>
    bool admits(std::size_t h, std::uint64_t evictions, const ForEachCached& cached) {
        if (++window_.writes == window) end_window(evictions, cached);
        if (!window_.selective || seen_.test_and_mark(h)) return true;
        if (seen_.saturated()) {
            reset_seen(cached);
            seen_.mark(h);
        }
        return false;
    }
    /// @brief A write that went through found its key cached.
    void hit() noexcept { ++window_.hits; }
    /// @brief The cache made an entry for the key with hash h.
    template <class ForEachCached>
    void inserted(std::size_t h, const ForEachCached& cached) {
        if (!window_.selective) return;  // the doorkeeper is not asked, so not kept current
        seen_.mark(h);
        if (seen_.saturated()) reset_seen(cached);
    }

private:
    static constexpr std::uint32_t window = 4096;  // writes

    template <class ForEachCached>
    void end_window(std::uint64_t evictions, const ForEachCached& cached) {
        const bool selective = window_.hits * 8 < window_.writes || evictions != window_.evictions_before;
        if (selective && !window_.selective) reset_seen(cached);  // from now on it is asked
        window_ = {selective, 0, 0, evictions};
    }
    template <class ForEachCached>
    void reset_seen(const ForEachCached& cached) {
        seen_.reset();
        cached([this](std::size_t h) { seen_.mark(h); });
    }

    struct window_state {
        bool selective = false;
        std::uint32_t writes = 0;
        std::uint32_t hits = 0;
        std::uint64_t evictions_before = 0;  // the cache's evictions when the window began
    };
    doorkeeper seen_;
    window_state window_;
};

}  // namespace strata::detail
