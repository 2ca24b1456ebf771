// The cache's entry table against std::unordered_map: random inserts,
// erases and clears keep the same set of keys, entries keep their address
// while in the table, and erased entries are reused.

#include <strata/decorators/detail/entry_table.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

template <class K>
struct entry {
    K key{};
    std::size_t hash = 0;
    std::uint32_t table_index = 0;
    int payload = 0;
};

/// A hash that sends every key to a few homes, so runs are long and erase
/// has to shift slots back across them (and around the table's end).
struct clustering_hash {
    std::size_t operator()(std::uint64_t k) const noexcept { return k % 3; }
};

template <class K, class Hash, class MakeKey>
void check_against_model(std::uint32_t seed, std::uint64_t key_space, MakeKey make_key) {
    strata::detail::entry_table<entry<K>, K, Hash> table;
    std::unordered_map<K, entry<K>*> model;  // key -> the entry the table handed out
    std::mt19937_64 rng(seed);
    for (int step = 0; step < 20'000; ++step) {
        const K k = make_key(rng() % key_space);
        const auto what = rng() % 100;
        if (what < 60) {
            auto [e, inserted] = table.find_or_insert(k);
            const auto it = model.find(k);
            REQUIRE(inserted == (it == model.end()));
            REQUIRE(e->key == k);
            if (inserted) {
                e->payload = step;
                model.emplace(k, e);
            } else {
                REQUIRE(it->second == e);  // same entry, same address
            }
        } else if (what < 99) {
            const auto it = model.find(k);
            if (it == model.end()) continue;
            table.erase(*it->second);
            model.erase(it);
        } else {
            table.clear();
            model.clear();
        }
        REQUIRE(table.size() == model.size());
    }
    // Every key still in the model is found, with the payload it was given.
    for (const auto& [k, e] : model) {
        auto [found, inserted] = table.find_or_insert(k);
        CHECK_FALSE(inserted);
        CHECK(found == e);
    }
}

}  // namespace

TEST_CASE("entry table: the same keys as a map, over random inserts, erases and clears", "[cached]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    SECTION("integer keys, std::hash") {
        check_against_model<std::uint64_t, std::hash<std::uint64_t>>(seed, 5'000, [](std::uint64_t n) { return n; });
    }
    SECTION("integer keys that collide into long runs") {
        check_against_model<std::uint64_t, clustering_hash>(seed, 300, [](std::uint64_t n) { return n; });
    }
    SECTION("string keys") {
        check_against_model<std::string, std::hash<std::string>>(
            seed, 2'000, [](std::uint64_t n) { return "key-" + std::to_string(n) + std::string(n % 40, 'x'); });
    }
}

TEST_CASE("entry table: an erased entry is reused, a cleared table starts from its first entry", "[cached]") {
    strata::detail::entry_table<entry<std::uint64_t>, std::uint64_t, std::hash<std::uint64_t>> table;
    auto* a = table.find_or_insert(1).first;
    auto* b = table.find_or_insert(2).first;
    table.erase(*a);
    CHECK(table.find_or_insert(3).first == a);  // the pool hands a back
    CHECK(table.size() == 2);
    table.clear();
    CHECK(table.empty());
    CHECK(table.find_or_insert(4).first == a);
    CHECK(table.find_or_insert(5).first == b);
}
