// Building stacks: pipes, direct calls, policies, decorate, and reaching
// through a stack with base, layer, innermost and query.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <string>
#include <type_traits>

namespace {
using store_t = strata::ordered_map_store<std::int64_t, std::string>;
}

TEST_CASE("decorate puts layers given in any order into the canonical order", "[composition]") {
    strata::memory_log log;
    strata::metrics::registry reg;
    using by_hand = decltype(store_t("s") | strata::logged(log) | strata::cached() | strata::metered(reg));
    using decorated =
        decltype(strata::decorate(store_t("s"), strata::cached(), strata::metered(reg), strata::logged(log)));
    using with_policy =
        decltype(strata::decorate(store_t("s"), strata::cached() | strata::metered(reg), strata::logged(log)));
    STATIC_REQUIRE(std::is_same_v<by_hand, decorated>);
    STATIC_REQUIRE(std::is_same_v<by_hand, with_policy>);

    auto s = strata::decorate(store_t("s"), strata::metered(reg), strata::logged(log), strata::cached());
    s.put(1, "one");
    s.flush();
    REQUIRE(log.records().size() == 1);
}

TEST_CASE("a policy composed once decorates many stores", "[composition]") {
    strata::metrics::registry reg;
    const auto policy = strata::cached({.max_bytes = 1 << 20}) | strata::metered(reg);
    strata::memory_log a_log, b_log;
    auto a = store_t("a") | strata::logged(a_log) | policy;
    auto b = strata::hash_map_store<std::int64_t, std::string>("b") | strata::logged(b_log) | policy;
    a.put(1, "x");
    b.put(1, "y");
    a.flush();
    b.flush();
    REQUIRE(a_log.records().size() == 1);
    REQUIRE(b_log.records().size() == 1);
    REQUIRE(strata::layer<strata::cached_store>(a).options().max_bytes == 1 << 20);
}

TEST_CASE("direct calls are the same as pipes", "[composition]") {
    strata::memory_log log;
    strata::metrics::registry reg;
    auto s = strata::metered(strata::cached(strata::logged(store_t("s"), log)), reg);
    STATIC_REQUIRE(std::is_same_v<decltype(s), decltype(store_t("s") | strata::logged(log) | strata::cached() |
                                                        strata::metered(reg))>);
    s.put(1, "one");
    REQUIRE(s.get(1) == std::optional<std::string>("one"));
}

TEST_CASE("base, layer, innermost and query reach through a stack", "[composition]") {
    strata::memory_log log;
    strata::metrics::registry reg;
    auto s = store_t("s") | strata::logged(log) | strata::cached() | strata::metered(reg);
    s.put(1, "one");
    s.put(2, "two");

    store_t& user = strata::layer<store_t>(s);
    REQUIRE(user.size() == 2);
    REQUIRE(&strata::innermost(s) == &user);
    REQUIRE(&s.base().base().base() == &user);
    STATIC_REQUIRE(std::is_same_v<decltype(std::as_const(s).base()), const decltype(s)::inner_type&>);
    STATIC_REQUIRE(std::is_same_v<decltype(std::move(s).base()), decltype(s)::inner_type&&>);

    REQUIRE(strata::layer<strata::logged_store>(s).records_written() == 0);  // held by the cache...
    REQUIRE(strata::layer<strata::cached_store>(s).dirty_count() == 2);
    s.flush();
    REQUIRE(strata::layer<strata::logged_store>(s).records_written() == 2);  // ...until the flush
    REQUIRE(strata::layer<strata::cached_store>(s).dirty_count() == 0);

    const auto total_length = s.query([](const store_t& t) {
        std::size_t n = 0;
        for (const auto& [k, v] : t.all()) n += v.size();
        return n;
    });
    REQUIRE(total_length == 6);
    // query is read-only: the callable sees a const store.
    s.query([](auto& t) { STATIC_REQUIRE(std::is_const_v<std::remove_reference_t<decltype(t)>>); });
}

TEST_CASE("decorated kv stores still model the kv concepts", "[composition]") {
    strata::memory_log log;
    strata::metrics::registry reg;
    using full = decltype(store_t("s") | strata::logged(log) | strata::cached() | strata::metered(reg));
    STATIC_REQUIRE(strata::ordered_kv_store<full>);
    STATIC_REQUIRE(strata::decorator<full>);
    STATIC_REQUIRE_FALSE(strata::decorator<store_t>);
    STATIC_REQUIRE(strata::has_layer_v<full, strata::layer_kind::cached>);
    STATIC_REQUIRE_FALSE(strata::has_layer_v<decltype(store_t("s") | strata::metered(reg)), strata::layer_kind::logged>);
}
