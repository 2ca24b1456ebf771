#pragma once
// Random histories of kv operations checked against a model map after every
// step: the workload of the kv laws, shared by every suite that runs them
// (in memory, on the file log, on Kafka).

#include <strata/core/concepts.hpp>
#include <strata/testing/kv_laws.hpp>

#include <catch2/catch.hpp>

#include "stacks.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>

namespace laws {

using kv_model = std::map<std::int64_t, std::string>;

/// The contents of a kv store with int64 keys and string values, as a map.
template <class S>
kv_model contents_of(const S& s) {
    kv_model m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

struct history_options {
    std::int64_t key_lo = -20;  ///< few keys, so overwrites and deletes of live keys are common
    std::int64_t key_hi = 40;
    int flush_one_in = 1;       ///< of the steps that may flush, the share that does
};

/// What run_kv_history calls after each flush when it is given nothing.
struct no_flush_hook {
    void operator()() const noexcept {}
};

/// Runs `steps` random operations (put, erase, each also through apply;
/// get; flush) on s and on the model m, checking every result against m:
/// strata::testing::run_kv_history over int64 keys in [key_lo, key_hi] and
/// strings of 0 to 40 letters. Calls `flushed()` right after each flush of
/// s, when m holds the state that flush made durable.
template <class S, class Flushed = no_flush_hook>
void run_kv_history(S& s, kv_model& m, std::uint64_t seed, int steps, history_options o = {},
                    Flushed flushed = {}) {
    std::uniform_int_distribution<std::int64_t> key_in(o.key_lo, o.key_hi);
    std::uniform_int_distribution<std::size_t> len(0, 40);
    auto key = [&](std::mt19937_64& r) { return key_in(r); };
    auto value = [&](std::mt19937_64& r) { return std::string(len(r), static_cast<char>('a' + r() % 26)); };
    const strata::testing::kv_law_options opts{
        .first_seed = seed, .last_seed = seed, .steps = steps, .flush_one_in = o.flush_one_in};
    strata::testing::run_kv_history("the kv laws", s, m, seed, opts, key, value, flushed);
}

/// The decoration law over a stack fixture (stacks.hpp): seeds first..last,
/// each a fresh stack and a history of `steps` checked against the model.
template <class Fixture>
void kv_model_law(std::uint64_t first, std::uint64_t last, int steps) {
    check_model_law<Fixture, kv_model>(
        first, last, [steps](auto& s, kv_model& m, std::uint64_t seed) { run_kv_history(s, m, seed, steps); },
        [](const auto& s, const kv_model& m) { REQUIRE(contents_of(s) == m); });
}

/// The restore law over a stack fixture with a changelog, for seeds first..last.
template <class Fixture>
void kv_restore_law(std::uint64_t first, std::uint64_t last, int steps) {
    for (std::uint64_t seed = first; seed <= last; ++seed)
        check_restore_law<Fixture, kv_model>([&](auto& s, kv_model& m) { run_kv_history(s, m, seed, steps); },
                                             [](const auto& s, const kv_model& m) { REQUIRE(contents_of(s) == m); });
}

}  // namespace laws
