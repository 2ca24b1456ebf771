// The public law checkers (strata/testing/kv_laws.hpp): they pass over
// strata's own stacks, and catch a store, a codec or a changelog that
// breaks a law.

#include <strata/testing/kv_laws.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>

namespace {

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

std::int64_t key(std::mt19937_64& r) { return static_cast<std::int64_t>(r() % 30); }
std::string value(std::mt19937_64& r) { return std::string(r() % 20, static_cast<char>('a' + r() % 26)); }

/// A store whose erase forgets to report that the key was there.
class lying_erase : public store_t {
public:
    using store_t::store_t;
    bool erase(const std::int64_t& k) {
        (void)store_t::erase(k);
        return false;
    }
};

/// A changelog that loses every tombstone: restore brings deleted keys back.
struct tombstone_dropping_log : strata::memory_log {
    strata::offset_t append(const strata::record_view& r) {
        if (!r.value) return end_offset();
        return memory_log::append(r);
    }
};

}  // namespace

TEST_CASE("the public kv laws hold over strata's own stack", "[testing][laws]") {
    strata::memory_log log;
    strata::metrics::registry registry;
    auto make = [&] {
        return store_t("s") | strata::logged(log) | strata::cached({.max_bytes = 500}) | strata::metered(registry);
    };
    const strata::testing::kv_law_options o{.first_seed = 1, .last_seed = 5, .steps = 400};
    strata::testing::check_kv_model_law(make, key, value, o);
    strata::memory_log restore_log;  // the restore law wants a changelog that starts empty
    auto make_restoring = [&] {
        return store_t("s") | strata::logged(restore_log) | strata::cached({.max_bytes = 500}) |
               strata::metered(registry);
    };
    strata::testing::check_kv_restore_law(make_restoring, key, value, o);
    strata::memory_log crash_log;
    auto make_crashing = [&] { return store_t("s") | strata::logged(crash_log) | strata::cached({.max_bytes = 500}); };
    strata::testing::check_kv_crash_law(make_crashing, [&] { crash_log.drop_unflushed(); }, key, value, o);
}

TEST_CASE("the public kv laws catch a store that breaks them", "[testing][laws]") {
    auto make = [] { return lying_erase("s"); };
    REQUIRE_THROWS_WITH(strata::testing::check_kv_model_law(make, key, value),
                        Catch::Contains("a decorated store behaves as the bare one") &&
                            Catch::Contains("erase of a present key returned false"));
}

TEST_CASE("the public kv laws catch a changelog that drops tombstones", "[testing][laws]") {
    tombstone_dropping_log log;
    auto make = [&] { return store_t("s") | strata::logged(log); };
    REQUIRE_THROWS_WITH(strata::testing::check_kv_restore_law(make, key, value),
                        Catch::Contains("restore of the changelog of a history gives its state"));
}

TEST_CASE("the public kv laws catch a changelog whose flush makes nothing durable", "[testing][laws]") {
    strata::memory_log log;
    auto make = [&] { return store_t("s") | strata::logged(log); };
    // The crash forgets everything, flushed or not.
    REQUIRE_THROWS_WITH(strata::testing::check_kv_crash_law(
                            make, [&] { log = strata::memory_log{}; }, key, value),
                        Catch::Contains("state of the last flush"));
}
