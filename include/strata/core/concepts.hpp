#pragma once
/// @file
/// @brief The concepts strata is built on. Each is assembled from named
/// `detail::` pieces so that when a type falls short, the compiler names the
/// requirement it missed (e.g. `has_name`, `has_kv_get`) rather than a wall of
/// substitution failures.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>

#include <concepts>
#include <optional>
#include <ranges>
#include <string_view>
#include <type_traits>

namespace strata {

// ---------------------------------------------------------------- stores --

namespace detail {
template <class S>
concept has_name = requires(const S& s) {
    { s.name() } -> std::convertible_to<std::string_view>;
};
template <class S>
concept has_flush = requires(S& s) { s.flush(); };
template <class S>
concept has_close = requires(S& s) { s.close(); };
template <class S>
concept has_persistent = requires(const S& s) {
    { s.persistent() } -> std::convertible_to<bool>;
};
template <class S, class U>
concept has_apply = requires(S& s, U&& u) { s.apply(static_cast<U&&>(u)); };

template <class S>
concept has_kv_types = requires {
    typename S::key_type;
    typename S::mapped_type;
};
template <class S>
concept has_kv_get = requires(const S& s, const typename S::key_type& k) {
    { s.get(k) } -> std::same_as<std::optional<typename S::mapped_type>>;
};
/// The optional fast path of a kv store: `find(k)` points at the stored
/// value (null when absent), valid until the store next changes. Decorators
/// forward it, so a stack builds get()'s optional once, at its top.
template <class S>
concept has_kv_find = requires(const S& s, const typename S::key_type& k) {
    { s.find(k) } -> std::same_as<const typename S::mapped_type*>;
};
/// get() from find(): the one copy of the value a read makes.
template <class V>
[[nodiscard]] std::optional<V> optional_of(const V* v) {
    if (v == nullptr) return std::nullopt;
    return *v;
}
template <class S>
concept has_kv_put = requires(S& s, const typename S::key_type& k, const typename S::mapped_type& v) {
    s.put(k, v);
};
template <class S>
concept has_kv_erase = requires(S& s, const typename S::key_type& k) {
    { s.erase(k) } -> std::same_as<bool>;
};
template <class S>
concept has_kv_range = requires(const S& s, const typename S::key_type& k) {
    { s.range(k, k) } -> std::ranges::input_range;
    { s.all() } -> std::ranges::input_range;
};
}  // namespace detail

/// @brief Anything strata can decorate: it has a name. Optional hooks, found
/// by concept checks: `flush()`, `close()`, `persistent()` (the store keeps
/// its data across restarts, so restore starts at its checkpoint).
template <class S>
concept state_store = std::is_object_v<S> && detail::has_name<S>;

/// @brief A store that applies updates of type U with `s.apply(u)`. The
/// store's other members are its own business; updates are what strata
/// must see to log them.
template <class S, class U>
concept store_for = state_store<S> && detail::has_apply<S, U>;

/// @brief A key-value store: `get(k) -> optional<V>`, `put(k, v)`,
/// `erase(k) -> bool` (true if the key was there). It may also offer
/// `find(k) -> const mapped_type*` (see detail::has_kv_find), which must agree
/// with get(k).
///
/// Laws: after `put(k, v)`, `get(k) == v`; after `erase(k)`, `get(k)` is empty;
/// operations on one key do not change the value of another.
template <class S>
concept kv_store = state_store<S> && detail::has_kv_types<S> && detail::has_kv_get<S> &&
                   detail::has_kv_put<S> && detail::has_kv_erase<S>;

/// @brief A kv store with ordered iteration: `range(lo, hi)` (both ends
/// inclusive) and `all()`, each an input range of (key, value) pairs in
/// ascending key order.
template <class S>
concept ordered_kv_store = kv_store<S> && detail::has_kv_range<S>;

/// @brief A persistent store that keeps the changelog offset it holds in its
/// own data: `commit(offset)` makes every update so far durable together
/// with `offset`, atomically, and `committed_offset()` reads it back (empty
/// before the first commit). Updates not yet committed never reach its
/// durable data, so after a crash it holds exactly its last commit: under
/// exactly-once it restores the changelog's tail past that offset instead of
/// being wiped. The logged layer commits it in place of a checkpoint file.
template <class S>
concept self_checkpointing_store = state_store<S> && requires(S& s, const S& cs, offset_t o) {
    s.commit(o);
    { cs.committed_offset() } -> std::same_as<std::optional<offset_t>>;
};

/// @brief Whether a store keeps its own data across restarts.
template <class S>
[[nodiscard]] constexpr bool is_persistent(const S& s) {
    if constexpr (detail::has_persistent<S>) return static_cast<bool>(s.persistent());
    else return false;
}

/// @brief Whether a store holds any state, when it can tell: from a member
/// `empty()` or `size()`, else from whether `all()` yields anything;
/// std::nullopt for a store that offers none of them.
template <class S>
[[nodiscard]] std::optional<bool> holds_state(const S& s) {
    if constexpr (requires { { s.empty() } -> std::convertible_to<bool>; }) {
        return !static_cast<bool>(s.empty());
    } else if constexpr (requires { { s.size() } -> std::convertible_to<std::size_t>; }) {
        return static_cast<std::size_t>(s.size()) != 0;
    } else if constexpr (requires { s.all(); }) {
        auto&& all = s.all();
        return std::ranges::begin(all) != std::ranges::end(all);
    } else {
        return std::nullopt;
    }
}

// -------------------------------------------------------------- updates --

/// @brief The update `put(key, value)`, for kv stores driven by `apply`.
template <class K, class V>
struct put_op {
    K key;
    V value;
};
template <class K, class V>
put_op(K, V) -> put_op<K, V>;

/// @brief The update `erase(key)`, for kv stores driven by `apply`.
template <class K>
struct erase_op {
    K key;
};
template <class K>
erase_op(K) -> erase_op<K>;

// ---------------------------------------------------------------- serdes --

/// @brief Customization point: `serde<T>` has `static void write(const T&, byte_buffer&)`
/// and `static T read(byte_reader&)`. strata specializes it for arithmetic types,
/// strings, vectors, optionals and Boost.Hana structs; users specialize it for
/// types strata does not know (like fmt's `formatter<T>`).
template <class T, class Enable = void>
struct serde;

namespace detail {
template <class S, class T>
concept has_serde_write = requires(const T& v, byte_buffer& out) { S::write(v, out); };
template <class S, class T>
concept has_serde_read = requires(byte_reader& in) {
    { S::read(in) } -> std::same_as<T>;
};
}  // namespace detail

/// @brief S writes T to bytes and reads it back.
///
/// Law: `read(write(v)) == v`, consuming exactly the bytes written.
template <class S, class T>
concept serde_for = detail::has_serde_write<S, T> && detail::has_serde_read<S, T>;

/// @brief T has a serde: `serde<T>` is specialized for it.
template <class T>
concept serializable = serde_for<serde<T>, T>;

/// @brief T's serde always writes `serde<T>::fixed_size` bytes, and can
/// write them to memory the caller provides (`write_fixed(v, std::byte*)`).
template <class T>
concept fixed_width_serializable = serializable<T> && requires(const T& v, std::byte* out) {
    { serde<T>::fixed_size } -> std::convertible_to<std::size_t>;
    serde<T>::write_fixed(v, out);
};

namespace detail {
/// serde<T>::fixed_size for a fixed_width_serializable T, else 0.
template <class T>
constexpr std::size_t fixed_size_of() {
    if constexpr (fixed_width_serializable<T>) return serde<T>::fixed_size;
    else return 0;
}
}  // namespace detail

// ------------------------------------------------------------ changelogs --

namespace detail {
template <class L>
concept has_append = requires(L& l, const record_view& r) { l.append(r); };
template <class L>
concept has_log_flush = requires(L& l) {
    { l.flush() } -> std::same_as<offset_t>;
};
template <class L>
concept has_end_offset = requires(const L& l) {
    { l.end_offset() } -> std::same_as<offset_t>;
};
template <class L>
concept has_replay = requires(L& l, offset_t from) {
    { l.replay(from) } -> std::ranges::input_range;
    requires std::convertible_to<std::ranges::range_reference_t<decltype(l.replay(from))>, record_view>;
};
}  // namespace detail

/// @brief Where records go to survive a crash.
///
/// - `append(record_view)`: buffers a copy of the record; not yet durable.
/// - `flush() -> offset_t`: makes every appended record durable and returns
///   the durable end: one past the offset of the last durable record.
/// - `end_offset() -> offset_t`: one past the last record appended.
/// - `replay(from)`: an input range of `record_view`s with offsets >= from,
///   in offset order. Each view is valid until the iterator moves on.
///
/// Laws: records replay in the order appended, each exactly as appended;
/// after `flush()` returns n, a reopened log replays every record below n.
template <class L>
concept changelog = detail::has_append<L> && detail::has_log_flush<L> &&
                    detail::has_end_offset<L> && detail::has_replay<L>;

// ---------------------------------------------------------------- codecs --

namespace detail {
template <class C, class S, class U>
concept has_touched = requires(const C& c, const S& s, const U& u) {
    { c.touched(s, u) } -> std::ranges::input_range;
    requires std::convertible_to<std::ranges::range_reference_t<decltype(c.touched(s, u))>,
                                 const typename C::key_type&>;
};
template <class C>
concept has_write_key = requires(const C& c, const typename C::key_type& k, byte_buffer& out) {
    c.write_key(k, out);
};
template <class C, class S>
concept has_write_value =
    requires(const C& c, const S& s, const typename C::key_type& k, byte_buffer& out) {
        { c.write_value(s, k, out) } -> std::same_as<bool>;
    };
template <class C, class S>
concept has_restore = requires(const C& c, S& s, const record_view& r) { c.restore(s, r); };
/// The optional time of a unit's record (see changelog_codec).
template <class C, class S>
concept has_record_timestamp = requires(const C& c, const S& s, const typename C::key_type& k) {
    { c.record_timestamp(s, k) } -> std::convertible_to<std::int64_t>;
};
/// The same for a kv value the logged layer already holds (`write_mapped`).
template <class C, class V>
concept has_mapped_timestamp = requires(const C& c, const V& v) {
    { c.mapped_timestamp(v) } -> std::convertible_to<std::int64_t>;
};
template <class R, class K>
concept range_of_keys = std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, const K&>;
/// apply_observed returns the touched keys, or {touched, result} when the
/// update has a result to hand back (observed_update).
template <class C, class S, class U>
concept has_apply_observed = requires(const C& c, S& s, const U& u) {
    requires range_of_keys<decltype(c.apply_observed(s, u)), typename C::key_type> || requires {
        requires range_of_keys<decltype(c.apply_observed(s, u).touched), typename C::key_type>;
        c.apply_observed(s, u).result;
    };
};
}  // namespace detail

/// @brief How the state of store S maps onto changelog records.
///
/// - `C::key_type`: the key of one unit of state (a map key, a row's primary key).
/// - `c.write_key(k, out)`: the record key of unit k.
/// - `c.write_value(s, k, out) -> bool`: the current state of unit k; false
///   when k no longer exists (the record is a tombstone).
/// - `c.restore(s, r)`: re-creates the unit of state that record r carries.
/// - optionally `c.record_timestamp(s, k) -> std::int64_t`: the time the
///   record of unit k carries (no_timestamp: none), for stores whose state
///   has a time that Kafka Streams keeps in the record's timestamp rather
///   than its value (timestamped and versioned stores). restore() reads it
///   back from `r.timestamp`.
///
/// Law (restore): for every history h of updates, restoring a fresh store from
/// the records written for h gives the state h leaves; and since each record
/// carries a whole unit's current state, so does restoring from only the
/// latest record of each key (a compacted changelog).
template <class C, class S>
concept changelog_codec = std::is_object_v<C> && requires { typename C::key_type; } &&
                          detail::has_write_key<C> && detail::has_write_value<C, S> &&
                          detail::has_restore<C, S>;

/// @brief C also knows which units an update of type U touches:
/// `c.touched(before, u)`, evaluated before u is applied, is a range of keys.
template <class C, class S, class U>
concept changelog_codec_for = changelog_codec<C, S> && detail::has_touched<C, S, U>;

/// @brief What an observing codec's apply_observed returns for an update
/// whose apply has a result: the keys it touched, and that result, which
/// the logged layer's apply hands back.
template <class Keys, class Result>
struct observed_update {
    Keys touched;
    Result result;
};

/// @brief C learns which units an update of type U touches while it is
/// applied, for stores whose engine reports what changed (SQLite's session
/// extension) rather than codecs that can tell beforehand:
/// `c.apply_observed(s, u)` applies u to s and returns a range of the keys
/// it touched, or, when the store's apply has a result to hand back, an
/// `observed_update{keys, result}`. If it throws, u must have left s unchanged.
///
/// The logged layer uses `touched` when a codec has both; each form costs
/// only its own calls.
template <class C, class S, class U>
concept observing_codec_for = changelog_codec<C, S> && detail::has_apply_observed<C, S, U>;

}  // namespace strata
