#pragma once
/// @file
/// @brief The table under hash_map_store: open addressing with the entries
/// in the table itself, so a lookup costs one cache miss where a node-based
/// map costs two (bucket, then node) and an insert allocates nothing.

#include <strata/core/hash.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata::detail {

/// @brief Memory for a table's arrays. Arrays of 4 MiB and more are aligned
/// to 2 MiB and, on Linux, advised to use transparent huge pages: a table
/// is read at random, and with 4 KiB pages nearly every lookup in a large
/// one would also miss the TLB.
struct table_memory {
    static constexpr std::size_t huge_page = std::size_t{2} << 20;
    static constexpr std::size_t huge_from = 2 * huge_page;

    static void* allocate(std::size_t bytes, std::size_t align) {
        if (bytes < huge_from) return ::operator new(bytes, std::align_val_t{align});
        const std::size_t rounded = (bytes + huge_page - 1) & ~(huge_page - 1);
        void* p = ::operator new(rounded, std::align_val_t{std::max(align, huge_page)});
#if defined(__linux__)
        ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: refused, the pages stay small
#endif
        return p;
    }
    static void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
        if (bytes < huge_from) ::operator delete(p, std::align_val_t{align});
        else ::operator delete(p, std::align_val_t{std::max(align, huge_page)});
    }
};

/// @brief A hash map of `std::pair<K, V>` with linear probing.
///
/// Layout: one control byte per slot (0 empty, else 0x80 and 7 bits of the
/// key's hash) beside an array of slots. A probe reads control bytes, which
/// are dense enough to stay in the processor's cache, and touches a slot
/// only when the 7 bits match, so a lookup usually costs one miss: the slot.
/// The table is at most 3/4 full; erase shifts the following entries of the
/// run back (no tombstones), so lookups never slow down after erases.
///
/// Unlike std::unordered_map, an insert or erase may move entries: iterators
/// and references are invalidated by every write. Entries are moved when
/// the table grows or shifts, which is why K and V must move without
/// throwing.
template <class K, class V, class Hash = std::hash<K>, class KeyEqual = std::equal_to<K>>
class flat_map {
public:
    using key_type = K;
    using mapped_type = V;
    using value_type = std::pair<K, V>;
    using size_type = std::size_t;

    static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_move_constructible_v<V>,
                  "hash_map_store moves its entries inside its table: the key and value types need a "
                  "noexcept move constructor (or use ordered_map_store, whose entries never move)");

private:
    template <bool Const>
    class basic_iterator {
        using map_ptr = std::conditional_t<Const, const flat_map*, flat_map*>;

    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = flat_map::value_type;
        using difference_type = std::ptrdiff_t;
        using reference = std::conditional_t<Const, const value_type&, value_type&>;
        using pointer = std::conditional_t<Const, const value_type*, value_type*>;

        basic_iterator() = default;
        basic_iterator(map_ptr map, std::size_t index) : map_(map), index_(index) {}
        operator basic_iterator<true>() const  // NOLINT: iterator to const_iterator
            requires(!Const)
        {
            return {map_, index_};
        }

        reference operator*() const { return map_->slots_[index_]; }
        pointer operator->() const { return map_->slots_ + index_; }
        basic_iterator& operator++() {
            index_ = map_->next_full(index_ + 1);
            return *this;
        }
        basic_iterator operator++(int) {
            auto old = *this;
            ++*this;
            return old;
        }
        friend bool operator==(const basic_iterator&, const basic_iterator&) = default;

    private:
        map_ptr map_ = nullptr;
        std::size_t index_ = 0;
    };

public:
    using iterator = basic_iterator<false>;
    using const_iterator = basic_iterator<true>;

    flat_map() = default;
    flat_map(const flat_map& other) : hash_(other.hash_), equal_(other.equal_) {
        if (other.size_ == 0) return;
        allocate(other.capacity_);
        try {
            // Same capacity and hash: every entry goes to the slot it has there.
            for (std::size_t i = 0; i < capacity_; ++i) {
                if (other.control_[i] == 0) continue;
                std::construct_at(slots_ + i, other.slots_[i]);
                control_[i] = other.control_[i];
                ++size_;
            }
        } catch (...) {
            release();
            throw;
        }
    }
    flat_map(flat_map&& other) noexcept { swap(other); }
    flat_map& operator=(flat_map other) noexcept {
        swap(other);
        return *this;
    }
    ~flat_map() { release(); }

    void swap(flat_map& other) noexcept {
        using std::swap;
        swap(hash_, other.hash_);
        swap(equal_, other.equal_);
        swap(control_, other.control_);
        swap(slots_, other.slots_);
        swap(capacity_, other.capacity_);
        swap(size_, other.size_);
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// @brief Slots allocated (a power of two, or 0).
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

    [[nodiscard]] iterator begin() noexcept { return {this, next_full(0)}; }
    [[nodiscard]] iterator end() noexcept { return {this, capacity_}; }
    [[nodiscard]] const_iterator begin() const noexcept { return {this, next_full(0)}; }
    [[nodiscard]] const_iterator end() const noexcept { return {this, capacity_}; }

    [[nodiscard]] iterator find(const K& key) { return {this, locate(key, mix(key))}; }
    [[nodiscard]] const_iterator find(const K& key) const { return {this, locate(key, mix(key))}; }

    /// @brief The entry of `key`, built from `key` and `args` when absent.
    template <class KArg, class... Args>
    std::pair<iterator, bool> try_emplace(KArg&& key, Args&&... args) {
        const std::size_t h = mix(key);
        const std::size_t found = locate(key, h);
        if (found != capacity_) return {{this, found}, false};
        const std::size_t i = claim(h);
        std::construct_at(slots_ + i, std::piecewise_construct, std::forward_as_tuple(std::forward<KArg>(key)),
                          std::forward_as_tuple(std::forward<Args>(args)...));
        occupy(i, h);
        return {{this, i}, true};
    }

    template <class KArg, class VArg>
    std::pair<iterator, bool> insert_or_assign(KArg&& key, VArg&& value) {
        const std::size_t h = mix(key);
        const std::size_t found = locate(key, h);
        if (found != capacity_) {
            slots_[found].second = std::forward<VArg>(value);
            return {{this, found}, false};
        }
        const std::size_t i = claim(h);
        std::construct_at(slots_ + i, std::forward<KArg>(key), std::forward<VArg>(value));
        occupy(i, h);
        return {{this, i}, true};
    }

    /// @returns 1 when `key` was present, else 0
    std::size_t erase(const K& key) {
        std::size_t hole = locate(key, mix(key));
        if (hole == capacity_) return 0;
        std::destroy_at(slots_ + hole);
        // Move each later entry of the run back into the hole when the hole
        // lies between that entry's home slot and the entry: then a probe
        // for it still passes no empty slot.
        const std::size_t mask = capacity_ - 1;
        for (std::size_t j = (hole + 1) & mask; control_[j] != 0; j = (j + 1) & mask) {
            const std::size_t home = mix(slots_[j].first) & mask;
            if (((j - home) & mask) < ((j - hole) & mask)) continue;
            std::construct_at(slots_ + hole, std::move(slots_[j]));
            std::destroy_at(slots_ + j);
            control_[hole] = control_[j];
            hole = j;
        }
        control_[hole] = 0;
        --size_;
        return 1;
    }

    /// @brief Removes every entry; keeps the slots.
    void clear() noexcept {
        for (std::size_t i = 0; i < capacity_; ++i) {
            if (control_[i] == 0) continue;
            std::destroy_at(slots_ + i);
            control_[i] = 0;
        }
        size_ = 0;
    }

    /// @brief Room for `n` entries without growing.
    void reserve(std::size_t n) {
        if (n * 4 > capacity_ * 3) rehash(capacity_for(n));
    }

    /// @brief Starts loading the slot where `key` would be, for a lookup soon.
    void prefetch(const K& key) const noexcept {
        // No branch on an empty table: a prefetch never faults, whatever the
        // address, so the addresses are computed as integers that may point
        // anywhere.
        const std::size_t i = mix(key) & (capacity_ - 1);
        const auto control = reinterpret_cast<std::uintptr_t>(control_.get()) + i;
        const auto slot = reinterpret_cast<std::uintptr_t>(slots_) + i * sizeof(value_type);
        __builtin_prefetch(reinterpret_cast<const void*>(control));
        __builtin_prefetch(reinterpret_cast<const void*>(slot), 1);
        // GCC counts a prefetch as no effect at all: it would find this
        // function pure and drop every call to it. An empty volatile asm is
        // an effect, and costs nothing.
        asm volatile("" : : "r"(control), "r"(slot));
    }

    friend bool operator==(const flat_map& a, const flat_map& b) {
        if (a.size_ != b.size_) return false;
        for (const auto& [key, value] : a) {
            const auto it = b.find(key);
            if (it == b.end() || !(it->second == value)) return false;
        }
        return true;
    }

private:
    /// The key's hash, spread: the slot comes from the low bits, the tag
    /// from the high ones.
    [[nodiscard]] std::size_t mix(const K& key) const noexcept { return spread_hash(hash_(key)); }
    static std::uint8_t tag_of(std::size_t h) noexcept { return static_cast<std::uint8_t>((h >> 57) | 0x80); }

    /// @returns the slot holding `key`, or capacity_ when it is absent
    [[nodiscard]] std::size_t locate(const K& key, std::size_t h) const {
        if (size_ == 0) return capacity_;
        const std::size_t mask = capacity_ - 1;
        const std::uint8_t tag = tag_of(h);
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            const std::uint8_t c = control_[i];
            if (c == 0) return capacity_;
            if (c == tag && equal_(slots_[i].first, key)) return i;
        }
    }

    /// @returns an empty slot for a new entry of hash h, growing first if the
    ///          table would pass 3/4 full
    std::size_t claim(std::size_t h) {
        if ((size_ + 1) * 4 > capacity_ * 3) rehash(capacity_for(size_ + 1));
        return empty_slot(h);
    }
    [[nodiscard]] std::size_t empty_slot(std::size_t h) const noexcept {
        const std::size_t mask = capacity_ - 1;
        std::size_t i = h & mask;
        while (control_[i] != 0) i = (i + 1) & mask;
        return i;
    }
    void occupy(std::size_t i, std::size_t h) noexcept {
        control_[i] = tag_of(h);
        ++size_;
    }

    static std::size_t capacity_for(std::size_t n) noexcept {
        std::size_t c = 16;
        while (n * 4 > c * 3) c *= 2;
        return c;
    }

    void rehash(std::size_t capacity) {
        flat_map bigger(hash_, equal_);
        bigger.allocate(capacity);
        for (std::size_t i = 0; i < capacity_; ++i) {
            if (control_[i] == 0) continue;
            const std::size_t h = mix(slots_[i].first);
            const std::size_t j = bigger.empty_slot(h);
            std::construct_at(bigger.slots_ + j, std::move(slots_[i]));
            bigger.occupy(j, h);
        }
        swap(bigger);  // bigger now holds the moved-from entries: its release destroys them
    }

    flat_map(const Hash& hash, const KeyEqual& equal) : hash_(hash), equal_(equal) {}

    void allocate(std::size_t capacity) {
        auto* control = static_cast<std::uint8_t*>(table_memory::allocate(capacity, 1));
        std::memset(control, 0, capacity);  // every slot empty
        control_ = std::unique_ptr<std::uint8_t[], control_deleter>(control, control_deleter{capacity});
        try {
            slots_ = static_cast<value_type*>(table_memory::allocate(capacity * sizeof(value_type), alignof(value_type)));
        } catch (...) {
            control_.reset();
            throw;
        }
        capacity_ = capacity;
    }
    void release() noexcept {
        if (slots_ == nullptr) return;
        clear();
        table_memory::deallocate(slots_, capacity_ * sizeof(value_type), alignof(value_type));
        slots_ = nullptr;
        control_.reset();
        capacity_ = 0;
    }

    [[nodiscard]] std::size_t next_full(std::size_t i) const noexcept {
        while (i < capacity_ && control_[i] == 0) ++i;
        return i;
    }

    [[no_unique_address]] Hash hash_{};
    [[no_unique_address]] KeyEqual equal_{};
    struct control_deleter {
        std::size_t bytes = 0;
        void operator()(std::uint8_t* p) const noexcept { table_memory::deallocate(p, bytes, 1); }
    };
    std::unique_ptr<std::uint8_t[], control_deleter> control_;
    value_type* slots_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
};

}  // namespace strata::detail
