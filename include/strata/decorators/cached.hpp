#pragma once
/// @file
/// @brief `cached`: coalesces changelog records per key between two flushes,
/// and for kv stores serves reads from a bounded LRU cache.

#include <strata/core/concepts.hpp>
#include <strata/core/hash.hpp>
#include <strata/core/memory_size.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/restore/restore.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>


namespace strata {

/// @brief Whether the cache answers reads (kv stores).
enum class read_caching {
    /// Only over a persistent store. Over an in-memory store a read of the
    /// store beneath costs no more than the cache's own lookup, and the store
    /// is always current (the cache writes through), so caching reads would
    /// only add work: an entry per key read, and evictions.
    automatic,
    on,   ///< always: reads fill the cache and count hits and misses
    off,  ///< never: reads go to the store beneath and count nothing
};

/// @brief Options of the cache layer.
struct cache_options {
    /// Bound on the bytes the cache holds (keys, cached values, bookkeeping).
    /// Kafka Streams' default statestore.cache.max.bytes is 10 MiB.
    std::size_t max_bytes = 10 * 1024 * 1024;
    /// Whether get() is answered from the cache.
    read_caching reads = read_caching::automatic;
};

/// @brief What the cache has done since it was built.
struct cache_stats {
    std::uint64_t hits = 0;             ///< reads answered from the cache
    std::uint64_t misses = 0;           ///< reads that went to the inner store
    std::uint64_t evictions = 0;        ///< entries dropped to stay within max_bytes
    std::uint64_t dirty_evictions = 0;  ///< of those, ones that first wrote their record
    std::uint64_t flushed_records = 0;  ///< records written by flush()
    std::size_t entries = 0;
    std::size_t bytes = 0;

    [[nodiscard]] double hit_ratio() const noexcept {
        const auto reads = hits + misses;
        return reads == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(reads);
    }
};

namespace detail {
template <class Inner>
constexpr bool logged_beneath = requires { typename Inner::log_key_type; };

template <class Inner>
auto cache_key_of() {
    if constexpr (logged_beneath<Inner>) return std::type_identity<typename Inner::log_key_type>{};
    else if constexpr (kv_store<Inner>) return std::type_identity<typename Inner::key_type>{};
    else return std::type_identity<void>{};
}

template <class S, class U>
concept is_kv_put = kv_store<S> && std::is_same_v<U, put_op<typename S::key_type, typename S::mapped_type>>;
template <class S, class U>
concept is_kv_erase = kv_store<S> && std::is_same_v<U, erase_op<typename S::key_type>>;

/// The cached value of a kv entry; nothing for other stores, whose cache
/// entries only mark keys dirty.
template <class Inner, bool KV = kv_store<Inner>>
struct cached_value {
    static constexpr bool holds_value = false;
};
template <class Inner>
struct cached_value<Inner, true> {
    static constexpr bool holds_value = true;
    bool known = false;                              ///< value below is the inner store's current one
    std::optional<typename Inner::mapped_type> value;  ///< nullopt: known to be absent
};
}  // namespace detail

/// @brief The store Inner behind a write-through cache that remembers which
/// units changed since the last flush.
///
/// Every update reaches the inner store at once (so queries and ranges see
/// it), but the changelog record of a unit is written once per flush, or
/// when the unit is evicted: N updates to a hot key between two commits cost
/// one record. The cache holds typed keys (and, for kv stores, typed values);
/// records are serialized only when written.
///
/// Not thread-safe: like every store, it is driven by one thread; even
/// `get()` updates the LRU order.
template <class Inner>
class cached_store : public detail::layer_base<cached_store<Inner>, Inner> {
    static constexpr bool is_kv = kv_store<Inner>;
    static constexpr bool logs = detail::logged_beneath<Inner>;

public:
    static constexpr layer_kind kind = layer_kind::cached;
    using cache_key_type = typename decltype(detail::cache_key_of<Inner>())::type;

    static_assert(logs || is_kv,
                  "strata::cached: over a store that is not key-value, the cache coalesces changelog "
                  "records and needs logged(...) beneath it: `store | logged(log) | cached(opts)`");

    cached_store(Inner inner, cache_options opts)
        : inner_(std::move(inner)), opts_(opts),
          caches_reads_(opts.reads == read_caching::on ||
                        (opts.reads == read_caching::automatic && is_persistent(inner_))) {}
    cached_store(cached_store&& o) noexcept
        : inner_(std::move(o.inner_)), opts_(o.opts_), caches_reads_(o.caches_reads_), stats_(o.stats_),
          entries_(std::move(o.entries_)), lru_(o.lru_), dirty_(o.dirty_) {
        // The lists point into the map's nodes, which moving the map keeps.
        o.lru_ = o.dirty_ = list_head{};
        o.stats_ = {};
    }
    cached_store(const cached_store&) = delete;
    cached_store& operator=(const cached_store&) = delete;
    cached_store& operator=(cached_store&&) = delete;

    // ---- updates
    template <class U>
    void apply(const U& u) {
        if constexpr (detail::is_kv_put<Inner, U>) {
            put(u.key, u.value);
        } else if constexpr (detail::is_kv_erase<Inner, U>) {
            erase(u.key);
        } else if constexpr (logs) {
            inner_.apply_unlogged(u, [this](const cache_key_type& k) {
                entry& e = upsert(k);
                forget_value(e);  // u changed k in ways only the store knows
                mark_dirty(e);
                evict_beyond_bound(&e);
            });
        } else {
            // No changelog below and no way to know the keys u touches: the
            // only safe cache is an empty one.
            inner_.apply(u);
            clear_cache();
        }
    }

    // ---- kv operations
    template <class S = Inner>
        requires kv_store<S>
    [[nodiscard]] std::optional<typename S::mapped_type> get(const typename S::key_type& k) const {
        if (!caches_reads_) return inner_.get(k);  // written through: the store beneath is current
        entry& e = upsert(k);  // one lookup: a miss is cached too
        if (e.cached.known) {
            ++stats_.hits;
            return e.cached.value;
        }
        ++stats_.misses;
        auto v = inner_.get(k);
        set_value(e, v);
        evict_beyond_bound(&e);
        return v;
    }
    template <class S = Inner>
        requires kv_store<S>
    void put(const typename S::key_type& k, const typename S::mapped_type& v) {
        if constexpr (logs) inner_.put_unlogged(k, v);
        else inner_.put(k, v);
        if (!keeps_entries()) return;
        entry& e = upsert(k);
        set_value(e, v);
        if constexpr (logs) mark_dirty(e);
        evict_beyond_bound(&e);
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase(const typename S::key_type& k) {
        bool existed;
        if constexpr (logs) existed = inner_.erase_unlogged(k);
        else existed = inner_.erase(k);
        if (!keeps_entries()) return existed;
        entry& e = upsert(k);
        set_value(e, std::nullopt);
        if constexpr (logs) mark_dirty(e);
        evict_beyond_bound(&e);
        return existed;
    }
    template <class S = Inner>
        requires ordered_kv_store<S>
    [[nodiscard]] auto range(const typename S::key_type& lo, const typename S::key_type& hi) const {
        return inner_.range(lo, hi);  // write-through: the inner store is current
    }
    template <class S = Inner>
        requires ordered_kv_store<S> || requires(const S& s) { s.all(); }
    [[nodiscard]] auto all() const {
        return inner_.all();
    }

    // ---- commit and restore
    /// @brief Writes the record of every dirty unit, oldest first, then
    /// flushes the layers beneath. When reads are not cached, a written entry
    /// has no further use and is dropped: between two flushes the cache holds
    /// only the units changed since the last one.
    auto flush() {
        if constexpr (logs) {
            while (entry* e = dirty_.back()) {
                write_record(*e);
                clear_dirty(*e);
                ++stats_.flushed_records;
            }
            // Entries that do not answer reads were all dirty, and are all
            // written now: drop them at once, without a lookup per key.
            if (!caches_reads_) clear_cache();
        }
        if constexpr (detail::has_flush<Inner>) return inner_.flush();
    }

    /// @brief Drops the cache and restores the layers beneath.
    template <restore_listener Listener = null_restore_listener>
        requires requires(Inner& s, Listener&& l) { s.restore(std::forward<Listener>(l)); }
    auto restore(Listener&& listener = {}) {
        clear_cache();
        return inner_.restore(std::forward<Listener>(listener));
    }


    [[nodiscard]] cache_stats stats() const noexcept {
        cache_stats s = stats_;
        s.entries = entries_.size();
        return s;
    }
    /// @brief stats().hits without copying the rest of the stats.
    [[nodiscard]] std::uint64_t hits() const noexcept { return stats_.hits; }
    [[nodiscard]] std::size_t dirty_count() const noexcept { return dirty_.size; }
    [[nodiscard]] const cache_options& options() const noexcept { return opts_; }
    /// @brief Whether get() is answered from the cache (see read_caching).
    [[nodiscard]] bool caches_reads() const noexcept { return caches_reads_; }

    [[nodiscard]] Inner& base() & noexcept { return inner_; }
    [[nodiscard]] const Inner& base() const& noexcept { return inner_; }
    [[nodiscard]] Inner&& base() && noexcept { return std::move(inner_); }

private:
    struct entry;
    /// An intrusive doubly linked list through the map's nodes: the LRU
    /// order and the dirty set cost no allocation of their own.
    struct list_head {
        entry* first = nullptr;
        entry* last = nullptr;
        std::size_t size = 0;
        entry* back() const noexcept { return last; }
    };
    struct links {
        entry* prev = nullptr;
        entry* next = nullptr;
    };
    struct entry {
        const cache_key_type* key = nullptr;
        links lru;
        links dirty;
        bool is_dirty = false;
        std::size_t bytes = 0;
        detail::cached_value<Inner> cached;
    };

    template <links entry::*L>
    struct list : list_head {
        void push_front(entry* e) noexcept {
            (e->*L).prev = nullptr;
            (e->*L).next = this->first;
            if (this->first) (this->first->*L).prev = e;
            this->first = e;
            if (!this->last) this->last = e;
            ++this->size;
        }
        void unlink(entry* e) noexcept {
            auto& l = e->*L;
            (l.prev ? (l.prev->*L).next : this->first) = l.next;
            (l.next ? (l.next->*L).prev : this->last) = l.prev;
            l = links{};
            --this->size;
        }
        void move_to_front(entry* e) noexcept {
            if (this->first == e) return;
            unlink(e);
            push_front(e);
        }
        list& operator=(const list_head& h) noexcept {
            static_cast<list_head&>(*this) = h;
            return *this;
        }
        list() = default;
        list(const list&) = default;
    };

    // Bookkeeping per entry beyond key and value: the hash node and links.
    static constexpr std::size_t entry_overhead = sizeof(entry) + 3 * sizeof(void*);

    entry& upsert(const cache_key_type& k) const {
        auto [it, inserted] = entries_.try_emplace(k);
        entry& e = it->second;
        if (inserted) {
            e.key = &it->first;
            e.bytes = entry_overhead + memory_size(k);
            stats_.bytes += e.bytes;
            lru_.push_front(&e);
        } else {
            lru_.move_to_front(&e);
        }
        return e;
    }

    template <class V>
    void set_value(entry& e, V&& v) const {
        if constexpr (detail::cached_value<Inner>::holds_value) {
            const std::size_t before = e.cached.known ? memory_size(e.cached.value) : 0;
            e.cached.value = std::forward<V>(v);
            e.cached.known = true;
            const std::size_t after = memory_size(e.cached.value);
            stats_.bytes = stats_.bytes - before + after;
            e.bytes = e.bytes - before + after;
        }
    }

    /// The record of a dirty entry: from the cached value when the cache
    /// holds the key's current one, else read from the store beneath.
    void write_record(const entry& e) const {
        if constexpr (detail::cached_value<Inner>::holds_value &&
                      requires { inner_.log_state(*e.key, e.cached.value); }) {
            if (e.cached.known) return inner_.log_state(*e.key, e.cached.value);
        }
        inner_.log_key(*e.key);
    }

    /// Drops a cached value (and its bytes) that may no longer be current.
    void forget_value(entry& e) const {
        if constexpr (detail::cached_value<Inner>::holds_value) {
            if (!e.cached.known) return;
            const std::size_t held = memory_size(e.cached.value);
            e.cached.value.reset();
            e.cached.known = false;
            stats_.bytes -= held;
            e.bytes -= held;
        }
    }

    void mark_dirty(entry& e) const {
        if (!e.is_dirty) {
            e.is_dirty = true;
            dirty_.push_front(&e);
        }
    }
    void clear_dirty(entry& e) const {
        e.is_dirty = false;
        dirty_.unlink(&e);
    }

    /// Evicts least recently used entries until the cache fits, never the
    /// entry just touched. An evicted dirty entry writes its record first:
    /// eviction may delay a record, never lose it.
    void evict_beyond_bound(const entry* keep) const {
        while (stats_.bytes > opts_.max_bytes && lru_.last && lru_.last != keep) {
            entry* victim = lru_.last;
            if (victim->is_dirty) {
                if constexpr (logs) write_record(*victim);
                clear_dirty(*victim);
                ++stats_.dirty_evictions;
            }
            ++stats_.evictions;
            drop(*victim);
        }
    }

    void drop(entry& e) const {
        lru_.unlink(&e);
        stats_.bytes -= e.bytes;
        entries_.erase(*e.key);
    }

    /// Whether an entry is of any use once written: it is when reads are
    /// answered from it; a dirty entry is kept until its record is written.
    /// Without a changelog beneath and without read caching there is nothing
    /// to remember at all.
    [[nodiscard]] bool keeps_entries() const noexcept { return logs || caches_reads_; }

    void clear_cache() {
        entries_.clear();
        lru_ = list_head{};
        dirty_ = list_head{};
        stats_.bytes = 0;
    }

    // Mutable: reads fill the cache and move entries in the LRU order, and a
    // read that evicts a dirty entry writes its record through the layer beneath.
    mutable Inner inner_;
    cache_options opts_;
    bool caches_reads_;
    mutable cache_stats stats_;
    mutable std::unordered_map<cache_key_type, entry, default_hash_t<cache_key_type>> entries_;
    mutable list<&entry::lru> lru_;
    mutable list<&entry::dirty> dirty_;
};

/// @brief The closure that `cached(options)` returns.
class cached_closure : public layer_closure<cached_closure> {
public:
    static constexpr layer_kind kind = layer_kind::cached;
    explicit cached_closure(cache_options opts) : opts_(opts) {}

    template <class S>
    auto wrap(S&& s) const {
        using store = std::remove_cvref_t<S>;
        return cached_store<store>(store(std::forward<S>(s)), opts_);
    }

private:
    cache_options opts_;
};

/// @brief `store | cached(options)`.
inline cached_closure cached(cache_options opts = {}) { return cached_closure(opts); }

/// @brief `cached(store, options)`: the direct form of `store | cached(options)`.
template <class S>
    requires state_store<std::remove_cvref_t<S>>
auto cached(S&& store, cache_options opts = {}) {
    return std::forward<S>(store) | cached(opts);
}

}  // namespace strata
