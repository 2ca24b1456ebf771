#pragma once
/// @file
/// @brief `cached_store`: the layer that coalesces changelog records per key
/// between two flushes, and for kv stores serves reads from a bounded LRU
/// cache. `cached(...)` (cached.hpp) puts it on a stack.

#include <strata/core/concepts.hpp>
#include <strata/core/hash.hpp>
#include <strata/decorators/cached_options.hpp>
#include <strata/decorators/detail/admission.hpp>
#include <strata/decorators/detail/cache_entries.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/restore/restore.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

namespace strata {

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

/// What a cache entry knows of its key's state: for a kv store, its value;
/// nothing for other stores, whose cache entries only mark keys dirty.
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
/// records are serialized only when written. A put or erase may pass the
/// cache by while it does not coalesce (see detail::admission).
///
/// Not thread-safe: like every store, it is driven by one thread; even
/// `get()` updates the LRU order.
template <class Inner>
class cached_store : public detail::layer_base<cached_store<Inner>, Inner> {
    static constexpr bool logs = detail::logged_beneath<Inner>;
    static constexpr bool holds_values = detail::cached_value<Inner>::holds_value;

public:
    static constexpr layer_kind kind = layer_kind::cached;
    using cache_key_type = typename decltype(detail::cache_key_of<Inner>())::type;

    cached_store(Inner inner, cached_options opts)
        : inner_(std::move(inner)), opts_(opts),
          caches_reads_(opts.reads == read_caching::on ||
                        (opts.reads == read_caching::automatic && is_persistent(inner_))),
          admission_(opts.max_bytes / entries_type::overhead + 1) {}
    cached_store(cached_store&& o) noexcept
        : inner_(std::move(o.inner_)), opts_(o.opts_), caches_reads_(o.caches_reads_), stats_(o.stats_),
          admission_(std::move(o.admission_)), entries_(std::move(o.entries_)) {
        o.stats_ = {};
    }
    cached_store(const cached_store&) = delete;
    cached_store& operator=(const cached_store&) = delete;
    cached_store& operator=(cached_store&&) = delete;

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
                entry& e = upsert(k, entries_type::hash_of(k), false);
                entries_.forget_value(e);  // u changed k in ways only the store knows
                entries_.mark_dirty(e);
                evict_beyond_bound(&e);
            });
        } else {
            // No changelog below and no way to know the keys u touches: the
            // only safe cache is an empty one.
            return detail::invoke_then([&]() -> decltype(auto) { return inner_.apply(u); }, [&] { entries_.clear(); });
        }
    }

    template <class S = Inner>
        requires kv_store<S>
    [[nodiscard]] std::optional<typename S::mapped_type> get(const typename S::key_type& k) const {
        if constexpr (detail::has_kv_find<S>) return detail::optional_of(find(k));
        else if (!caches_reads_) return inner_.get(k);  // written through: the store beneath is current
        else return read_through(k, [&] { return inner_.get(k); });
    }
    template <class S = Inner>
        requires detail::has_kv_find<S>
    [[nodiscard]] const typename S::mapped_type* find(const typename S::key_type& k) const {
        if (!caches_reads_) return inner_.find(k);
        const auto& v = read_through(k, [&] { return detail::optional_of(inner_.find(k)); });
        return v ? &*v : nullptr;
    }
    template <class S = Inner>
        requires kv_store<S>
    void put(const typename S::key_type& k, const typename S::mapped_type& v) {
        announce(k);
        const std::size_t h = entries_type::hash_of(k);
        if constexpr (logs) {
            if (!admits(h)) return inner_.put(k, v);  // logged now, as without a cache
            inner_.put_unlogged(k, v);
        } else {
            inner_.put(k, v);
            if (!caches_reads_) return;  // nothing to remember
        }
        write_entry(upsert(k, h, true), v);
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase(const typename S::key_type& k) {
        announce(k);
        const std::size_t h = entries_type::hash_of(k);
        bool existed;
        if constexpr (logs) {
            if (!admits(h)) return inner_.erase(k);  // its tombstone logged now
            existed = inner_.erase_unlogged(k);
        } else {
            existed = inner_.erase(k);
            if (!caches_reads_) return existed;  // nothing to remember
        }
        write_entry(upsert(k, h, true), std::nullopt);
        return existed;
    }
    // range and all: the layer base's, from the inner store, which the cache
    // writes through and so keeps current.

    /// @brief Writes the record of every dirty unit, oldest first, then
    /// flushes the layers beneath. When reads are not cached, a written entry
    /// has no further use and is dropped: between two flushes the cache holds
    /// only the units changed since the last one.
    auto flush() {
        if constexpr (logs) {
            while (entry* e = entries_.oldest_dirty()) {
                write_record(*e);
                entries_.clear_dirty(*e);
                ++stats_.flushed_records;
            }
            // Entries that do not answer reads were all dirty, and are all
            // written now: drop them at once, without a lookup per key.
            if (!caches_reads_) entries_.clear();
        }
        if constexpr (detail::has_flush<Inner>) return inner_.flush();
    }

    /// @brief Drops the cache and restores the layers beneath.
    template <restore_listener Listener = null_restore_listener>
        requires requires(Inner& s, Listener&& l) { s.restore(std::forward<Listener>(l)); }
    auto restore(Listener&& listener = {}) {
        entries_.clear();
        return inner_.restore(std::forward<Listener>(listener));
    }

    [[nodiscard]] cache_stats stats() const noexcept {
        cache_stats s = stats_;
        s.entries = entries_.size();
        s.bytes = entries_.bytes();
        return s;
    }
    /// @brief stats().hits without copying the rest of the stats.
    [[nodiscard]] std::uint64_t hits() const noexcept { return stats_.hits; }
    [[nodiscard]] std::size_t dirty_count() const noexcept { return entries_.dirty_count(); }
    [[nodiscard]] const cached_options& options() const noexcept { return opts_; }
    /// @brief Whether get() is answered from the cache (see read_caching).
    [[nodiscard]] bool caches_reads() const noexcept { return caches_reads_; }

    [[nodiscard]] Inner& base() & noexcept { return inner_; }
    [[nodiscard]] const Inner& base() const& noexcept { return inner_; }
    [[nodiscard]] Inner&& base() && noexcept { return std::move(inner_); }

private:
    /// Tells the store at the bottom that k is written soon, if it takes such
    /// a hint (hash_map_store::prefetch): its memory then loads while the
    /// cache looks k up in its own table, instead of after.
    template <class K>
    void announce(const K& k) const noexcept {
        if constexpr (requires { innermost(inner_).prefetch(k); }) innermost(inner_).prefetch(k);
    }

    using entries_type =
        detail::cache_entries<cache_key_type, detail::cached_value<Inner>, default_hash_t<cache_key_type>>;
    using entry = typename entries_type::entry;

    /// The entry of k (h: its hash); `write`: for a put or erase, which counts
    /// for admission.
    entry& upsert(const cache_key_type& k, std::size_t h, bool write) const {
        auto [e, inserted] = entries_.upsert(k, h);
        if (inserted) {
            if constexpr (logs) admission_.inserted(h, cached_hashes());
        } else if (write) {
            admission_.hit();
        }
        return *e;
    }

    /// The cached value of k (nullopt: known absent), read from the store
    /// beneath with fetch() on a miss. One lookup: a miss is cached too.
    template <class Fetch>
    const auto& read_through(const cache_key_type& k, Fetch fetch) const {
        entry& e = upsert(k, entries_type::hash_of(k), false);
        if (e.cached.known) {
            ++stats_.hits;
        } else {
            ++stats_.misses;
            entries_.set_value(e, fetch());
            evict_beyond_bound(&e);
        }
        return e.cached.value;
    }

    /// A put (v: the value) or erase (v: nullopt) reached the store beneath:
    /// the entry holds v, and is dirty if a record is owed.
    template <class V>
    void write_entry(entry& e, V&& v) const {
        entries_.set_value(e, std::forward<V>(v));
        if constexpr (logs) entries_.mark_dirty(e);
        evict_beyond_bound(&e);
    }

    bool admits(std::size_t h) const {
        if (admission_.admits(h, stats_.evictions, cached_hashes())) return true;
        ++stats_.bypassed;
        return false;
    }
    /// Calls mark(hash) for every key the cache holds.
    auto cached_hashes() const {
        return [this](const auto& mark) { entries_.for_each_hash(mark); };
    }

    /// The record of a dirty entry: from the cached value when the cache
    /// holds the key's current one, else read from the store beneath.
    void write_record(const entry& e) const {
        if constexpr (holds_values && requires { inner_.log_state(e.key, e.cached.value); }) {
            if (e.cached.known) return inner_.log_state(e.key, e.cached.value);
        }
        inner_.log_key(e.key);
    }

    /// Evicts least recently used entries until the cache fits, never the
    /// entry just touched. An evicted dirty entry writes its record first:
    /// eviction may delay a record, never lose it.
    void evict_beyond_bound(const entry* keep) const {
        while (entry* victim = entries_.victim(opts_.max_bytes, keep)) {
            if (victim->is_dirty()) {
                if constexpr (logs) write_record(*victim);
                entries_.clear_dirty(*victim);
                ++stats_.dirty_evictions;
            }
            ++stats_.evictions;
            entries_.drop(*victim);
        }
    }

    // Mutable: reads fill the cache and move entries in the LRU order, and a
    // read that evicts a dirty entry writes its record through the layer beneath.
    mutable Inner inner_;
    cached_options opts_;
    bool caches_reads_;
    mutable cache_stats stats_;
    mutable detail::admission admission_;
    mutable entries_type entries_;
};

}  // namespace strata
