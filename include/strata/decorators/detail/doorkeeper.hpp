#pragma once
/// @file
/// @brief Which keys were written recently: the cache admits a key on its
/// second write while it is not coalescing, so a stream of keys that never
/// repeat passes it by instead of churning it.

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

}  // namespace strata::detail
