#pragma once
/// @file
/// @brief Rebuilding a store from its changelog, with progress reports.

#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>
#include <utility>

namespace strata {

/// @brief What a restore reports while it runs.
///
/// `records_total` is `to - from`, the span of offsets to read; a compacted
/// changelog has gaps, so the records actually restored may end below it.
struct restore_progress {
    std::string_view store;
    offset_t from = 0;               ///< first offset read
    offset_t to = 0;                 ///< end offset taken when the restore began
    offset_t position = 0;           ///< one past the last offset restored so far
    std::uint64_t records_done = 0;  ///< records applied so far
    std::uint64_t records_total = 0; ///< upper bound: to - from
};

namespace detail {
template <class L>
concept has_restore_start = requires(L& l, const restore_progress& p) { l.on_restore_start(p); };
template <class L>
concept has_batch_restored = requires(L& l, const restore_progress& p) { l.on_batch_restored(p); };
template <class L>
concept has_restore_end = requires(L& l, const restore_progress& p) { l.on_restore_end(p); };
/// A store that buffers writes (rocksdb_store) empties its buffer after each
/// batch of restored records, so that a restore's memory does not grow with
/// the changelog.
template <class S>
concept has_end_restore_batch = requires(S& s) { s.end_restore_batch(); };
/// A replay that hands over what it has read already as one span of
/// records, valid until the next call, empty at the end
/// (file_log's and kafka::changelog's): a restore can then look ahead.
template <class R>
concept has_next_batch = requires(R& r) {
    { r.next_batch() } -> std::convertible_to<std::span<const record_view>>;
};
/// A replay that knows the end offset it reads up to.
template <class R>
concept has_replay_end = requires(const R& r) {
    { r.end_offset() } -> std::convertible_to<offset_t>;
};
/// A codec that can tell the store which units the next records restore
/// (kv_codec over a store with prefetch()), so that the store's memory for
/// several of them is fetched at once instead of one cache miss after
/// another.
template <class C, class S>
concept has_restore_prefetch =
    requires(const C& c, const S& s, std::span<const record_view> rs) { c.prefetch(s, rs); };
/// Records a restore announces to the codec before applying them: enough
/// for the memory fetches to overlap, few enough that what they bring into
/// the cache is still there when the records are applied.
inline constexpr std::size_t restore_lookahead = 16;
}  // namespace detail

/// @brief Receives restore progress: `on_restore_start`, `on_batch_restored`
/// after every batch, `on_restore_end`; each takes a `const restore_progress&`.
template <class L>
concept restore_listener =
    detail::has_restore_start<L> && detail::has_batch_restored<L> && detail::has_restore_end<L>;

/// @brief A listener that ignores everything.
struct null_restore_listener {
    void on_restore_start(const restore_progress&) noexcept {}
    void on_batch_restored(const restore_progress&) noexcept {}
    void on_restore_end(const restore_progress&) noexcept {}
};

/// @brief Options of one restore.
struct restore_options {
    offset_t from = 0;                      ///< first offset to read
    std::uint64_t progress_every = 10'000;  ///< records between two progress reports
};

/// @brief Replays `log` from `opts.from` up to the end offset taken at the
/// start, and re-creates each record's unit of state in `store` through the
/// codec. Records appended while the restore runs are not read: the restore
/// ends at a fixed point so that it always terminates.
///
/// @returns the final progress (records restored, end position)
/// @throws restore_error when the codec rejects a record (its error nested);
/// a changelog's own errors (e.g. corruption_error) pass through unchanged.
/// Records before the failing one stay applied.
template <class Store, changelog Log, class Codec, restore_listener Listener = null_restore_listener>
    requires changelog_codec<Codec, Store>
restore_progress restore_from(Store& store, Log& log, const Codec& codec,
                              restore_options opts = {}, Listener&& listener = {}) {
    restore_progress p;
    p.store = store.name();
    p.from = opts.from;
    // A replay that took the end offset itself (kafka::changelog's asks the
    // broker) says where it ends: the same question is not asked twice.
    auto&& records = log.replay(p.from);
    if constexpr (detail::has_replay_end<decltype(records)>) p.to = records.end_offset();
    else p.to = log.end_offset();
    p.position = p.from;
    p.records_total = p.to > p.from ? p.to - p.from : 0;
    listener.on_restore_start(p);
    if (p.to > p.from) {
        std::uint64_t since_report = 0;
        // Applies one record; false once the records reach the end offset.
        auto apply = [&](const record_view& r) {
            if (r.offset >= p.to) return false;
            try {
                codec.restore(store, r);
            } catch (const std::exception& e) {
                std::throw_with_nested(restore_error(p.store, r.offset, e.what()));
            }
            ++p.records_done;
            p.position = r.offset + 1;
            if (++since_report == opts.progress_every) {
                if constexpr (detail::has_end_restore_batch<Store>) store.end_restore_batch();
                listener.on_batch_restored(p);
                since_report = 0;
            }
            return true;
        };
        if constexpr (detail::has_next_batch<decltype(records)>) {
            // Batches of what the changelog has read already: the codec can
            // look at the keys to come before the first is applied.
            for (bool more = true; more;) {
                const std::span<const record_view> batch = records.next_batch();
                if (batch.empty()) break;
                for (std::size_t i = 0; i < batch.size() && more;) {
                    const std::size_t n = std::min(batch.size() - i, detail::restore_lookahead);
                    const std::span<const record_view> ahead = batch.subspan(i, n);
                    if constexpr (detail::has_restore_prefetch<Codec, Store>)
                        codec.prefetch(std::as_const(store), ahead);
                    for (const record_view& r : ahead)
                        if (!(more = apply(r))) break;
                    i += n;
                }
            }
        } else {
            for (const record_view r : records)
                if (!apply(r)) break;
        }
        if (since_report != 0) {
            if constexpr (detail::has_end_restore_batch<Store>) store.end_restore_batch();
            listener.on_batch_restored(p);
        }
    }
    p.position = p.to > p.from ? p.to : p.from;
    listener.on_restore_end(p);
    return p;
}

}  // namespace strata
