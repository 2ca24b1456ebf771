// The open-addressing table under hash_map_store, against std::unordered_map
// as the model: random inserts, overwrites and erases, with hashes good and
// bad (every key in one run of slots exercises the backward shift of erase).
#include <strata/stores/detail/flat_map.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct constant_hash {
    std::size_t operator()(std::uint64_t) const noexcept { return 42; }
};
// Keys that differ only above the low 20 bits share their low bits: a table
// that took the slot from the raw hash would put them all in one run.
struct high_bits_hash {
    std::size_t operator()(std::uint64_t k) const noexcept { return k << 20; }
};

template <class Map, class Model>
void require_same(const Map& map, const Model& model) {
    REQUIRE(map.size() == model.size());
    std::size_t visited = 0;
    for (const auto& [key, value] : map) {
        ++visited;
        const auto it = model.find(key);
        REQUIRE(it != model.end());
        REQUIRE(it->second == value);
    }
    REQUIRE(visited == model.size());
    for (const auto& [key, value] : model) {
        const auto it = map.find(key);
        REQUIRE(it != map.end());
        REQUIRE(it->second == value);
    }
}

template <class Hash>
void random_history(std::uint64_t key_space, int steps, std::uint32_t seed) {
    strata::detail::flat_map<std::uint64_t, std::string, Hash> map;
    std::unordered_map<std::uint64_t, std::string> model;
    std::mt19937_64 rng(seed);
    for (int step = 0; step < steps; ++step) {
        const std::uint64_t key = rng() % key_space;
        const auto roll = rng() % 10;
        if (roll < 6) {
            std::string value = "value-" + std::to_string(rng() % 1000) + std::string(rng() % 40, 'x');
            const bool inserted = map.insert_or_assign(key, value).second;
            REQUIRE(inserted == model.insert_or_assign(key, value).second);
        } else if (roll < 9) {
            REQUIRE(map.erase(key) == model.erase(key));
        } else {
            const auto it = map.find(key);
            const auto m = model.find(key);
            REQUIRE((it == map.end()) == (m == model.end()));
            if (m != model.end()) REQUIRE(it->second == m->second);
        }
        if (step % 500 == 0) require_same(map, model);
    }
    require_same(map, model);
    auto copy = map;
    require_same(copy, model);
    REQUIRE(copy == map);
    for (const auto& [key, value] : model) REQUIRE(map.erase(key) == 1);
    REQUIRE(map.empty());
    REQUIRE(map.begin() == map.end());
    REQUIRE_FALSE(copy == map);
}

}  // namespace

TEST_CASE("flat_map: random history equals std::unordered_map, good hash", "[flat_map]") {
    random_history<std::hash<std::uint64_t>>(5'000, 60'000, 1);
    random_history<std::hash<std::uint64_t>>(200, 20'000, 2);
}

TEST_CASE("flat_map: random history equals std::unordered_map, every key colliding", "[flat_map]") {
    random_history<constant_hash>(300, 20'000, 3);
}

TEST_CASE("flat_map: random history equals std::unordered_map, hash bits only high", "[flat_map]") {
    random_history<high_bits_hash>(5'000, 40'000, 4);
}

TEST_CASE("flat_map: stays at most 3/4 full and reserve avoids growth", "[flat_map]") {
    strata::detail::flat_map<std::uint64_t, std::uint64_t> map;
    for (std::uint64_t k = 0; k < 10'000; ++k) {
        map.insert_or_assign(k, k);
        REQUIRE(map.size() * 4 <= map.capacity() * 3);
    }
    strata::detail::flat_map<std::uint64_t, std::uint64_t> reserved;
    reserved.reserve(10'000);
    const auto capacity = reserved.capacity();
    REQUIRE(capacity * 3 >= 10'000 * 4);
    for (std::uint64_t k = 0; k < 10'000; ++k) reserved.insert_or_assign(k, k);
    REQUIRE(reserved.capacity() == capacity);
    REQUIRE(reserved == map);
    reserved.clear();
    REQUIRE(reserved.empty());
    REQUIRE(reserved.capacity() == capacity);
    REQUIRE(reserved.find(7) == reserved.end());
}

TEST_CASE("flat_map: try_emplace builds only an absent entry, and moves leave the source empty", "[flat_map]") {
    strata::detail::flat_map<std::string, std::string> map;
    auto [it, inserted] = map.try_emplace(std::string("k"), "first");
    REQUIRE(inserted);
    REQUIRE(it->second == "first");
    auto [again, inserted_again] = map.try_emplace(std::string("k"), "second");
    REQUIRE_FALSE(inserted_again);
    REQUIRE(again->second == "first");

    auto moved = std::move(map);
    REQUIRE(moved.size() == 1);
    REQUIRE(moved.find("k")->second == "first");
    REQUIRE(map.empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
    map.insert_or_assign(std::string("other"), std::string("v"));
    REQUIRE(map.size() == 1);
}

TEST_CASE("hash_map_store: a restore's overwrite reuses the key's value in place", "[flat_map]") {
    strata::hash_map_store<std::string, std::string> store("s");
    store.put("a", "1");
    store.value_for_overwrite(std::string("a")) = "2";
    store.value_for_overwrite(std::string("b")) = "3";
    REQUIRE(store.get("a") == "2");
    REQUIRE(store.get("b") == "3");
    REQUIRE(store.size() == 2);
    const std::vector<std::string> keys{"a", "b", "missing"};
    store.prefetch(keys);  // a hint only: the contents stay
    REQUIRE(store.size() == 2);
}
