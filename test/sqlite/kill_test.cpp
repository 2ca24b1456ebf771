// The SQLite store on disk, logged to the file log, in a writer process
// SIGKILLed at random moments, round after round on the same files. Each
// update also records how many steps of the history the database holds (a
// row of its own, in the same statement list), so that its contents say
// which state they are. After each kill, the database as the crash left it
// holds a whole flushed state, and the store restored from the changelog's
// tail holds the state of the last flush that returned (or of the one the
// kill interrupted): nothing flushed is lost.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/sqlite_store.hpp>

#include <support/kill_harness.hpp>
#include <support/seed.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

using strata::sql;
using strata::sql_value;

namespace {

using model = std::map<std::int64_t, std::string>;
constexpr int flush_every = 25;

strata::sqlite_store open(const std::filesystem::path& path) {
    strata::sqlite_store db("kv", path.string());
    db.schema("CREATE TABLE IF NOT EXISTS kv(k INTEGER PRIMARY KEY, v TEXT NOT NULL);"
              "CREATE TABLE IF NOT EXISTS progress(id INTEGER PRIMARY KEY, steps INTEGER NOT NULL)");
    return db;
}

/// Step i of history `seed`: an upsert, a delete, or a multi-row UPDATE,
/// each with the step count written in the same update.
struct step {
    int kind;  ///< 0 upsert, 1 delete, 2 append '+' to every value whose key is m mod 7
    std::int64_t key;
    std::string value;
};
step step_of(std::uint64_t seed, std::int64_t i) {
    std::mt19937_64 r(seed ^ (static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL));
    const int roll = static_cast<int>(r() % 10);
    step s{roll < 6 ? 0 : roll < 9 ? 1 : 2, static_cast<std::int64_t>(r() % 300), {}};
    if (s.kind == 0) s.value = std::string(1 + r() % 40, static_cast<char>('a' + r() % 26));
    if (s.kind == 2) s.key %= 7;
    return s;
}

sql as_sql(const step& s, std::int64_t i) {
    const std::string progress = "; INSERT OR REPLACE INTO progress VALUES (0, ?3)";
    switch (s.kind) {
        case 0: return sql{"INSERT OR REPLACE INTO kv VALUES (?1, ?2)" + progress, {s.key, s.value, i}};
        case 1: return sql{"DELETE FROM kv WHERE k = ?1" + progress, {s.key, nullptr, i}};
        default: return sql{"UPDATE kv SET v = v || '+' WHERE k % 7 = ?1" + progress, {s.key, nullptr, i}};
    }
}

model model_at(std::uint64_t seed, std::int64_t n) {
    model m;
    for (std::int64_t i = 1; i <= n; ++i) {
        const step s = step_of(seed, i);
        if (s.kind == 0) m[s.key] = s.value;
        else if (s.kind == 1) m.erase(s.key);
        else
            for (auto& [k, v] : m)
                if (k % 7 == s.key) v += '+';
    }
    return m;
}

/// The kv table and the step count.
std::pair<model, std::int64_t> contents(const strata::sqlite_store& db) {
    model m;
    for (const auto& row : db.query("SELECT k, v FROM kv"))
        m.emplace(std::get<std::int64_t>(row[0].v), std::get<std::string>(row[1].v));
    const auto p = db.query("SELECT steps FROM progress WHERE id = 0");
    return {m, p.empty() ? 0 : std::get<std::int64_t>(p[0][0].v)};
}

}  // namespace

TEST_CASE("sqlite kill: a writer SIGKILLed at random moments loses no flush and leaves a whole state",
          "[sqlite][crash]") {
    test_support::temp_dir dir;
    const std::uint64_t seed = test_support::seed(20261202);
    INFO("seed " << seed << " (rerun with STRATA_TEST_SEED=" << seed << ")");
    const auto log_dir = dir / "log";
    const auto db_path = dir / "kv.db";
    const auto open_log = [&] {
        return strata::file_log(log_dir, strata::file_log_options{.segment_bytes = 64 << 10});
    };

    const auto sum = test_support::kill_rounds(
        seed, flush_every,
        [&](auto report) {
            strata::file_log log = open_log();
            auto s = open(db_path) | strata::logged(log) | strata::cached();
            s.restore();
            for (std::int64_t i = contents(strata::innermost(s)).second + 1;; ++i) {
                s.apply(as_sql(step_of(seed, i), i));
                if (test_support::flushes_after(seed, i, flush_every)) {
                    (void)s.flush();
                    report(i);
                }
            }
        },
        [&] {  // the database as the crash left it: a whole flushed state
            const auto [m, left] = contents(open(db_path));
            REQUIRE(m == model_at(seed, left));
            return left;
        },
        [&] {  // restored from the changelog's tail
            strata::file_log log = open_log();
            auto s = open(db_path) | strata::logged(log);
            const auto p = s.restore();
            const auto [m, n] = contents(strata::innermost(s));
            REQUIRE(m == model_at(seed, n));
            s.flush();  // the next round starts from here
            return std::pair(n, p.from > 0);
        });
    std::printf("sqlite kill: %d rounds, %d killed mid-run, %d restores from the store's own offset, "
                "%lld steps in the end\n",
                sum.rounds, sum.killed, sum.tail_restores, static_cast<long long>(sum.steps));
    CHECK(sum.killed >= sum.rounds / 2);
    CHECK(sum.tail_restores >= 1);
}
