// The cache: coalescing, reads, the byte bound, eviction, restore.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <map>
#include <random>
#include <span>
#include <string>

namespace {

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

/// A kv store that counts how often it is read, to see what the cache spares it.
/// The layers above read through find() when a store has one, as this one does.
class counting_store : public strata::hash_map_store<std::int64_t, std::string> {
public:
    using hash_map_store::hash_map_store;
    std::optional<std::string> get(const std::int64_t& k) const {
        ++reads;
        return hash_map_store::get(k);
    }
    const std::string* find(const std::int64_t& k) const {
        ++reads;
        return hash_map_store::find(k);
    }
    mutable int reads = 0;
};

std::string value_of(const strata::record& r) { return strata::decode<std::string>(*r.value); }

}  // namespace

TEST_CASE("N updates to one key between two flushes give one record", "[cached]") {
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached();
    for (int i = 0; i < 1000; ++i) s.put(42, "v" + std::to_string(i));
    s.put(7, "seven");
    REQUIRE(log.records().empty());  // nothing serialized before the flush
    s.flush();
    REQUIRE(log.records().size() == 2);
    REQUIRE(strata::decode<std::int64_t>(log.records()[0].key) == 42);  // oldest dirty key first
    REQUIRE(value_of(log.records()[0]) == "v999");
    REQUIRE(strata::layer<strata::cached_store>(s).stats().flushed_records == 2);

    s.put(42, "again");
    s.erase(7);
    s.flush();
    REQUIRE(log.records().size() == 4);
    REQUIRE(value_of(log.records()[2]) == "again");
    REQUIRE(log.records()[3].is_tombstone());

    s.flush();  // nothing dirty: nothing written
    REQUIRE(log.records().size() == 4);
}

TEST_CASE("a cache that does not answer reads keeps only the units changed since the last flush", "[cached]") {
    strata::memory_log log;
    auto written = store_t("s") | strata::logged(log) | strata::cached();  // in memory: reads not cached
    auto remembering = store_t("s") | strata::logged(log) | strata::cached({.reads = strata::read_caching::on});
    for (std::int64_t k = 0; k < 50; ++k) {
        written.put(k, "v");
        remembering.put(k, "v");
    }
    REQUIRE(written.stats().entries == 50);
    written.flush();
    remembering.flush();
    REQUIRE(written.stats().entries == 0);  // each entry went once its record was written
    REQUIRE(written.stats().bytes == 0);
    REQUIRE(written.stats().evictions == 0);  // dropping after a flush is not an eviction
    REQUIRE(remembering.stats().entries == 50);  // these answer reads
    REQUIRE(log.records().size() == 100);

    written.put(3, "w");
    written.put(3, "x");
    REQUIRE(written.stats().entries == 1);
    written.flush();
    REQUIRE(log.records().size() == 101);
    REQUIRE(value_of(log.records().back()) == "x");
    REQUIRE(written.get(3) == std::optional<std::string>("x"));  // from the store beneath

    auto no_log = counting_store("s") | strata::cached();  // neither coalesces nor answers reads
    no_log.put(1, "one");
    REQUIRE(no_log.stats().entries == 0);
}

TEST_CASE("the cache answers repeated reads and counts hits and misses", "[cached]") {
    auto s = counting_store("s") | strata::cached({.reads = strata::read_caching::on});
    s.put(1, "one");
    REQUIRE(s.get(1) == std::optional<std::string>("one"));  // written through the cache: a hit
    REQUIRE(s.get(2) == std::nullopt);                        // a miss...
    REQUIRE(s.get(2) == std::nullopt);                        // ...then a known absence: a hit
    REQUIRE(s.base().reads == 1);
    const auto st = s.stats();
    REQUIRE(st.hits == 2);
    REQUIRE(st.misses == 1);
    REQUIRE(st.hit_ratio() == Approx(2.0 / 3.0));
}

TEST_CASE("the cache stays within its byte bound and an evicted dirty key writes its record", "[cached]") {
    strata::memory_log log;
    const std::size_t bound = 4096;
    auto s = store_t("s") | strata::logged(log) | strata::cached({.max_bytes = bound});
    const std::string big(200, 'x');
    for (std::int64_t k = 0; k < 100; ++k) {
        s.put(k, big + std::to_string(k));
        REQUIRE(s.stats().bytes <= bound);
    }
    const auto st = s.stats();
    REQUIRE(st.evictions > 0);
    REQUIRE(st.dirty_evictions == st.evictions);  // every evicted entry was dirty
    REQUIRE(log.records().size() == st.dirty_evictions);  // each wrote its record on the way out
    REQUIRE(strata::decode<std::int64_t>(log.records().front().key) == 0);  // least recently used first

    s.flush();
    REQUIRE(log.records().size() == 100);  // evicted or flushed, each key once: nothing lost
    auto fresh = store_t("s") | strata::logged(log) | strata::cached({.max_bytes = bound});
    fresh.restore();
    for (std::int64_t k = 0; k < 100; ++k) REQUIRE(fresh.get(k) == big + std::to_string(k));
}

TEST_CASE("a read keeps an entry recently used so eviction takes another", "[cached]") {
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached({.max_bytes = 1400, .reads = strata::read_caching::on});
    s.put(1, std::string(100, 'a'));
    s.put(2, std::string(100, 'b'));
    s.flush();
    for (std::int64_t k = 3; k < 40 && s.stats().evictions == 0; ++k) {
        REQUIRE(s.get(1).has_value());  // keep key 1 hot
        s.put(k, std::string(100, 'c'));
    }
    REQUIRE(s.stats().evictions > 0);
    const auto hits_before = s.stats().hits;
    REQUIRE(s.get(1).has_value());
    REQUIRE(s.stats().hits == hits_before + 1);  // key 1 survived; key 2 went first
}

TEST_CASE("keys that never repeat pass the cache by, and keys that repeat are coalesced again", "[cached]") {
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached();
    std::map<std::int64_t, std::string> model;
    auto put = [&](std::int64_t k, const std::string& v) {
        s.put(k, v);
        model[k] = v;
    };

    // 20,000 distinct keys: after the first window of writes finds nothing
    // to coalesce, a key's first write is logged at once.
    for (std::int64_t k = 0; k < 20'000; ++k) put(k, "v" + std::to_string(k));
    const auto passed = s.stats().bypassed;
    CHECK(passed > 10'000);
    CHECK(log.records().size() == passed);  // each wrote its record as it passed
    CHECK(s.dirty_count() == 20'000 - passed);
    s.flush();
    CHECK(log.records().size() == 20'000);  // every key once, none lost or doubled

    // Ten hot keys, 20,000 writes: admitted on their second write, then
    // writes find them cached, the cache admits every key again, and the
    // flush writes one record per key.
    for (int i = 0; i < 20'000; ++i) put(i % 10, "hot" + std::to_string(i));
    CHECK(s.stats().bypassed <= passed + 10);
    s.flush();
    CHECK(log.records().size() <= 20'000 + 2 * 10);

    // And a uniform stream again: the cache notices and lets keys pass.
    const auto before = s.stats().bypassed;
    for (std::int64_t k = 100'000; k < 110'000; ++k) put(k, "w");
    CHECK(s.stats().bypassed > before);
    s.flush();

    auto fresh = store_t("s") | strata::logged(log);
    fresh.restore();
    CHECK(std::map<std::int64_t, std::string>(fresh.all().begin(), fresh.all().end()) == model);
}

TEST_CASE("under eviction and admission, the changelog restores exactly the store's state", "[cached]") {
    // A cache far smaller than the keys, random puts and erases over skewed
    // and uniform keys, long enough for the admission to change its mind
    // many times: at every flush, a restore from the changelog equals the
    // store, and so does the store the model.
    const auto seed = GENERATE(1u, 2u, 3u);
    std::mt19937_64 rng(seed);
    strata::memory_log log;
    auto s = strata::hash_map_store<std::int64_t, std::string>("s") | strata::logged(log) |
             strata::cached({.max_bytes = 16 * 1024});
    std::map<std::int64_t, std::string> model;
    for (int round = 0; round < 12; ++round) {
        const bool skewed = round % 3 != 2;
        for (int i = 0; i < 20'000; ++i) {
            const std::int64_t k = skewed ? static_cast<std::int64_t>(rng() % 64) * static_cast<std::int64_t>(rng() % 64)
                                          : static_cast<std::int64_t>(rng() % 50'000);
            if (rng() % 10 == 0) {
                CHECK(s.erase(k) == (model.erase(k) == 1));
            } else {
                const std::string v = std::to_string(rng() % 1000);
                s.put(k, v);
                model[k] = v;
            }
        }
        s.flush();
        auto fresh = strata::hash_map_store<std::int64_t, std::string>("s") | strata::logged(log);
        fresh.restore();
        REQUIRE(std::map<std::int64_t, std::string>(fresh.all().begin(), fresh.all().end()) == model);
    }
    const auto st = strata::layer<strata::cached_store>(s).stats();
    CHECK(st.evictions > 0);
    CHECK(st.bypassed > 0);
}

namespace {
/// A kv update the cache cannot see through: only the store knows the value
/// an addition leaves.
struct add_op {
    std::int64_t key;
    std::int64_t amount;
};
class counter_store : public strata::hash_map_store<std::int64_t, std::int64_t> {
public:
    using hash_map_store::hash_map_store;
    using hash_map_store::apply;
    void apply(const add_op& u) { put(u.key, get(u.key).value_or(0) + u.amount); }
};
struct counter_codec : strata::kv_codec<std::int64_t, std::int64_t> {
    using kv_codec::touched;
    std::span<const std::int64_t, 1> touched(const auto&, const add_op& u) const noexcept {
        return std::span<const std::int64_t, 1>(&u.key, 1);
    }
};
}  // namespace

TEST_CASE("an update other than put or erase over a kv store: one record of the store's value", "[cached]") {
    strata::memory_log log;
    auto s = counter_store("counters") | strata::logged(log, counter_codec{}) |
             strata::cached({.reads = strata::read_caching::on});
    s.put(1, 10);
    REQUIRE(s.get(1) == std::optional<std::int64_t>(10));  // a hit: the put's value is cached
    REQUIRE(s.stats().hits == 1);
    for (int i = 0; i < 5; ++i) s.apply(add_op{1, 1});
    s.apply(add_op{2, 7});
    // The cached value of key 1 was dropped: the next read asks the store.
    REQUIRE(s.get(1) == std::optional<std::int64_t>(15));
    REQUIRE(s.stats().misses == 1);
    REQUIRE(log.records().empty());
    s.flush();
    REQUIRE(log.records().size() == 2);  // one per touched key, values read from the store
    REQUIRE(strata::decode<std::int64_t>(log.records()[0].key) == 1);
    REQUIRE(strata::decode<std::int64_t>(*log.records()[0].value) == 15);
    REQUIRE(strata::decode<std::int64_t>(log.records()[1].key) == 2);
    REQUIRE(strata::decode<std::int64_t>(*log.records()[1].value) == 7);

    // The changelog rebuilds the same counters.
    auto rebuilt = counter_store("counters") | strata::logged(log, counter_codec{});
    rebuilt.restore();
    REQUIRE(rebuilt.get(1) == std::optional<std::int64_t>(15));
    REQUIRE(rebuilt.get(2) == std::optional<std::int64_t>(7));
}

TEST_CASE("restore through the cache drops what the cache held", "[cached]") {
    strata::memory_log log;
    {
        auto s = store_t("s") | strata::logged(log) | strata::cached();
        s.put(1, "one");
        s.flush();
    }
    auto s = store_t("s") | strata::logged(log) | strata::cached({.reads = strata::read_caching::on});
    REQUIRE_FALSE(s.get(1).has_value());  // a fresh store: the cache now remembers an absence
    s.restore();
    REQUIRE(s.get(1) == std::optional<std::string>("one"));
    REQUIRE(s.stats().entries == 1);
}

TEST_CASE("a cache without a changelog beneath writes nothing and marks nothing dirty", "[cached]") {
    auto s = store_t("s") | strata::cached();
    s.put(1, "one");
    REQUIRE(s.dirty_count() == 0);
    s.apply(strata::erase_op<std::int64_t>{1});
    REQUIRE_FALSE(s.get(1).has_value());
}

TEST_CASE("by default reads are cached over a persistent store only", "[cached]") {
    // In memory: the store beneath is as fast as the cache and always current.
    auto mem = counting_store("s") | strata::cached();
    REQUIRE_FALSE(mem.caches_reads());
    mem.put(1, "one");
    REQUIRE(mem.get(1) == std::optional<std::string>("one"));
    REQUIRE(mem.get(1) == std::optional<std::string>("one"));
    REQUIRE(mem.base().reads == 2);  // both reads went to the store
    REQUIRE(mem.stats().hits + mem.stats().misses == 0);

    struct persistent_counting_store : counting_store {
        using counting_store::counting_store;
        bool persistent() const noexcept { return true; }
    };
    auto disk = persistent_counting_store("s") | strata::cached();
    REQUIRE(disk.caches_reads());
    REQUIRE_FALSE(disk.get(2).has_value());
    REQUIRE_FALSE(disk.get(2).has_value());
    REQUIRE(disk.base().reads == 1);  // the second read was a hit
    REQUIRE(disk.stats().hits == 1);

    auto forced_off = persistent_counting_store("s") | strata::cached({.reads = strata::read_caching::off});
    REQUIRE_FALSE(forced_off.caches_reads());
}
