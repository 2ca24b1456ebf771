// The RocksDB store logged to the file log, in a writer process SIGKILLed at
// random moments, round after round on the same directories. The store
// also holds the number of steps of the history it has applied (under a key
// of its own), so that its contents say which state they are. After each
// kill, the database as the crash left it holds a whole flushed state, and
// the store restored from the changelog's tail holds the state of the last
// flush that returned (or of the one the kill interrupted): nothing flushed
// is lost.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/rocksdb_store.hpp>

#include <support/kill_harness.hpp>
#include <support/seed.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>

namespace {

using kv = strata::rocksdb_store<std::int64_t, std::string>;
using model = std::map<std::int64_t, std::string>;
constexpr std::int64_t steps_key = std::numeric_limits<std::int64_t>::min();
constexpr int flush_every = 40;

/// Step i of history `seed`: a put or an erase of one of 500 keys.
struct step {
    std::int64_t key;
    std::optional<std::string> value;  ///< none: erase
};
step step_of(std::uint64_t seed, std::int64_t i) {
    std::mt19937_64 r(seed ^ (static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL));
    const auto key = static_cast<std::int64_t>(r() % 500) - 250;
    if (r() % 4 == 0) return {key, std::nullopt};
    return {key, std::string(1 + r() % 60, static_cast<char>('a' + r() % 26)) + std::to_string(i)};
}

/// The store's contents after the first n steps (with the step count).
model model_at(std::uint64_t seed, std::int64_t n) {
    model m;
    for (std::int64_t i = 1; i <= n; ++i) {
        const step s = step_of(seed, i);
        if (s.value) m[s.key] = *s.value;
        else m.erase(s.key);
    }
    if (n > 0) m[steps_key] = std::to_string(n);
    return m;
}

template <class S>
model contents(const S& s) {
    model m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

std::int64_t steps_in(const model& m) {
    const auto it = m.find(steps_key);
    return it == m.end() ? 0 : std::stoll(it->second);
}

}  // namespace

TEST_CASE("rocksdb kill: a writer SIGKILLed at random moments loses no flush and leaves a whole state",
          "[rocksdb][crash]") {
    test_support::temp_dir dir;
    const std::uint64_t seed = test_support::seed(20261201);
    INFO("seed " << seed << " (rerun with STRATA_TEST_SEED=" << seed << ")");
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> delay_ms(30, 400);
    const char* env = std::getenv("STRATA_KILLS");
    const int kills = env != nullptr && *env != '\0' ? std::atoi(env) : 12;
    const auto log_dir = dir / "log";
    const auto db_dir = dir / "db";

    int killed = 0, tail_restores = 0;
    std::int64_t last = 0;
    for (int round = 0; round < kills; ++round) {
        const auto outcome = test_support::run_and_kill(
            [&](auto report) {
                strata::file_log log(log_dir, strata::file_log_options{.segment_bytes = 64 << 10});
                auto s = kv("s", db_dir, {.write_buffer_bytes = 256 << 10}) | strata::logged(log) |
                         strata::cached({.max_bytes = 4096});
                s.restore();
                for (std::int64_t i = std::stoll(s.get(steps_key).value_or("0")) + 1;; ++i) {
                    const step st = step_of(seed, i);
                    if (st.value) s.put(st.key, *st.value);
                    else s.erase(st.key);
                    s.put(steps_key, std::to_string(i));
                    if (test_support::flushes_after(seed, i, flush_every)) {
                        (void)s.flush();
                        report(i);
                    }
                }
            },
            std::chrono::milliseconds(delay_ms(rng)));
        INFO("round " << round << ", last reported flush after step " << outcome.flushed_steps);
        killed += outcome.killed ? 1 : 0;
        const std::int64_t reported = std::max(outcome.flushed_steps, last);
        const std::int64_t in_flight = test_support::next_flush(seed, reported, reported + 100'000, flush_every);

        // The database as the crash left it: a whole flushed state.
        std::int64_t left = 0;
        {
            kv as_left("s", db_dir);
            const model m = contents(as_left);
            left = steps_in(m);
            REQUIRE(m == model_at(seed, left));
            REQUIRE(left >= reported);
            REQUIRE(left <= in_flight);
        }
        // Restored from the changelog's tail: the last flush, or the one in flight.
        strata::file_log log(log_dir, strata::file_log_options{.segment_bytes = 64 << 10});
        auto s = kv("s", db_dir) | strata::logged(log);
        const auto p = s.restore();
        tail_restores += p.from > 0 ? 1 : 0;
        const model restored = contents(s);
        const std::int64_t n = steps_in(restored);
        REQUIRE((n == reported || n == in_flight));
        REQUIRE(restored == model_at(seed, n));
        s.flush();  // the next round starts from here
        last = n;
    }
    std::printf("rocksdb kill: %d rounds, %d killed mid-run, %d restores from the store's own offset, "
                "%lld steps in the end\n",
                kills, killed, tail_restores, static_cast<long long>(last));
    CHECK(killed >= kills / 2);
    CHECK(tail_restores >= 1);
}
