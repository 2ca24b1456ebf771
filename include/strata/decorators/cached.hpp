#pragma once
/// @file
/// @brief `cached`: coalesces changelog records per key between two flushes,
/// and for kv stores serves reads from a bounded LRU cache.

#include <strata/core/concepts.hpp>
#include <strata/core/hash.hpp>
#include <strata/core/memory_size.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/detail/doorkeeper.hpp>
#include <strata/decorators/detail/entry_table.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/restore/restore.hpp>

#include <boost/intrusive/list.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
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
    /// Puts and erases that passed the cache by, writing their record at
    /// once: first writes of a key while the cache was not coalescing (see
    /// cached_store).
    std::uint64_t bypassed = 0;
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
/// A kv put or erase whose apply returns nothing: the cache's own put or erase.
template <class S, class U>
concept plain_kv_update = (is_kv_put<S, U> || is_kv_erase<S, U>) &&
                          std::is_void_v<decltype(std::declval<S&>().apply(std::declval<const U&>()))>;

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

    cached_store(Inner inner, cache_options opts)
        : inner_(std::move(inner)), opts_(opts),
          caches_reads_(opts.reads == read_caching::on ||
                        (opts.reads == read_caching::automatic && is_persistent(inner_))),
          seen_(opts.max_bytes / entry_overhead + 1) {}
    cached_store(cached_store&& o) noexcept
        : inner_(std::move(o.inner_)), opts_(o.opts_), caches_reads_(o.caches_reads_), stats_(o.stats_),
          seen_(std::move(o.seen_)), admission_(o.admission_), ticks_(o.ticks_), entries_(std::move(o.entries_)),
          lru_(std::move(o.lru_)), dirty_(std::move(o.dirty_)) {
        // The lists point into the table's entries, which moving the table keeps.
        o.stats_ = {};
    }
    cached_store(const cached_store&) = delete;
    cached_store& operator=(const cached_store&) = delete;
    cached_store& operator=(cached_store&&) = delete;

    // ---- updates
    /// @returns what the store's apply(u) returns
    template <class U>
    decltype(auto) apply(const U& u) {
        if constexpr (!store_for<Inner, const U&>) {
            static_assert(store_for<Inner, const U&>, "strata::cached: the store has no apply() for this update type");
        } else if constexpr (detail::plain_kv_update<Inner, U>) {
            if constexpr (detail::is_kv_put<Inner, U>) put(u.key, u.value);
            else erase(u.key);
        } else if constexpr (logs) {
            return inner_.apply_unlogged(u, [this](const cache_key_type& k) {
                entry& e = upsert(k);
                forget_value(e);  // u changed k in ways only the store knows
                mark_dirty(e);
                evict_beyond_bound(&e);
            });
        } else {
            // No changelog below and no way to know the keys u touches: the
            // only safe cache is an empty one.
            return detail::invoke_then([&]() -> decltype(auto) { return inner_.apply(u); }, [&] { clear_cache(); });
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
        if constexpr (logs) {
            const std::size_t h = table_type::hash_of(k);
            if (!admits(h)) return inner_.put(k, v);  // logged now, as without a cache
            inner_.put_unlogged(k, v);
            entry& e = upsert(k, h, true);
            set_value(e, v);
            mark_dirty(e);
            evict_beyond_bound(&e);
        } else {
            inner_.put(k, v);
            if (!keeps_entries()) return;
            entry& e = upsert(k);
            set_value(e, v);
            evict_beyond_bound(&e);
        }
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase(const typename S::key_type& k) {
        if constexpr (logs) {
            const std::size_t h = table_type::hash_of(k);
            if (!admits(h)) return inner_.erase(k);  // its tombstone logged now
            const bool existed = inner_.erase_unlogged(k);
            entry& e = upsert(k, h, true);
            set_value(e, std::nullopt);
            mark_dirty(e);
            evict_beyond_bound(&e);
            return existed;
        } else {
            const bool existed = inner_.erase(k);
            if (!keeps_entries()) return existed;
            entry& e = upsert(k);
            set_value(e, std::nullopt);
            evict_beyond_bound(&e);
            return existed;
        }
    }
    // range and all: the layer base's, from the inner store, which the cache
    // writes through and so keeps current.

    // ---- commit and restore
    /// @brief Writes the record of every dirty unit, oldest first, then
    /// flushes the layers beneath. When reads are not cached, a written entry
    /// has no further use and is dropped: between two flushes the cache holds
    /// only the units changed since the last one.
    auto flush() {
        if constexpr (logs) {
            while (!dirty_.empty()) {
                entry& e = dirty_.back();
                write_record(e);
                clear_dirty(e);
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
    [[nodiscard]] std::size_t dirty_count() const noexcept { return dirty_.size(); }
    [[nodiscard]] const cache_options& options() const noexcept { return opts_; }
    /// @brief Whether get() is answered from the cache (see read_caching).
    [[nodiscard]] bool caches_reads() const noexcept { return caches_reads_; }

    [[nodiscard]] Inner& base() & noexcept { return inner_; }
    [[nodiscard]] const Inner& base() const& noexcept { return inner_; }
    [[nodiscard]] Inner&& base() && noexcept { return std::move(inner_); }

private:
    // The LRU order and the dirty set are intrusive lists through the table's
    // entries: no allocation of their own, O(1) to touch, unlink or pop.
    // The LRU hook is linked exactly while the entry is in the map, so it
    // needs no checks; the dirty hook is a safe one, whose is_linked() is
    // the entry's dirty flag.
    using lru_hook_type = boost::intrusive::list_member_hook<>;
    using dirty_hook_type =
        boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>>;
    struct entry {
        cache_key_type key{};
        std::size_t hash = 0;              // filled by the table
        std::uint32_t table_index = 0;     // filled by the table
        std::uint64_t moved_at = 0;        // ticks_ when it last went to the front of the LRU list
        lru_hook_type lru_hook;
        dirty_hook_type dirty_hook;
        std::size_t bytes = 0;
        detail::cached_value<Inner> cached;

        [[nodiscard]] bool is_dirty() const noexcept { return dirty_hook.is_linked(); }
    };
    template <class Hook, Hook entry::*Member, bool Sized>
    using list_through = boost::intrusive::list<entry, boost::intrusive::member_hook<entry, Hook, Member>,
                                                boost::intrusive::constant_time_size<Sized>>;
    using lru_list = list_through<lru_hook_type, &entry::lru_hook, false>;      // most recent first
    using dirty_list = list_through<dirty_hook_type, &entry::dirty_hook, true>;  // sized: dirty_count()

    using table_type = detail::entry_table<entry, cache_key_type, default_hash_t<cache_key_type>>;

    // Bookkeeping per entry beyond what its key and value hold: the entry
    // (list hooks included, its key object counted by memory_size) and its
    // share of the table's slots (8 bytes each, 2 to 4 per entry) and of the
    // doorkeeper's bits (16 per entry it can hold).
    static constexpr std::size_t entry_overhead = sizeof(entry) - sizeof(cache_key_type) + 4 * 8 + 2;

    entry& upsert(const cache_key_type& k) const { return upsert(k, table_type::hash_of(k)); }
    /// The entry of k, made if new, moved towards the front if old; `write`:
    /// a put or erase, which counts for admission.
    entry& upsert(const cache_key_type& k, std::size_t h, bool write = false) const {
        auto [e, inserted] = entries_.find_or_insert(k, h);
        if (inserted) {
            e->cached = {};  // a reused entry: forget what its last key held
            e->bytes = entry_overhead + memory_size(e->key);
            stats_.bytes += e->bytes;
            to_front(*e, true);
            if (logs && admission_.selective) keep_seen(h);
        } else {
            admission_.hits += write ? 1 : 0;
            // An entry no further back than half the list stays where it is:
            // nearly LRU, without touching two neighbours on every write of a
            // hot key. (ticks_ - moved_at bounds its distance from the front.)
            if (ticks_ - e->moved_at > entries_.size() / 2) to_front(*e, false);
        }
        return *e;
    }
    void to_front(entry& e, bool is_new) const {
        if (!is_new) lru_.erase(lru_.iterator_to(e));
        lru_.push_front(e);
        e.moved_at = ++ticks_;
    }

    /// Whether a put or erase of the key with hash h goes through the cache.
    /// Every key does while the cache pays: in the last window of writes at
    /// least one in 8 found its key cached, and none evicted an entry.
    /// Otherwise the cache is selective: a key goes through if the cache
    /// holds it or on its second write since the doorkeeper's last reset,
    /// and a first write logs its record at once, as without a cache. Keys
    /// that rarely repeat would only add the cache's cost, and in a full
    /// cache each would evict an entry that may be written again.
    bool admits(std::size_t h) const {
        if (++admission_.writes == admission_window) end_admission_window();
        if (!admission_.selective || seen_.test_and_mark(h)) return true;
        if (seen_.saturated()) {
            reset_seen();
            seen_.mark(h);
        }
        ++stats_.bypassed;
        return false;
    }
    void end_admission_window() const {
        const bool selective =
            admission_.hits * 8 < admission_.writes || stats_.evictions != admission_.evictions_before;
        // A selective cache asks the doorkeeper, which must know every key
        // the cache holds; it is not kept current while every key goes through.
        if (selective && !admission_.selective) reset_seen();
        admission_ = {selective, 0, 0, stats_.evictions};
    }
    void keep_seen(std::size_t h) const {
        seen_.mark(h);
        if (seen_.saturated()) reset_seen();
    }
    void reset_seen() const {
        seen_.reset();
        for (const entry& e : lru_) seen_.mark(e.hash);
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
                      requires { inner_.log_state(e.key, e.cached.value); }) {
            if (e.cached.known) return inner_.log_state(e.key, e.cached.value);
        }
        inner_.log_key(e.key);
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
        if (!e.is_dirty()) dirty_.push_front(e);
    }
    void clear_dirty(entry& e) const { dirty_.erase(dirty_.iterator_to(e)); }

    /// Evicts least recently used entries until the cache fits, never the
    /// entry just touched. An evicted dirty entry writes its record first:
    /// eviction may delay a record, never lose it.
    void evict_beyond_bound(const entry* keep) const {
        while (stats_.bytes > opts_.max_bytes && !lru_.empty() && &lru_.back() != keep) {
            entry& victim = lru_.back();
            if (victim.is_dirty()) {
                if constexpr (logs) write_record(victim);
                clear_dirty(victim);
                ++stats_.dirty_evictions;
            }
            ++stats_.evictions;
            drop(victim);
        }
    }

    void drop(entry& e) const {
        lru_.erase(lru_.iterator_to(e));
        stats_.bytes -= e.bytes;
        e.cached = {};  // the pool keeps the entry, not what its value owns
        entries_.erase(e);
    }

    /// Whether an entry is of any use once written: it is when reads are
    /// answered from it; a dirty entry is kept until its record is written.
    /// Without a changelog beneath and without read caching there is nothing
    /// to remember at all.
    [[nodiscard]] bool keeps_entries() const noexcept { return logs || caches_reads_; }

    void clear_cache() {
        dirty_.clear();  // unlinks every entry before the table may free it
        if constexpr (!std::is_trivially_destructible_v<detail::cached_value<Inner>>)
            for (entry& e : lru_) e.cached = {};  // the pool keeps the entries, not what their values own
        lru_.clear();
        entries_.clear();
        stats_.bytes = 0;
    }

    // Mutable: reads fill the cache and move entries in the LRU order, and a
    // read that evicts a dirty entry writes its record through the layer beneath.
    mutable Inner inner_;
    cache_options opts_;
    bool caches_reads_;
    mutable cache_stats stats_;
    // Admission (see admits()): the keys written lately, and in the current
    // window of writes, how many found their key cached.
    static constexpr std::uint32_t admission_window = 4096;
    struct admission_state {
        bool selective = false;
        std::uint32_t writes = 0;
        std::uint32_t hits = 0;
        std::uint64_t evictions_before = 0;  // stats_.evictions when the window began
    };
    mutable detail::doorkeeper seen_;
    mutable admission_state admission_;
    mutable std::uint64_t ticks_ = 0;  // moves to the front of the LRU list so far
    mutable table_type entries_;
    // After entries_, so destroyed before it: no entry is freed while linked.
    mutable lru_list lru_;
    mutable dirty_list dirty_;
};

/// @brief The closure that `cached(options)` returns.
class cached_closure : public layer_closure<cached_closure> {
public:
    static constexpr layer_kind kind = layer_kind::cached;
    explicit cached_closure(cache_options opts) : opts_(opts) {}

    template <class S>
    auto wrap(S&& s) const {
        using store = std::remove_cvref_t<S>;
        constexpr bool fits = kv_store<store> || detail::logged_beneath<store>;
        static_assert(fits,
                      "strata::cached: over a store that is not key-value, the cache coalesces changelog "
                      "records and needs logged(...) beneath it: `store | logged(log) | cached(opts)`");
        if constexpr (fits) return cached_store<store>(store(std::forward<S>(s)), opts_);
        else return detail::rejected_stack{};
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
