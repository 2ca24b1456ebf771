// multi_table_codec: the codec of a store with several tables, composed from
// one codec per table. Checked on the two-table shop store of docs/examples
// with the public store laws (decoration, restore, crash) over every stack,
// its record layout, and its answers to bad records.

#include <shop.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/restore/restore.hpp>
#include <strata/testing/store_laws.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <variant>

using shop::add_customer;
using shop::cancel_order;
using shop::customer;
using shop::order;
using shop::place_order;
using shop::shop_codec;
using shop::shop_store;

namespace {

using shop_update = std::variant<add_customer, place_order, cancel_order>;

/// Random updates over few ids, so that orders are refused, cancelled twice,
/// placed for missing customers: every path of both table codecs.
shop_update random_update(std::mt19937_64& rng) {
    std::uniform_int_distribution<std::int64_t> id(1, 12), amount(0, 60'00);
    switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
        case 0: return add_customer{{id(rng), "c", amount(rng)}};
        case 1:
        case 2:
        case 3: return place_order{{id(rng), id(rng), amount(rng)}};
        default: return cancel_order{id(rng)};
    }
}

struct shop_state {
    std::map<std::int64_t, customer> customers;
    std::map<std::int64_t, order> orders;
    friend bool operator==(const shop_state&, const shop_state&) = default;
};

const auto state = [](const auto& s) {
    const shop_store& t = strata::innermost(s);
    return shop_state{t.customers(), t.orders()};
};

}  // namespace

static_assert(strata::changelog_codec<shop_codec, shop_store>);
static_assert(strata::changelog_codec_for<shop_codec, shop_store, add_customer>);  // one table's codec touches it
static_assert(strata::changelog_codec_for<shop_codec, shop_store, place_order>);   // both do
static_assert(!strata::changelog_codec_for<shop_codec, shop_store, int>);

TEST_CASE("multi_table_codec: a decorated two-table store behaves as the bare one, results included", "[codec][laws]") {
    strata::memory_log log;
    strata::metrics::registry registry;
    const auto bare = [] { return shop_store("shop"); };
    const strata::testing::store_law_options o{.first_seed = 1, .last_seed = 20, .steps = 300};
    SECTION("logged") {
        strata::testing::check_store_decoration_law(
            [&] { return shop_store("shop") | strata::logged(log, shop_codec{}); }, bare, random_update, state, o);
    }
    SECTION("logged | cached (a small cache: evictions mid-history)") {
        strata::testing::check_store_decoration_law(
            [&] {
                return shop_store("shop") | strata::logged(log, shop_codec{}) | strata::cached({.max_bytes = 200});
            },
            bare, random_update, state, o);
    }
    SECTION("logged | cached | metered") {
        strata::testing::check_store_decoration_law(
            [&] {
                return shop_store("shop") | strata::logged(log, shop_codec{}) | strata::cached() |
                       strata::metered(registry);
            },
            bare, random_update, state, o);
    }
}

TEST_CASE("multi_table_codec: restore and crash laws over a two-table store", "[codec][laws][restore]") {
    strata::memory_log log;
    const strata::testing::store_law_options o{.first_seed = 1, .last_seed = 20, .steps = 300};
    SECTION("logged") {
        const auto make = [&] { return shop_store("shop") | strata::logged(log, shop_codec{}); };
        strata::testing::check_store_restore_law(make, random_update, state, o);
        strata::testing::check_store_crash_law(make, [&] { log.drop_unflushed(); }, random_update, state, o);
    }
    SECTION("logged | cached") {
        const auto make = [&] {
            return shop_store("shop") | strata::logged(log, shop_codec{}) | strata::cached({.max_bytes = 200});
        };
        strata::testing::check_store_restore_law(make, random_update, state, o);
        strata::testing::check_store_crash_law(make, [&] { log.drop_unflushed(); }, random_update, state, o);
    }
}

TEST_CASE("multi_table_codec: a record key is the table byte, then the table codec's key", "[codec]") {
    strata::memory_log log;
    auto s = shop_store("shop") | strata::logged(log, shop_codec{});
    REQUIRE(s.apply(add_customer{{7, "Ada", 100}}));
    REQUIRE(s.apply(place_order{{9, 7, 40}}));
    REQUIRE_FALSE(s.apply(place_order{{10, 7, 500}}));  // refused: touched() named no rows, nothing logged
    const auto recs = log.records();
    REQUIRE(recs.size() == 3);
    const auto key_of = [](std::uint8_t table, std::int64_t id) {
        strata::byte_buffer k{std::byte{table}};
        strata::encode(id, k);
        return k;
    };
    CHECK(recs[0].key == key_of(0, 7));
    CHECK(strata::decode<customer>(*recs[0].value) == customer{7, "Ada", 100});
    // place_order changed a row in each table, logged in table order.
    CHECK(recs[1].key == key_of(0, 7));
    CHECK(strata::decode<customer>(*recs[1].value).balance_cents == 60);
    CHECK(recs[2].key == key_of(1, 9));
    CHECK(strata::decode<order>(*recs[2].value) == order{9, 7, 40});

    REQUIRE(s.apply(cancel_order{9}));
    const auto after = log.records();  // a span: taken again to see the new records
    REQUIRE(after.size() == 5);
    CHECK(after[3].key == key_of(0, 7));
    CHECK(strata::decode<customer>(*after[3].value).balance_cents == 100);  // refunded
    CHECK(after[4].key == key_of(1, 9));
    CHECK(after[4].is_tombstone());
    CHECK(shop_codec::key<1>(std::int64_t{9}).index() == 1);
}

TEST_CASE("multi_table_codec: a record of no table is a restore_error naming the table byte", "[codec][bad-input]") {
    strata::memory_log log;
    {
        auto s = shop_store("shop") | strata::logged(log, shop_codec{});
        s.apply(add_customer{{1, "Ada", 100}});
        s.flush();
    }
    strata::byte_buffer bad_key{std::byte{5}};
    strata::encode(std::int64_t{1}, bad_key);
    log.append(strata::record_view{bad_key, std::nullopt});
    log.append(strata::record_view{strata::byte_buffer{}, std::nullopt});
    log.flush();

    shop_store fresh("shop");
    try {
        strata::restore_from(fresh, log, shop_codec{});
        FAIL("restore accepted a record of table 5");
    } catch (const strata::restore_error& e) {
        CHECK(e.offset() == 1);
        CHECK_THAT(e.what(), Catch::Contains("table byte 5, but the codec has 2 table(s)"));
    }
    // The records before the bad one were restored.
    CHECK(fresh.customers().size() == 1);

    shop_store other("shop");
    CHECK_THROWS_WITH(strata::restore_from(other, log, shop_codec{}, {.from = 2}),
                      Catch::Contains("an empty record key has no table byte"));
}
