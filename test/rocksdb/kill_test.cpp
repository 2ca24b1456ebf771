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
    const auto log_dir = dir / "log";
    const auto db_dir = dir / "db";
    const auto open_log = [&] {
        return strata::file_log(log_dir, strata::file_log_options{.segment_bytes = 64 << 10});
    };

    const auto sum = test_support::kill_rounds(
        seed, flush_every,
        [&](auto report) {
            strata::file_log log = open_log();
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
        [&] {  // the database as the crash left it: a whole flushed state
            const model m = contents(kv("s", db_dir));
            REQUIRE(m == model_at(seed, steps_in(m)));
            return steps_in(m);
        },
        [&] {  // restored from the changelog's tail
            strata::file_log log = open_log();
            auto s = kv("s", db_dir) | strata::logged(log);
            const auto p = s.restore();
            const model restored = contents(s);
            REQUIRE(restored == model_at(seed, steps_in(restored)));
            s.flush();  // the next round starts from here
            return std::pair(steps_in(restored), p.from > 0);
        });
    std::printf("rocksdb kill: %d rounds, %d killed mid-run, %d restores from the store's own offset, "
                "%lld steps in the end\n",
                sum.rounds, sum.killed, sum.tail_restores, static_cast<long long>(sum.steps));
    CHECK(sum.killed >= sum.rounds / 2);
    CHECK(sum.tail_restores >= 1);
}
