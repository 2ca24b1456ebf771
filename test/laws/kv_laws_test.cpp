// The laws every kv store and every decorator stack over one must keep:
// - get after put returns the value; get after erase returns nothing
// - a decorated store behaves as the bare one (checked against a model map
//   after every operation of randomized histories)
// - restore(changelog(history)) == state(history), also from a compacted log

#include <catch2/catch.hpp>

#include "stacks.hpp"

#include <map>
#include <random>
#include <ranges>

using namespace laws;

namespace {

using model = std::map<std::int64_t, std::string>;

template <class S>
model contents(const S& s) {
    model m;
    for (const auto& [k, v] : s.all()) m.emplace(k, v);
    return m;
}

/// A random history over few keys, so that overwrites and deletes of
/// existing keys are common. Checks every result against the model.
template <class S>
void run_history(S& s, model& m, std::uint64_t seed, int steps) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> key(-20, 40);
    std::uniform_int_distribution<int> op(0, 9), len(0, 40);
    for (int i = 0; i < steps; ++i) {
        const std::int64_t k = key(rng);
        switch (op(rng)) {
            case 0:
            case 1: {  // erase
                const bool existed = m.erase(k) != 0;
                REQUIRE(s.erase(k) == existed);
                break;
            }
            case 2: {  // the same through apply
                m.erase(k);
                s.apply(strata::erase_op<std::int64_t>{k});
                break;
            }
            case 3: {
                std::string v(static_cast<std::size_t>(len(rng)), static_cast<char>('a' + i % 26));
                m[k] = v;
                s.apply(strata::put_op<std::int64_t, std::string>{k, v});
                break;
            }
            case 4:
            case 5: {
                const auto expected = m.contains(k) ? std::optional(m[k]) : std::nullopt;
                REQUIRE(s.get(k) == expected);
                break;
            }
            case 6:
                if constexpr (requires { s.flush(); }) s.flush();
                break;
            default: {
                std::string v = std::to_string(i) + std::string(static_cast<std::size_t>(len(rng)), 'x');
                m[k] = v;
                s.put(k, v);
            }
        }
    }
}

}  // namespace

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
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        env e;
        auto s = TestType::make(e);
        model m;
        run_history(s, m, seed, 400);
        REQUIRE(contents(s) == m);
    }
}

TEMPLATE_LIST_TEST_CASE("kv law: restore of the changelog of a history gives its state", "[laws][kv][restore]",
                        kv_stacks) {
    using stack = decltype(TestType::make(std::declval<env&>()));
    if constexpr (!strata::has_layer_v<stack, strata::layer_kind::logged>) {
        SUCCEED("no changelog in this stack");
    } else {
        for (std::uint64_t seed = 100; seed <= 110; ++seed) {
            env e;
            model m;
            {
                auto s = TestType::make(e);
                run_history(s, m, seed, 500);
                s.flush();
            }
            if (e.file) e.file.reset();  // reopen the file log from disk
            {
                auto fresh = TestType::make(e);
                const auto progress = fresh.restore();
                REQUIRE(contents(fresh) == m);
                REQUIRE(progress.records_done > 0);
            }
            // Latest record per key is enough: compaction keeps restore exact.
            if (e.file) e.file_log().compact();
            else e.log.compact();
            {
                auto fresh = TestType::make(e);
                fresh.restore();
                REQUIRE(contents(fresh) == m);
            }
        }
    }
}
