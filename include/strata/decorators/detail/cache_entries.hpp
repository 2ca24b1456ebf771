#pragma once
/// @file
/// @brief The cache's entries and their bookkeeping: the table that finds
/// them, their (nearly) LRU order, which of them are dirty, and their bytes.
/// The cache layer (cached_store.hpp) decides what they mean.

#include <strata/core/memory_size.hpp>
#include <strata/decorators/detail/entry_table.hpp>

#include <boost/intrusive/list.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace strata::detail {

/// @brief Entries keyed by Key, each holding a Value (what the cache knows
/// of the key's state; for a kv store, its value) and a dirty flag.
template <class Key, class Value, class Hash>
class cache_entries {
    // The LRU order and the dirty set are intrusive lists through the
    // entries: no allocation of their own, O(1) to touch, unlink or pop. The
    // LRU hook is linked exactly while the entry is in the table, so it needs
    // no checks; the dirty hook is a safe one, whose is_linked() is the
    // entry's dirty flag.
    using lru_hook = boost::intrusive::list_member_hook<>;
    using dirty_hook = boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>>;

public:
    struct entry {
        Key key{};
        std::size_t hash = 0;           // filled by the table
        std::uint32_t table_index = 0;  // filled by the table
        std::uint64_t moved_at = 0;     // ticks_ when it last went to the front of the LRU list
        lru_hook in_lru;
        dirty_hook in_dirty;
        std::size_t bytes = 0;
        Value cached;

        [[nodiscard]] bool is_dirty() const noexcept { return in_dirty.is_linked(); }
    };

    /// Bookkeeping per entry beyond what its key and value hold: the entry
    /// (list hooks included, its key object counted by memory_size), its
    /// share of the table's slots (8 bytes each, 2 to 4 per entry) and of the
    /// cache's doorkeeper (16 bits per entry it can hold).
    static constexpr std::size_t overhead = sizeof(entry) - sizeof(Key) + 4 * 8 + 2;

    /// The hash the table files k under (compute it once per operation).
    static std::size_t hash_of(const Key& k) { return table_type::hash_of(k); }

    /// @returns the entry of k (h = hash_of(k)), and whether it is new: a new
    ///          entry is first in LRU order; an old one moves there unless it
    ///          is in the newer half already (nearly LRU, without touching two
    ///          neighbours on every write of a hot key)
    std::pair<entry*, bool> upsert(const Key& k, std::size_t h) {
        auto [e, inserted] = table_.find_or_insert(k, h);
        if (inserted) {
            e->cached = {};  // a reused entry: forget what its last key held
            e->bytes = overhead + memory_size(e->key);
            bytes_ += e->bytes;
            to_front(*e, true);
        } else if (ticks_ - e->moved_at > table_.size() / 2) {  // bounds its distance from the front
            to_front(*e, false);
        }
        return {e, inserted};
    }

    /// Sets what e caches, counting its bytes.
    template <class V>
    void set_value(entry& e, V&& v) {
        const std::size_t before = e.cached.known ? memory_size(e.cached.value) : 0;
        e.cached.value = std::forward<V>(v);
        e.cached.known = true;
        const std::size_t after = memory_size(e.cached.value);
        bytes_ = bytes_ - before + after;
        e.bytes = e.bytes - before + after;
    }
    /// Drops a cached value (and its bytes) that may no longer be current.
    void forget_value(entry& e) {
        if constexpr (requires { e.cached.known; }) {
            if (!e.cached.known) return;
            const std::size_t held = memory_size(e.cached.value);
            e.cached = {};
            bytes_ -= held;
            e.bytes -= held;
        }
    }

    void mark_dirty(entry& e) {
        if (!e.is_dirty()) dirty_.push_front(e);
    }
    void clear_dirty(entry& e) { dirty_.erase(dirty_.iterator_to(e)); }
    /// The entry dirty the longest, or nullptr.
    [[nodiscard]] entry* oldest_dirty() noexcept { return dirty_.empty() ? nullptr : &dirty_.back(); }
    [[nodiscard]] std::size_t dirty_count() const noexcept { return dirty_.size(); }

    /// The least recently used entry if the entries exceed max_bytes, unless
    /// it is `keep`; else nullptr.
    [[nodiscard]] entry* victim(std::size_t max_bytes, const entry* keep) noexcept {
        if (bytes_ <= max_bytes || lru_.empty() || &lru_.back() == keep) return nullptr;
        return &lru_.back();
    }
    /// Removes a clean entry.
    void drop(entry& e) {
        lru_.erase(lru_.iterator_to(e));
        bytes_ -= e.bytes;
        e.cached = {};  // the table keeps the entry for reuse, not what its value owns
        table_.erase(e);
    }
    /// Removes every entry, dirty or not.
    void clear() {
        dirty_.clear();  // unlinks every entry before the table may free it
        if constexpr (!std::is_trivially_destructible_v<Value>)
            for (entry& e : lru_) e.cached = {};
        lru_.clear();
        table_.clear();
        bytes_ = 0;
    }

    /// Calls f(hash) for every entry.
    template <class F>
    void for_each_hash(F&& f) const {
        for (const entry& e : lru_) f(e.hash);
    }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] std::size_t size() const noexcept { return table_.size(); }

private:
    template <class Hook, Hook entry::*Member, bool Sized>
    using list_through = boost::intrusive::list<entry, boost::intrusive::member_hook<entry, Hook, Member>,
                                                boost::intrusive::constant_time_size<Sized>>;
    using lru_list = list_through<lru_hook, &entry::in_lru, false>;        // most recent first
    using dirty_list = list_through<dirty_hook, &entry::in_dirty, true>;  // sized: dirty_count()
    using table_type = entry_table<entry, Key, Hash>;

    void to_front(entry& e, bool is_new) {
        if (!is_new) lru_.erase(lru_.iterator_to(e));
        lru_.push_front(e);
        e.moved_at = ++ticks_;
    }

    table_type table_;
    // After table_, so destroyed before it: no entry is freed while linked.
    // Moving the table keeps its entries where they are, so moved lists stay valid.
    lru_list lru_;
    dirty_list dirty_;
    std::size_t bytes_ = 0;
    std::uint64_t ticks_ = 0;  // moves to the front of the LRU list so far
};

}  // namespace strata::detail
