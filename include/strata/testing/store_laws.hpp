#pragma once
/// @file
/// @brief The laws of any store, key-value or not, as checkers a user can run
/// over their own store, codec and decorator stack. Where kv_laws.hpp checks
/// a key-value store against a std::map, these need no model: the user says
/// how to make a random update and how to read the store's state, and the
/// laws compare a stack with the bare store, a restored stack with the one
/// that wrote the changelog, and a stack restored after a crash with the
/// state of its last flush.
///
///     auto make = [&] { return my_table("t") | strata::logged(log, my_codec{}) | strata::cached(); };
///     auto bare = [] { return my_table("t"); };
///     auto update = [](std::mt19937_64& r) -> std::variant<insert_row, delete_where> { ... };
///     auto state = [](const auto& s) { return strata::innermost(s).rows(); };  // comparable with ==
///     strata::testing::check_store_decoration_law(make, bare, update, state);
///     strata::testing::check_store_restore_law(make, update, state);
///     strata::testing::check_store_crash_law(make, [&] { log.drop_unflushed(); }, update, state);
///
/// An update may be a std::variant of the store's update types: the laws
/// apply the alternative it holds. A violated law throws
/// `strata::testing::law_violation` naming the law, the seed and the step.

#include <strata/testing/law_violation.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace strata::testing {

/// @brief How the random histories of the store laws are made.
struct store_law_options {
    std::uint64_t first_seed = 1;
    std::uint64_t last_seed = 10;
    int steps = 300;       ///< updates per history
    int flush_one_in = 8;  ///< after about one update in this many, the stack flushes (when it can)
};

namespace detail {

template <class T>
struct is_variant : std::false_type {};
template <class... Ts>
struct is_variant<std::variant<Ts...>> : std::true_type {};

/// Whether every alternative of the variant V gives the same apply result on an S.
template <class S, class V>
struct same_results;
template <class S, class... Alts>
struct same_results<S, std::variant<Alts...>> {
    template <class A>
    using result = decltype(std::declval<S&>().apply(std::declval<const A&>()));
    using first = result<std::tuple_element_t<0, std::tuple<Alts...>>>;
    static constexpr bool value = (std::is_same_v<result<Alts>, first> && ...);
};

/// Applies `u` to `s`, visiting it if it is a variant, and returns what
/// apply returned: for a variant, only when every alternative's apply
/// returns the same type (else nothing, and the results go uncompared).
template <class S, class U>
decltype(auto) apply_update(S& s, U&& u) {
    using plain = std::remove_cvref_t<U>;
    if constexpr (!is_variant<plain>::value) {
        return s.apply(std::forward<U>(u));
    } else if constexpr (same_results<S, plain>::value) {
        return std::visit([&s](auto&& alt) -> decltype(auto) { return s.apply(std::forward<decltype(alt)>(alt)); },
                          std::forward<U>(u));
    } else {
        std::visit([&s](auto&& alt) { (void)s.apply(std::forward<decltype(alt)>(alt)); }, std::forward<U>(u));
    }
}

/// A history: `steps` random updates applied to `s`, a flush after about
/// one in `flush_one_in`, calling `flushed()` right after each flush.
template <class S, class UpdateGen, class Flushed>
void run_store_history(S& s, std::uint64_t seed, const store_law_options& o, UpdateGen& update, Flushed&& flushed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> flush(1, o.flush_one_in < 1 ? 1 : o.flush_one_in);
    for (int step = 0; step < o.steps; ++step) {
        apply_update(s, update(rng));
        if constexpr (requires { s.flush(); })
            if (flush(rng) == 1) {
                s.flush();
                flushed();
            }
    }
}

}  // namespace detail

/// @brief Law (decoration): a stack behaves as the bare store. The same
/// random updates go to both; after every update their states are equal,
/// and so are the results of apply where it returns one.
/// @param make    make() returns a fresh stack (called once per seed)
/// @param bare    bare() returns a fresh bare store
/// @param update  update(std::mt19937_64&) returns an update (or a variant of updates)
/// @param state   state(store) returns the store's contents as a value
///                comparable with ==; it is given both the stack and the bare store
template <class Make, class Bare, class UpdateGen, class State>
void check_store_decoration_law(Make make, Bare bare, UpdateGen update, State state, store_law_options o = {}) {
    constexpr const char* law = "a decorated store behaves as the bare one";
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        auto s = make();
        auto b = bare();
        std::mt19937_64 rng(seed);
        std::uniform_int_distribution<int> flush(1, o.flush_one_in < 1 ? 1 : o.flush_one_in);
        for (int step = 0; step < o.steps; ++step) {
            auto u = update(rng);
            using result = decltype(detail::apply_update(b, u));
            using stack_result = decltype(detail::apply_update(s, u));
            if constexpr (std::is_void_v<result> && std::is_void_v<stack_result>) {
                detail::apply_update(b, u);
                detail::apply_update(s, std::move(u));
            } else if constexpr (std::is_void_v<result> != std::is_void_v<stack_result>) {
                detail::violated(law, seed, step,
                                 std::is_void_v<result> ? "apply returns a result on the stack but none on the bare store"
                                                        : "apply returns a result on the bare store but none on the stack");
            } else {
                const auto want = detail::apply_update(b, u);
                if (!(detail::apply_update(s, std::move(u)) == want))
                    detail::violated(law, seed, step, "apply returned another result than on the bare store");
            }
            if (!(state(std::as_const(s)) == state(std::as_const(b))))
                detail::violated(law, seed, step, "the stack's state differs from the bare store's");
            if constexpr (requires { s.flush(); })
                if (flush(rng) == 1) s.flush();
        }
    }
}

/// @brief Law (restore): a fresh stack restored from the changelog that a
/// flushed history wrote has the state the history left.
/// @param make  make() returns a fresh stack with a logged layer over a
///              changelog that outlives it (the same one on every call);
///              the changelog should start empty
template <class Make, class UpdateGen, class State>
void check_store_restore_law(Make make, UpdateGen update, State state, store_law_options o = {}) {
    constexpr const char* law = "restore of the changelog of a history gives its state";
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        auto s = make();
        static_assert(requires { s.restore(); }, "strata::testing::check_store_restore_law: the stack needs a logged layer");
        s.restore();  // the histories of the seeds before this one
        detail::run_store_history(s, seed, o, update, [] {});
        s.flush();
        const auto want = state(std::as_const(s));
        auto fresh = make();
        fresh.restore();
        if (!(state(std::as_const(fresh)) == want))
            detail::violated(law, seed, -1, "the restored stack's state differs from the state the history left");
    }
}

/// @brief Law (crash): after a history that flushes at random points ends in
/// a crash (the stack goes away without a last flush and `crash()` makes the
/// changelog forget what was not flushed), a fresh stack restored from the
/// changelog has exactly the state of the last flush.
/// @param crash crash() drops the changelog's unflushed records
template <class Make, class Crash, class UpdateGen, class State>
void check_store_crash_law(Make make, Crash crash, UpdateGen update, State state, store_law_options o = {}) {
    constexpr const char* law = "after a crash between two flushes, restore gives the state of the last flush";
    using state_t = std::remove_cvref_t<decltype(state(std::declval<const decltype(make())&>()))>;
    std::optional<state_t> at_last_flush;
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        {
            auto s = make();
            s.restore();
            if (!at_last_flush) at_last_flush.emplace(state(std::as_const(s)));
            detail::run_store_history(s, seed, o, update, [&] { at_last_flush.emplace(state(std::as_const(s))); });
        }  // no flush: a crash
        crash();
        auto fresh = make();
        fresh.restore();
        if (!(state(std::as_const(fresh)) == *at_last_flush))
            detail::violated(law, seed, -1, "the restored stack's state differs from the state of the last flush");
    }
}

}  // namespace strata::testing
