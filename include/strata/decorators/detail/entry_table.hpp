#pragma once
/// @file
/// @brief The cache's table of entries: open addressing over entries that are
/// reused, so a key that enters the cache costs no allocation once the cache
/// has held as many entries before, and dropping every entry at a flush
/// costs what the entries cost, not what the biggest table did.

#include <strata/core/hash.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace strata::detail {

/// @brief A hash table of `Entry`s keyed by `Entry::key`. Entry is default
/// constructible and has two more members the table fills: `std::size_t
/// hash` and `std::uint32_t table_index`.
///
/// Entries live in a deque and keep their address while in the table, so
/// intrusive lists may link them. An erased entry goes back to a pool, key
/// and all (a `std::string` key keeps its buffer for the next key); the
/// caller resets whatever else the entry holds. The pool never holds more
/// entries than the table has held at once, and clear() trims it to twice
/// the most it held since the clear before.
///
/// Lookup: linear probing over 8-byte slots (entry index and 32 bits of the
/// hash), at most half full, so a probe rarely touches an entry whose key
/// does not match. Erase shifts the following slots back (no tombstones).
template <class Entry, class Key, class Hash>
class entry_table {
public:
    /// @returns the entry of k, and whether it was just inserted (then only
    ///          its key and hash are set; the rest is as the last user left it)
    std::pair<Entry*, bool> find_or_insert(const Key& k) { return find_or_insert(k, hash_of(k)); }

    /// @brief find_or_insert(k) for a caller that has hashed k already.
    std::pair<Entry*, bool> find_or_insert(const Key& k, std::size_t h) {
        if (slots_.empty() || (live_ + 1) * 2 > slots_.size()) grow();
        const std::size_t mask = slots_.size() - 1;
        const auto tag = static_cast<std::uint32_t>(h >> 32);
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            slot& s = slots_[i];
            if (s.index == 0) {
                Entry& e = take_free();
                e.key = k;
                e.hash = h;
                s = slot{index_of(e), tag};
                ++live_;
                peak_ = std::max(peak_, live_);
                return {&e, true};
            }
            if (s.tag == tag) {
                Entry& e = at(s.index);
                if (e.key == k) return {&e, false};
            }
        }
    }

    /// @brief Removes e from the table and returns it to the pool.
    void erase(Entry& e) {
        const std::size_t mask = slots_.size() - 1;
        const std::uint32_t index = index_of(e);
        std::size_t i = e.hash & mask;
        while (slots_[i].index != index) i = (i + 1) & mask;
        // Shift back every later slot of the run that may move closer to home.
        for (std::size_t j = (i + 1) & mask; slots_[j].index != 0; j = (j + 1) & mask) {
            const std::size_t home = at(slots_[j].index).hash & mask;
            // Slot j may fill the hole at i when its home is not in (i, j].
            if (((j - home) & mask) >= ((j - i) & mask)) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = slot{};
        free_.push_back(index);
        --live_;
    }

    /// @brief Removes every entry; they all go back to the pool.
    void clear() {
        // Size the table and pool for the work since the last clear: a cache
        // that once held a million entries and now holds a thousand per flush
        // zeroes slots for a thousand.
        const std::size_t want = slot_count_for(peak_);
        if (slots_.size() > 2 * want) slots_.assign(want, slot{});
        else std::fill(slots_.begin(), slots_.end(), slot{});
        if (entries_.size() > 2 * peak_) entries_.resize(2 * peak_);
        free_.clear();
        used_ = 0;
        live_ = 0;
        peak_ = 0;
    }

    [[nodiscard]] std::size_t size() const noexcept { return live_; }
    [[nodiscard]] bool empty() const noexcept { return live_ == 0; }

    /// @brief The table's hash of k: Hash, mixed so every bit counts.
    static std::size_t hash_of(const Key& k) { return spread_hash(Hash{}(k)); }

private:
    struct slot {
        std::uint32_t index = 0;  ///< entry index + 1; 0: empty
        std::uint32_t tag = 0;    ///< the hash's high 32 bits
    };

    static std::size_t slot_count_for(std::size_t entries) {
        std::size_t n = 16;
        while (n < 2 * (entries + 1)) n *= 2;
        return n;
    }

    Entry& at(std::uint32_t index) { return entries_[index - 1]; }
    // The entry's position is kept in it: a deque has no pointer arithmetic
    // across its blocks.
    static std::uint32_t index_of(const Entry& e) noexcept { return e.table_index; }

    Entry& take_free() {
        if (!free_.empty()) {
            const std::uint32_t index = free_.back();
            free_.pop_back();
            return at(index);
        }
        if (used_ == entries_.size()) entries_.emplace_back();
        Entry& e = entries_[used_++];
        e.table_index = static_cast<std::uint32_t>(used_);
        return e;
    }

    void grow() {
        const std::vector<slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 16 : old.size() * 2, slot{});
        const std::size_t mask = slots_.size() - 1;
        for (const slot& s : old) {
            if (s.index == 0) continue;
            std::size_t i = at(s.index).hash & mask;
            while (slots_[i].index != 0) i = (i + 1) & mask;
            slots_[i] = s;
        }
    }

    std::vector<slot> slots_;      // power-of-two size, at most half full
    std::deque<Entry> entries_;    // the pool: [0, used_) have been handed out
    std::vector<std::uint32_t> free_;  // indices (+1) of erased entries below used_
    std::size_t used_ = 0;
    std::size_t live_ = 0;
    std::size_t peak_ = 0;  // most entries live at once since the last clear
};

}  // namespace strata::detail
