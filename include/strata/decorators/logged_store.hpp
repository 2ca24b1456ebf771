#pragma once
/// @file
/// @brief `logged_store`: the layer that writes the current state of every
/// unit an update touches to a changelog, so the store can be rebuilt after
/// a crash. `logged(...)` (logged.hpp) puts it on a stack.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/decorators/detail/logged_checks.hpp>
#include <strata/decorators/detail/record_text.hpp>
#include <strata/decorators/detail/restore_start.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/decorators/logged_options.hpp>
#include <strata/restore/checkpoint.hpp>
#include <strata/restore/restore.hpp>

#include <array>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace strata {

template <class Inner>
class cached_store;


/// @brief The store Inner, whose updates are written to the changelog Log
/// through Codec.
///
/// After `apply(u)`, one record per unit that u touched carries that unit's
/// current state (or a tombstone), so replaying the changelog, or only its
/// latest record per key, rebuilds the state.
template <class Inner, class LogHolder, class Codec>
class logged_store : public detail::layer_base<logged_store<Inner, LogHolder, Codec>, Inner> {
    /// Whether the codec writes a kv value it is given (`write_mapped`).
    template <class V>
    static constexpr bool writes_mapped = requires(const Codec& c, const V& v, byte_buffer& out) {
        c.write_mapped(v, out);
    };

public:
    static constexpr layer_kind kind = layer_kind::logged;
    using codec_type = Codec;
    /// The key of one unit of state, as the codec sees it.
    using log_key_type = typename Codec::key_type;

    logged_store(Inner inner, LogHolder log, Codec codec, logged_options opts)
        : inner_(std::move(inner)), log_(std::move(log)), codec_(std::move(codec)), opts_(std::move(opts)) {}

    /// @brief Applies u to the inner store and logs every unit it touched.
    /// The touched keys are taken before u is applied, so a delete logs the
    /// rows it removes; an observing codec reports them as u is applied.
    /// @returns what the inner store's apply(u) returns (through an
    ///          observing codec: the `result` its apply_observed reports)
    template <class U>
    decltype(auto) apply(const U& u) {
        return apply_unlogged(u, [this](const log_key_type& k) { log_key(k); });
    }

    // ---- kv writes, when the inner store has them (reads: the layer base's)
    template <class S = Inner>
        requires kv_store<S>
    void put(const typename S::key_type& k, const typename S::mapped_type& v) {
        refuse_if_failed("update");
        inner_.put(k, v);
        // v is k's value now (kv law): write it rather than read it back.
        if constexpr (writes_mapped<typename S::mapped_type>) append_state(k, &v);
        else log_key(k);
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase(const typename S::key_type& k) {
        refuse_if_failed("update");
        const bool existed = inner_.erase(k);
        // k is gone now (kv law): its record is a tombstone, even when k was
        // absent, as Kafka Streams writes it: cheap and always safe.
        append_state<typename S::mapped_type>(k, nullptr);
        return existed;
    }
    /// @brief Makes every record written so far durable, flushes the inner
    /// store, then checkpoints the durable offset. The checkpoint comes last:
    /// it may only name an offset the store and changelog both hold. A
    /// self_checkpointing_store is committed with the offset instead, in one
    /// step; with `checkpoint_on_flush` off it is not touched until
    /// save_checkpoint().
    /// @returns the durable end offset of the changelog
    offset_t flush() {
        refuse_if_failed("flush");
        const offset_t durable = log().flush();
        if constexpr (!self_checkpointing_store<Inner> && detail::has_flush<Inner>) inner_.flush();
        if (opts_.checkpoint_on_flush) save_checkpoint(durable);
        return durable;
    }

    /// @brief Records that the store and its changelog hold everything below
    /// `durable`: commits a self_checkpointing_store with it, and saves it to
    /// the checkpoint file if one is configured and the store is persistent.
    /// (A self_checkpointing_store restores from its own offset; the file
    /// then only says that the local data can be trusted.)
    void save_checkpoint(offset_t durable) {
        refuse_if_failed("checkpoint");
        if constexpr (self_checkpointing_store<Inner>) inner_.commit(durable);
        if (opts_.checkpoint && is_persistent(inner_))
            checkpoint_file(*opts_.checkpoint).save(this->name(), opts_.partition, durable);
    }

    /// @brief Whether a record could not be written after its update reached
    /// the inner store: the store is then ahead of its changelog, and
    /// flush() and save_checkpoint() refuse until the stack is rebuilt (a
    /// new stack over a fresh store, restored from the changelog).
    [[nodiscard]] bool failed() const noexcept { return !failure_.empty(); }
    /// @brief What made the stack fail ("" if it has not).
    [[nodiscard]] const std::string& failure() const noexcept { return failure_; }

    /// @brief Rebuilds the inner store from the changelog: from the offset a
    /// self_checkpointing_store committed, or from the checkpoint when the
    /// store is persistent and one exists, else from offset 0, into a store
    /// that must then be empty.
    /// @throws restore_error the store holds data and nothing names the
    ///         offset it holds (see holds_state()); a checkpoint names an
    ///         offset past the changelog's end; a record does not restore
    template <restore_listener Listener = null_restore_listener>
    restore_progress restore(Listener&& listener = {}) {
        const offset_t from = detail::restore_start(std::as_const(inner_), log(), this->name(), opts_);
        return restore_from(inner_, log(), codec_, restore_options{from, opts_.restore_progress_every},
                            std::forward<Listener>(listener));
    }

    /// @brief Records appended since this layer was built.
    [[nodiscard]] std::uint64_t records_written() const noexcept { return records_written_; }
    [[nodiscard]] auto& changelog() noexcept { return log(); }
    [[nodiscard]] const Codec& codec() const noexcept { return codec_; }
    [[nodiscard]] const logged_options& options() const noexcept { return opts_; }

    [[nodiscard]] Inner& base() & noexcept { return inner_; }
    [[nodiscard]] const Inner& base() const& noexcept { return inner_; }
    [[nodiscard]] Inner&& base() && noexcept { return std::move(inner_); }

private:
    // The cache above writes through these: it applies updates unlogged and
    // writes each dirty key's record once, at flush or eviction. Nothing
    // else may: a write that skips the changelog is lost in a restore.
    template <class>
    friend class cached_store;

    /// Applies u without writing records, handing each touched key to
    /// `on_touched`. The cache uses it to write each key once per flush.
    template <class U, class OnTouched>
    decltype(auto) apply_unlogged(const U& u, OnTouched&& on_touched) {
        if constexpr (!detail::logged_accepts<Inner, Codec, U>()) {
            // logged_accepts() said why, once per store, codec and update type
        } else if constexpr (changelog_codec_for<Codec, Inner, U>) {
            refuse_if_failed("update");
            // Keys first: an update may remove what it touches.
            auto&& keys = codec_.touched(std::as_const(inner_), u);
            return detail::invoke_then([&]() -> decltype(auto) { return inner_.apply(u); },
                                       [&] {
                                           for (const log_key_type& k : keys) on_touched(k);
                                       });
        } else {
            refuse_if_failed("update");
            auto&& observed = codec_.apply_observed(inner_, u);
            if constexpr (requires { observed.touched; observed.result; }) {
                for (const log_key_type& k : observed.touched) on_touched(k);
                return std::remove_cvref_t<decltype(observed.result)>(std::move(observed.result));
            } else {
                for (const log_key_type& k : observed) on_touched(k);
            }
        }
    }

    /// Appends the record of unit k in its current state: its value,
    /// or a tombstone when k no longer exists.
    void log_key(const log_key_type& k) {
        append_record(
            k, [&](byte_buffer& out) { return codec_.write_value(std::as_const(inner_), k, out); },
            [&] {
                if constexpr (detail::has_record_timestamp<Codec, Inner>)
                    return static_cast<std::int64_t>(codec_.record_timestamp(std::as_const(inner_), k));
                else
                    return no_timestamp;
            });
    }

    /// Appends the record of kv key k whose current value the caller
    /// already holds (nullopt: absent), without reading it from the store.
    /// Only for codecs that can write a value they are given (`write_mapped`).
    template <class V>
        requires writes_mapped<V>
    void log_state(const log_key_type& k, const std::optional<V>& current) {
        append_state(k, current ? &*current : nullptr);
    }

    template <class S = Inner>
        requires kv_store<S>
    void put_unlogged(const typename S::key_type& k, const typename S::mapped_type& v) {
        inner_.put(k, v);
    }
    template <class S = Inner>
        requires kv_store<S>
    bool erase_unlogged(const typename S::key_type& k) {
        return inner_.erase(k);
    }


    auto& log() noexcept { return log_.get(); }


    /// Appends one record: k's key, and the value write_value appends (or a
    /// tombstone when it returns false), at the time timestamp_of() gives.
    /// The update is in the inner store already: if the codec or the log
    /// throws, the stack fails (see fail()).
    template <class WriteValue, class TimestampOf>
    void append_record(const log_key_type& k, WriteValue&& write_value, TimestampOf&& timestamp_of) {
        refuse_if_failed("update");
        key_buf_.clear();
        value_buf_.clear();
        bool live = false;
        std::int64_t timestamp = no_timestamp;
        try {
            codec_.write_key(k, key_buf_);
            live = write_value(value_buf_);
            timestamp = timestamp_of();
        } catch (const std::exception& e) {
            fail(key_buf_, key_buf_.size() + value_buf_.size(), e);
        }
        record_view r{key_buf_, std::nullopt};
        if (live) r.value = bytes_view(value_buf_);
        r.timestamp = timestamp;
        append_view(r);
    }

    /// Hands a built record to the log; if the log refuses it, the stack fails.
    void append_view(const record_view& r) {
        try {
            log().append(r);
        } catch (const std::exception& e) {
            fail(r.key, r.key.size() + (r.value ? r.value->size() : 0), e);
        }
        ++records_written_;
    }

    /// Appends the record of kv key k whose current value the caller holds
    /// (nullptr: absent, a tombstone). Each part is built as the codec's
    /// `key_is_raw` / `key_is_fixed` traits allow (see kv_codec): a view of
    /// a string's own bytes, a few stores into an array on the stack, or,
    /// only for other types, an encoding into the layer's buffer; growing
    /// byte buffers would cost more than the map write itself.
    template <class V>
    void append_state(const log_key_type& k, const V* current) {
        if constexpr (requires { requires Codec::key_is_raw || Codec::key_is_fixed; } &&
                      requires { requires Codec::mapped_is_raw || Codec::mapped_is_fixed; }) {
            refuse_if_failed("update");
            std::array<std::byte, Codec::key_width> key_fixed;
            std::array<std::byte, Codec::value_width> value_fixed;
            record_view r;
            if constexpr (Codec::key_is_raw) {
                r.key = Codec::key_bytes(k);
            } else {
                Codec::write_key_fixed(k, key_fixed.data());
                r.key = key_fixed;
            }
            if (current) {
                if constexpr (Codec::mapped_is_raw) {
                    r.value = Codec::mapped_bytes(*current);
                } else {
                    Codec::write_mapped_fixed(*current, value_fixed.data());
                    r.value = bytes_view(value_fixed);
                }
            }
            append_view(r);
        } else {
            append_record(
                k,
                [&](byte_buffer& out) {
                    if (current) codec_.write_mapped(*current, out);
                    return current != nullptr;
                },
                [&] {
                    if constexpr (detail::has_mapped_timestamp<Codec, V>)
                        return current != nullptr ? static_cast<std::int64_t>(codec_.mapped_timestamp(*current))
                                                  : no_timestamp;
                    else
                        return no_timestamp;
                });
        }
    }

    /// The record of `key` could not be written (the codec threw, the log
    /// refused it: too large, disk full, a broken producer) after its update
    /// reached the inner store: the store is now ahead of its changelog, and
    /// a later flush would report durable a state the changelog cannot
    /// rebuild. So the stack fails (see failed()); the error names the store, the key
    /// and the record's size, with the cause nested. Called in the catch
    /// block of `cause`.
    [[noreturn]] void fail(bytes_view key, std::size_t record_bytes, const std::exception& cause) {
        failure_ = "strata::logged: store '" + std::string(this->name()) + "' could not log the record of key " +
                   detail::abbreviated(key) + " (" + std::to_string(record_bytes) + " bytes): " + cause.what();
        std::throw_with_nested(changelog_error(failure_ +
                                               ". The update is in the store but not in its changelog: the "
                                               "store refuses to flush until it is rebuilt from the changelog"));
    }

    // Inline check, out-of-line throw: it runs on every write.
    void refuse_if_failed(const char* what) const {
        if (!failure_.empty()) [[unlikely]]
            refuse(what);
    }
    [[noreturn, gnu::cold, gnu::noinline]] void refuse(const char* what) const {
        throw changelog_error("strata::logged: store '" + std::string(this->name()) + "' refuses to " + what +
                              ": it failed earlier and must be rebuilt from its changelog. " + failure_);
    }

    Inner inner_;
    LogHolder log_;
    Codec codec_;
    logged_options opts_;
    byte_buffer key_buf_;
    byte_buffer value_buf_;
    std::uint64_t records_written_ = 0;
    std::string failure_;  // why the stack failed; empty while it has not
};

}  // namespace strata
