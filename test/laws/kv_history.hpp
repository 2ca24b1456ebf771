#pragma once
// Random histories of kv operations checked against a model map after every
// step: the workload of the kv laws, shared by every suite that runs them
// (in memory, on the file log, on Kafka).

#include <catch2/catch.hpp>

#include <strata/core/concepts.hpp>

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
/// get; flush) on s and on the model m, checking every result against m.
/// Calls `flushed()` right after each flush of s, when m holds the state
/// that flush made durable.
template <class S, class Flushed = no_flush_hook>
void run_kv_history(S& s, kv_model& m, std::uint64_t seed, int steps, history_options o = {},
                    Flushed flushed = {}) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> key(o.key_lo, o.key_hi);
    std::uniform_int_distribution<int> op(0, 9), len(0, 40), flush(1, o.flush_one_in);
    for (int i = 0; i < steps; ++i) {
        const std::int64_t k = key(rng);
        switch (op(rng)) {
            case 0:
            case 1: {
                const bool existed = m.erase(k) != 0;
                REQUIRE(s.erase(k) == existed);
                break;
            }
            case 2:  // the same through apply
                m.erase(k);
                s.apply(strata::erase_op<std::int64_t>{k});
                break;
            case 3: {
                std::string v(static_cast<std::size_t>(len(rng)), static_cast<char>('a' + i % 26));
                m[k] = v;
                s.apply(strata::put_op<std::int64_t, std::string>{k, v});
                break;
            }
            case 4:
            case 5:
                REQUIRE(s.get(k) == (m.contains(k) ? std::optional(m[k]) : std::nullopt));
                break;
            case 6:
                if constexpr (requires { s.flush(); })
                    if (flush(rng) == 1) {
                        s.flush();
                        flushed();
                    }
                break;
            default: {
                std::string v = std::to_string(i) + std::string(static_cast<std::size_t>(len(rng)), 'x');
                m[k] = v;
                s.put(k, v);
            }
        }
    }
}

}  // namespace laws
