// The RocksDB store on its own and under the logged layer: scan order,
// writes that wait for flush, reopening a directory, restoring only the
// changelog's tail past the checkpoint, and the errors of a damaged or
// doubly opened directory and of bytes that do not decode.

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/rocksdb_store.hpp>

#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using kv = strata::rocksdb_store<std::int64_t, std::string>;

template <class S>
std::map<std::int64_t, std::string> contents(const S& s) {
    std::map<std::int64_t, std::string> m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

template <class Range>
std::vector<std::int64_t> keys_of(const Range& r) {
    std::vector<std::int64_t> ks;
    for (const auto& [k, v] : r) ks.push_back(k);
    return ks;
}

}  // namespace

static_assert(strata::ordered_kv_store<kv>);
static_assert(strata::ordered_kv_store<strata::rocksdb_store<std::string, std::int32_t>>);

TEST_CASE("rocksdb store: scans run in numeric order for integers, negative ones first", "[rocksdb]") {
    test_support::temp_dir dir;
    kv s("s", dir.path() / "db");
    for (const std::int64_t k : std::vector<std::int64_t>{5, -1, 300, -70000, 0, 1LL << 40, -(1LL << 40), 2})
        s.put(k, "v" + std::to_string(k));
    const std::vector<std::int64_t> sorted = {-(1LL << 40), -70000, -1, 0, 2, 5, 300, 1LL << 40};
    CHECK(keys_of(s.all()) == sorted);  // from the write batch
    s.flush();
    CHECK(keys_of(s.all()) == sorted);  // from the database
    CHECK(keys_of(s.range(-70000, 2)) == std::vector<std::int64_t>{-70000, -1, 0, 2});
    CHECK(keys_of(s.range(-69999, 1)) == std::vector<std::int64_t>{-1, 0});
    CHECK(keys_of(s.range(3, 2)).empty());  // an inverted range is empty
    s.put(1, "one");                        // a scan merges the batch with the database
    CHECK(s.erase(300));
    CHECK_FALSE(s.erase(301));
    CHECK(keys_of(s.range(0, 1000)) == std::vector<std::int64_t>{0, 1, 2, 5});
}

TEST_CASE("rocksdb store: string keys scan in std::string's order", "[rocksdb]") {
    test_support::temp_dir dir;
    strata::rocksdb_store<std::string, std::int32_t> s("s", dir.path() / "db");
    const std::vector<std::string> keys = {"b", "a", "ab", "", "\xff", "B", "a\x01"};
    for (std::size_t i = 0; i < keys.size(); ++i) s.put(keys[i], static_cast<std::int32_t>(i));
    std::vector<std::string> want = keys;
    std::sort(want.begin(), want.end());
    std::vector<std::string> got;
    for (const auto& [k, v] : s.all()) got.push_back(k);
    CHECK(got == want);
    CHECK(s.get("ab") == std::optional<std::int32_t>(2));
}

TEST_CASE("rocksdb store: reads see unflushed writes, and a reopen keeps only what flush wrote", "[rocksdb]") {
    test_support::temp_dir dir;
    {
        kv s("s", dir.path() / "db");
        s.put(1, "one");
        s.put(2, "two");
        CHECK(s.get(1) == std::optional<std::string>("one"));
        CHECK(s.pending_updates() == 2);
        s.flush();
        CHECK(s.pending_updates() == 0);
        s.put(3, "three");  // never flushed
        CHECK(s.erase(1));  // never flushed
        CHECK_FALSE(s.get(1).has_value());
    }
    kv reopened("s", dir.path() / "db");
    CHECK(contents(reopened) == std::map<std::int64_t, std::string>{{1, "one"}, {2, "two"}});
}

TEST_CASE("rocksdb store: the committed offset is written with the updates and read back after a reopen",
          "[rocksdb]") {
    static_assert(strata::self_checkpointing_store<kv>);
    test_support::temp_dir dir;
    {
        kv s("s", dir.path() / "db");
        CHECK_FALSE(s.committed_offset().has_value());
        s.put(1, "one");
        s.commit(7);
        CHECK(s.committed_offset() == std::optional<strata::offset_t>(7));
        s.put(2, "two");    // never committed
        s.discard();        // an aborted transaction's updates
        CHECK_FALSE(s.get(2).has_value());
        s.put(3, "three");  // never committed, then a crash
        CHECK(keys_of(s.all()) == std::vector<std::int64_t>{1, 3});  // the offset is not an entry
    }
    kv reopened("s", dir.path() / "db");
    CHECK(reopened.committed_offset() == std::optional<strata::offset_t>(7));
    CHECK(contents(reopened) == std::map<std::int64_t, std::string>{{1, "one"}});
}

TEST_CASE("rocksdb store: a reopened store restores only the changelog past its committed offset",
          "[rocksdb][restore]") {
    test_support::temp_dir dir;
    const auto db = dir.path() / "db";
    std::map<std::int64_t, std::string> model;
    std::mt19937_64 rng(7);
    auto write = [&](auto& s, int n) {
        for (int i = 0; i < n; ++i) {
            const auto k = static_cast<std::int64_t>(rng() % 5000);
            if (rng() % 5 == 0) {
                s.erase(k);
                model.erase(k);
            } else {
                const std::string v(1 + rng() % 30, static_cast<char>('a' + rng() % 26));
                s.put(k, v);
                model[k] = v;
            }
        }
    };
    {
        strata::file_log log(dir.path() / "log");
        auto s = kv("s", db) | strata::logged(log);
        write(s, 20'000);
        CHECK(s.flush() == 20'000);
        CHECK(s.base().committed_offset() == std::optional<strata::offset_t>(20'000));
    }
    // Reopened after a clean stop: nothing to restore.
    {
        strata::file_log log(dir.path() / "log");
        auto s = kv("s", db) | strata::logged(log);
        const auto p = s.restore();
        CHECK(p.from == 20'000);
        CHECK(p.records_done == 0);
        CHECK(contents(s) == model);
        // Then a crash after the changelog's flush, before the store's commit.
        write(s, 3'000);
        CHECK(s.changelog().flush() == 23'000);
    }
    strata::file_log log(dir.path() / "log");
    auto s = kv("s", db) | strata::logged(log);
    CHECK(s.base().committed_offset() == std::optional<strata::offset_t>(20'000));
    const auto p = s.restore();
    CHECK(p.from == 20'000);
    CHECK(p.records_done == 3'000);  // the tail only
    CHECK(contents(s) == model);
}

TEST_CASE("rocksdb store: a committed offset past the changelog's end is refused", "[rocksdb][restore][errors]") {
    test_support::temp_dir dir;
    strata::memory_log log;
    {
        kv s("s", dir.path() / "db");
        s.put(1, "one");
        s.commit(500);  // a store from another changelog, or one that lost records
    }
    auto s = kv("s", dir.path() / "db") | strata::logged(log);
    try {
        s.restore();
        FAIL("restore accepted an offset past the changelog's end");
    } catch (const strata::restore_error& e) {
        const std::string what = e.what();
        CHECK(what.find("the store's own committed offset") != std::string::npos);
        CHECK(what.find("changelog ends at 0") != std::string::npos);
    }
}

TEST_CASE("rocksdb store: with checkpoint_on_flush off, a flush leaves the database alone until save_checkpoint",
          "[rocksdb][restore]") {
    test_support::temp_dir dir;
    strata::memory_log log;
    {
        auto s = kv("s", dir.path() / "db") | strata::logged(log, {.checkpoint_on_flush = false});
        s.put(1, "one");
        const auto durable = s.flush();  // in the changelog, as in a transaction not yet committed
        CHECK(s.base().pending_updates() == 1);
        CHECK_FALSE(s.base().committed_offset().has_value());
        s.save_checkpoint(durable);  // the transaction committed
        CHECK(s.base().pending_updates() == 0);
        CHECK(s.base().committed_offset() == std::optional<strata::offset_t>(durable));
        s.put(2, "two");
        (void)s.flush();  // never committed: a crash
    }
    kv reopened("s", dir.path() / "db");
    CHECK(contents(reopened) == std::map<std::int64_t, std::string>{{1, "one"}});
}

TEST_CASE("rocksdb store: a restore writes to the database batch by batch", "[rocksdb][restore]") {
    test_support::temp_dir dir;
    strata::memory_log log;
    {
        auto s = kv("s", dir.path() / "a") | strata::logged(log);
        for (std::int64_t k = 0; k < 25'000; ++k) s.put(k, std::to_string(k));
        s.flush();
    }
    auto fresh = kv("s", dir.path() / "b") | strata::logged(log);
    const auto p = fresh.restore();
    CHECK(p.records_done == 25'000);
    CHECK(fresh.base().pending_updates() == 0);  // nothing left in the write batch
    CHECK(fresh.get(24'999) == std::optional<std::string>("24999"));
}

TEST_CASE("rocksdb store: a directory the process holds already fails with its name", "[rocksdb][errors]") {
    test_support::temp_dir dir;
    kv first("s", dir.path() / "db");
    try {
        kv second("t", dir.path() / "db");
        FAIL("a second store opened the same directory");
    } catch (const strata::store_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'t'") != std::string::npos);
        CHECK(what.find((dir.path() / "db").string()) != std::string::npos);
        CHECK(what.find("lock") != std::string::npos);
    }
}

TEST_CASE("rocksdb store: a damaged directory is refused and its changelog rebuilds the state elsewhere",
          "[rocksdb][errors]") {
    test_support::temp_dir dir;
    const auto db = dir.path() / "db";
    strata::file_log log(dir.path() / "log");
    {
        auto s = kv("s", db) | strata::logged(log);
        for (std::int64_t k = 0; k < 1000; ++k) s.put(k, "v" + std::to_string(k));
        s.flush();
    }
    // RocksDB's CURRENT file names the live MANIFEST; point it nowhere.
    {
        std::ofstream current(db / "CURRENT", std::ios::trunc);
        current << "MANIFEST-999999\n";
    }
    try {
        kv damaged("s", db);
        FAIL("a damaged directory opened");
    } catch (const strata::store_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'s'") != std::string::npos);
        CHECK(what.find(db.string()) != std::string::npos);
        CHECK(what.find("MANIFEST-999999") != std::string::npos);  // RocksDB's reason
    }
    auto rebuilt = kv("s", dir.path() / "db-rebuilt") | strata::logged(log);
    CHECK(rebuilt.restore().records_done == 1000);
    CHECK(rebuilt.get(999) == std::optional<std::string>("v999"));
}

TEST_CASE("rocksdb store: a stored value that does not decode is a serde_error", "[rocksdb][errors]") {
    test_support::temp_dir dir;
    strata::rocksdb_store<std::int64_t, std::int32_t> s("s", dir.path() / "db");
    s.put(1, 10);
    s.flush();
    // Two bytes where an int32 needs four, written behind the store's back.
    std::string key(8, '\0');
    key[0] = '\x80';
    key[7] = '\x01';
    REQUIRE(s.database().Put(rocksdb::WriteOptions(), key, "\x01\x02").ok());
    CHECK_THROWS_AS(s.get(1), strata::serde_error);
    CHECK_THROWS_AS(keys_of(s.all()), strata::serde_error);
}

TEST_CASE("rocksdb store: scans merge pending updates with the database, in order, erases hidden",
          "[rocksdb]") {
    test_support::temp_dir dir;
    kv s("s", dir.path() / "db");
    std::map<std::int64_t, std::string> model;
    std::mt19937_64 rng(11);
    auto key = [&] { return static_cast<std::int64_t>(rng() % 200) - 100; };
    for (int step = 0; step < 3000; ++step) {
        const std::int64_t k = key();
        switch (rng() % 8) {
            case 0:
            case 1:
            case 2: {
                const std::string v = "v" + std::to_string(rng() % 1000);
                s.put(k, v);
                model[k] = v;
                break;
            }
            case 3:
            case 4: CHECK(s.erase(k) == (model.erase(k) == 1)); break;
            case 5: s.flush(); break;  // some keys in the database, some pending, some both
            default: CHECK(s.get(k) == (model.contains(k) ? std::optional(model[k]) : std::nullopt)); break;
        }
        if (step % 50 == 0) {
            std::int64_t lo = key(), hi = key();
            if (hi < lo) std::swap(lo, hi);
            std::vector<std::pair<std::int64_t, std::string>> want(model.lower_bound(lo), model.upper_bound(hi));
            std::vector<std::pair<std::int64_t, std::string>> got;
            for (const auto& [gk, gv] : s.range(lo, hi)) got.emplace_back(gk, gv);
            INFO("step " << step << ", range [" << lo << ", " << hi << "]");
            REQUIRE(got == want);
            REQUIRE(contents(s) == model);
        }
    }
}

TEST_CASE("rocksdb store: close() lets go of the directory at once and refuses later use", "[rocksdb]") {
    test_support::temp_dir dir;
    kv first("s", dir.path() / "db");
    first.put(1, "one");
    first.commit(1);
    first.put(2, "two");  // not committed: dropped by close()
    first.close();
    CHECK_THROWS_AS(first.get(1), strata::usage_error);
    kv second("s", dir.path() / "db");  // the lock is free
    CHECK(contents(second) == std::map<std::int64_t, std::string>{{1, "one"}});
}
