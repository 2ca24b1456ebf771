// Timestamped key-value stores: values with the time of the record that
// wrote them, whose changelog carries the plain value and the time as the
// record's timestamp (Kafka Streams' timestamped store format).

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>
#include <strata/stores/timestamped.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace {
using store_t = strata::ordered_map_store<std::string, strata::timestamped<std::int64_t>>;
}

TEST_CASE("a kv store of timestamped values logs the plain value with its time as the record's timestamp",
          "[timestamped_store]") {
    STATIC_REQUIRE(std::is_same_v<strata::default_codec_t<store_t>,
                                  strata::timestamped_kv_codec<std::string, std::int64_t>>);
    strata::memory_log log;
    auto s = store_t("t") | strata::logged(log);
    s.put("a", {1, 100});
    s.put("b", {2, 200});
    s.erase("a");
    s.apply(strata::put_op<std::string, strata::timestamped<std::int64_t>>{"c", {3, 300}});
    s.flush();

    const auto& r = log.records();
    REQUIRE(r.size() == 4);
    REQUIRE(r[0].value == strata::encode(std::int64_t{1}));  // 8 bytes: no time inside
    REQUIRE(r[0].timestamp == 100);
    REQUIRE(r[1].timestamp == 200);
    REQUIRE(r[2].is_tombstone());
    REQUIRE(r[2].timestamp == strata::no_timestamp);
    REQUIRE(r[3].timestamp == 300);

    auto restored = store_t("t") | strata::logged(log);
    restored.restore();
    REQUIRE_FALSE(restored.get("a"));
    REQUIRE(restored.get("b") == strata::timestamped<std::int64_t>{2, 200});
    REQUIRE(restored.get("c") == strata::timestamped<std::int64_t>{3, 300});
}

TEST_CASE("a cached timestamped store writes a hot key's latest value and time once per flush",
          "[timestamped_store]") {
    using hashed = strata::hash_map_store<std::string, strata::timestamped<std::string>>;
    strata::memory_log log;
    auto s = hashed("t") | strata::logged(log) | strata::cached();
    for (std::int64_t t = 1; t <= 50; ++t) s.put("hot", {"v" + std::to_string(t), t});
    s.flush();
    REQUIRE(log.records().size() == 1);
    REQUIRE(log.records()[0].value == strata::encode(std::string("v50")));
    REQUIRE(log.records()[0].timestamp == 50);
}
