#pragma once
/// @file
/// @brief The laws of a key-value store, as checkers a user can run over
/// their own store, codec and decorator stack: the same laws strata's own
/// suite runs over every stack it ships (test/laws/).
///
///     auto make = [&] { return my_store("s") | strata::logged(log) | strata::cached(); };
///     auto key = [](std::mt19937_64& r) { return my_key(r() % 50); };
///     auto value = [](std::mt19937_64& r) { return my_value(r()); };
///     strata::testing::check_kv_model_law(make, key, value);    // behaves as a std::map
///     strata::testing::check_kv_restore_law(make, key, value);  // needs a logged layer
///     strata::testing::check_kv_crash_law(make, [&] { log.drop_unflushed(); }, key, value);
///
/// A violated law throws `strata::testing::law_violation` naming the law,
/// the seed, the step and what differed, so that any test framework reports
/// it. The checkers depend on nothing but the standard library and strata.

#include <strata/core/concepts.hpp>
#include <strata/testing/law_violation.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata::testing {

/// @brief How a law's random histories are made.
struct kv_law_options {
    std::uint64_t first_seed = 1;
    std::uint64_t last_seed = 10;
    int steps = 500;          ///< operations per history
    int flush_one_in = 8;     ///< about one step in this many flushes (when the stack can)
};

namespace detail {

template <class S>
auto contents_of(const S& s) {
    using K = typename S::key_type;
    using V = typename S::mapped_type;
    std::map<K, V> m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

template <class S, class M>
void require_contents(const char* law, std::uint64_t seed, const S& s, const M& want) {
    if constexpr (requires { s.all(); }) {
        const auto got = contents_of(s);
        if (got != want) {
            std::ostringstream what;
            what << "the store holds " << got.size() << " keys, the model " << want.size();
            std::size_t differ = 0;
            for (const auto& [k, v] : want) differ += !got.contains(k) || got.at(k) != v;
            what << "; " << differ << " of the model's keys are missing or differ";
            violated(law, seed, -1, what.str());
        }
    } else {
        for (const auto& [k, v] : want)
            if (s.get(k) != std::optional(v)) violated(law, seed, -1, "a key of the model is missing or differs");
    }
}

}  // namespace detail

/// @brief One random history of puts, erases (directly and through apply),
/// gets and flushes, on the store and on a std::map; checks every result
/// and throws `law_violation` naming `law` on the first that differs. Calls
/// `flushed()` right after each flush, when the map holds the state that
/// flush made durable. The laws below are built on it; a test can also run
/// it alone, e.g. against a changelog of its own.
template <class S, class KeyGen, class ValueGen, class Flushed>
void run_kv_history(const char* law, S& s, std::map<typename S::key_type, typename S::mapped_type>& m,
                 std::uint64_t seed, const kv_law_options& o, KeyGen& key, ValueGen& value, Flushed&& flushed) {
    using K = typename S::key_type;
    using V = typename S::mapped_type;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> op(0, 9), flush(1, o.flush_one_in < 1 ? 1 : o.flush_one_in);
    for (int step = 0; step < o.steps; ++step) {
        const K k = key(rng);
        switch (op(rng)) {
            case 0:
            case 1: {
                const bool existed = m.erase(k) != 0;
                if (s.erase(k) != existed)
                    detail::violated(law, seed, step, existed ? "erase of a present key returned false"
                                                      : "erase of an absent key returned true");
                break;
            }
            case 2:
                m.erase(k);
                s.apply(erase_op<K>{k});
                break;
            case 3: {
                V v = value(rng);
                m.insert_or_assign(k, v);
                s.apply(put_op<K, V>{k, std::move(v)});
                break;
            }
            case 4:
            case 5: {
                const auto it = m.find(k);
                const std::optional<V> want = it == m.end() ? std::nullopt : std::optional<V>(it->second);
                if (s.get(k) != want)
                    detail::violated(law, seed, step, want ? "get returned another value than the last put"
                                                   : "get returned a value for an absent key");
                if constexpr (strata::detail::has_kv_find<S>) {
                    const V* found = s.find(k);
                    if (!want != !found || (found && *found != *want))
                        detail::violated(law, seed, step, "find disagrees with get");
                }
                break;
            }
            case 6:
                if constexpr (requires { s.flush(); })
                    if (flush(rng) == 1) {
                        s.flush();
                        flushed();
                    }
                break;
            default: {
                V v = value(rng);
                m.insert_or_assign(k, v);
                s.put(k, v);
            }
        }
    }
}

/// @brief Law (decoration): the stack behaves as a std::map under random
/// histories: every get, erase and final content agree with the model.
/// @param make  make() returns a fresh stack (called once per seed)
/// @param key   key(std::mt19937_64&) returns a key; few distinct keys make
///              overwrites and deletes of live keys common
/// @param value value(std::mt19937_64&) returns a value
template <class Make, class KeyGen, class ValueGen>
void check_kv_model_law(Make make, KeyGen key, ValueGen value, kv_law_options o = {}) {
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        auto s = make();
        static_assert(kv_store<decltype(s)>, "strata::testing::check_kv_model_law: make() must return a kv_store");
        std::map<typename decltype(s)::key_type, typename decltype(s)::mapped_type> m;
        run_kv_history("a decorated store behaves as the bare one", s, m, seed, o, key, value, [] {});
        detail::require_contents("a decorated store behaves as the bare one", seed, s, m);
    }
}

/// @brief Law (restore): a fresh stack restored from the changelog a flushed
/// history wrote holds the history's state.
/// @param make  make() returns a fresh stack with a logged layer over a
///              changelog that outlives it (the same one on every call);
///              the changelog should start empty
template <class Make, class KeyGen, class ValueGen>
void check_kv_restore_law(Make make, KeyGen key, ValueGen value, kv_law_options o = {}) {
    constexpr const char* law = "restore of the changelog of a history gives its state";
    using S = decltype(make());
    std::map<typename S::key_type, typename S::mapped_type> m;
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        {
            auto s = make();
            static_assert(requires { s.restore(); }, "strata::testing::check_kv_restore_law: the stack needs a logged layer");
            s.restore();  // the histories of the seeds before this one
            detail::require_contents(law, seed, s, m);
            run_kv_history(law, s, m, seed, o, key, value, [] {});
            s.flush();
        }
        auto fresh = make();
        fresh.restore();
        detail::require_contents(law, seed, fresh, m);
    }
}

/// @brief Law (crash): after a history that flushes at random points ends in
/// a crash (the stack goes away without a last flush and `crash()` makes its
/// changelog forget what was not flushed), a fresh stack restored from the
/// changelog holds exactly the state of the last flush.
/// @param crash crash() drops the changelog's unflushed records, e.g.
///              `memory_log::drop_unflushed`, or closing a file_log without
///              a flush and reopening it from its directory
template <class Make, class Crash, class KeyGen, class ValueGen>
void check_kv_crash_law(Make make, Crash crash, KeyGen key, ValueGen value, kv_law_options o = {}) {
    constexpr const char* law = "after a crash between two flushes, restore gives the state of the last flush";
    using S = decltype(make());
    using model = std::map<typename S::key_type, typename S::mapped_type>;
    model m, at_last_flush;
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
        {
            auto s = make();
            s.restore();
            m = at_last_flush;
            run_kv_history(law, s, m, seed, o, key, value, [&] { at_last_flush = m; });
        }  // no flush: a crash
        crash();
        auto fresh = make();
        fresh.restore();
        detail::require_contents(law, seed, fresh, at_last_flush);
    }
}

}  // namespace strata::testing
