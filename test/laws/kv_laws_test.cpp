// The laws every kv store and every decorator stack over one must keep:
// - get after put returns the value; get after erase returns nothing
// - a decorated store behaves as the bare one (checked against a model map
//   after every operation of randomized histories)
// - restore(changelog(history)) == state(history), also from a compacted log
// - after a crash between two flushes, restore gives the state of the last flush

#include <catch2/catch.hpp>

#include "kv_history.hpp"
#include "stacks.hpp"

using namespace laws;

TEMPLATE_LIST_TEST_CASE("kv law: get after put returns the value, after erase nothing", "[laws][kv]", kv_stacks) {
    env e;
    auto s = TestType::make(e);
    static_assert(strata::kv_store<decltype(s)>);
    REQUIRE_FALSE(s.get(7).has_value());
    s.put(7, "seven");
    REQUIRE(s.get(7) == std::optional<std::string>("seven"));
    s.put(7, "SEVEN");
    REQUIRE(s.get(7) == std::optional<std::string>("SEVEN"));
    s.put(8, "eight");
    REQUIRE(s.erase(7));
    REQUIRE_FALSE(s.get(7).has_value());
    REQUIRE_FALSE(s.erase(7));
    REQUIRE(s.get(8) == std::optional<std::string>("eight"));
}

TEMPLATE_LIST_TEST_CASE("kv law: a decorated store behaves as the bare one", "[laws][kv]", kv_stacks) {
    kv_model_law<TestType>(1, 12, 400);
}

TEMPLATE_LIST_TEST_CASE("kv law: restore of the changelog of a history gives its state", "[laws][kv][restore]",
                        with_changelog_t<kv_stacks>) {
    kv_restore_law<TestType>(100, 110, 500);
}

TEMPLATE_LIST_TEST_CASE("kv law: after a crash between two flushes, restore gives the state of the last flush",
                        "[laws][kv][restore][crash]", with_changelog_t<kv_stacks>) {
    int lost = 0;
    for (std::uint64_t seed = 200; seed <= 205; ++seed) {
        INFO("seed " << seed);
        // A flush at about one step in forty, so most histories end with
        // updates no flush covered.
        lost += check_crash_law<TestType, kv_model>(
            [&](auto& s, kv_model& m, auto flushed) {
                run_kv_history(s, m, seed, 300, {.flush_one_in = 4}, flushed);
            },
            [](const auto& s, const kv_model& m) { REQUIRE(contents_of(s) == m); });
    }
    REQUIRE(lost > 0);  // the crashes did lose updates: this is not a clean stop
}
