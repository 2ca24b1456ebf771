#pragma once
// Random histories of kv operations checked against a model map after every
// step: the workload of the kv laws, shared by every suite that runs them
// (in memory, on the file log, on Kafka).

#include <strata/core/concepts.hpp>
#include <strata/testing/kv_laws.hpp>

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

}  // namespace laws
