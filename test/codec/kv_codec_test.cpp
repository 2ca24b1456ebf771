// kv_codec: the changelog codec of kv stores, derived from serdes. Checked
// against a small map-backed store: record layout (Kafka-compatible keys),
// tombstones, and the restore law on full and compacted changelogs.

#include <strata/codec/kv_codec.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace std::string_literals;
using strata::byte_buffer;
using strata::encode;
using strata::erase_op;
using strata::kv_codec;
using strata::put_op;
using strata::record;
using strata::record_view;
using strata::serde_error;

namespace {

struct reading {
    BOOST_HANA_DEFINE_STRUCT(reading, (double, value), (std::optional<std::string>, unit));
    friend bool operator==(const reading&, const reading&) = default;
};

/// The smallest thing that is a kv_store: a std::map behind the interface.
template <class K, class V>
class map_store {
public:
    using key_type = K;
    using mapped_type = V;

    [[nodiscard]] std::string_view name() const { return "map"; }
    [[nodiscard]] std::optional<V> get(const K& k) const {
        auto it = map_.find(k);
        if (it == map_.end()) return std::nullopt;
        return it->second;
    }
    void put(const K& k, const V& v) { map_[k] = v; }
    bool erase(const K& k) { return map_.erase(k) > 0; }
    void apply(const put_op<K, V>& u) { put(u.key, u.value); }
    void apply(const erase_op<K>& u) { static_cast<void>(erase(u.key)); }

    [[nodiscard]] const std::map<K, V>& contents() const { return map_; }

private:
    std::map<K, V> map_;
};

byte_buffer bytes(std::initializer_list<unsigned> values) {
    byte_buffer out;
    for (unsigned v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}

/// What a logging layer does with one update: ask which keys it touches,
/// apply it, then write each touched key's current state as a record.
template <class C, class S, class U>
void apply_and_log(const C& codec, S& store, const U& u, std::vector<record>& log) {
    std::vector<typename C::key_type> keys;
    for (const auto& k : codec.touched(store, u)) keys.push_back(k);
    store.apply(u);
    for (const auto& k : keys) {
        record r;
        codec.write_key(k, r.key);
        byte_buffer value;
        if (codec.write_value(store, k, value)) r.value = std::move(value);
        r.offset = log.size();
        log.push_back(std::move(r));
    }
}

/// The latest record of every key, in offset order: what compaction keeps.
std::vector<record> compact(const std::vector<record>& log) {
    std::map<byte_buffer, std::size_t> latest;
    for (std::size_t i = 0; i < log.size(); ++i) latest[log[i].key] = i;
    std::vector<std::size_t> keep;
    for (const auto& [key, i] : latest) keep.push_back(i);
    std::sort(keep.begin(), keep.end());
    std::vector<record> out;
    for (std::size_t i : keep) out.push_back(log[i]);
    return out;
}

template <class C, class S>
S restored(const C& codec, const std::vector<record>& log) {
    S fresh;
    for (const auto& r : log) codec.restore(fresh, r.view());
    return fresh;
}

using string_store = map_store<std::string, std::int64_t>;
using long_store = map_store<std::int64_t, reading>;

}  // namespace

TEST_CASE("kv_codec models the codec concepts for every matching kv store", "[codec][kv_codec]") {
    using C = kv_codec<std::string, std::int64_t>;
    STATIC_REQUIRE(strata::kv_store<string_store>);
    STATIC_REQUIRE(strata::changelog_codec<C, string_store>);
    STATIC_REQUIRE(strata::changelog_codec_for<C, string_store, put_op<std::string, std::int64_t>>);
    STATIC_REQUIRE(strata::changelog_codec_for<C, string_store, erase_op<std::string>>);
    STATIC_REQUIRE(std::is_same_v<C::key_type, std::string>);
    STATIC_REQUIRE(std::is_same_v<strata::kv_codec_of<long_store>, kv_codec<std::int64_t, reading>>);
    STATIC_REQUIRE(strata::changelog_codec_for<strata::kv_codec_of<long_store>, long_store, erase_op<std::int64_t>>);
    // A store of other key or value types is not this codec's.
    STATIC_REQUIRE_FALSE(strata::changelog_codec<C, long_store>);
    STATIC_REQUIRE_FALSE(strata::changelog_codec<C, map_store<std::string, std::int32_t>>);
    // Updates of other types are not known to touch anything.
    STATIC_REQUIRE_FALSE(strata::changelog_codec_for<C, string_store, put_op<std::string, std::int32_t>>);
}

TEST_CASE("touched is the update's own key, not a copy", "[codec][kv_codec]") {
    const kv_codec<std::string, std::int64_t> codec;
    const string_store store;
    const put_op<std::string, std::int64_t> put{"k", 1};
    const auto put_keys = codec.touched(store, put);
    REQUIRE(put_keys.size() == 1);
    CHECK(&put_keys[0] == &put.key);

    const erase_op<std::string> erase{"gone"};
    const auto erase_keys = codec.touched(store, erase);
    REQUIRE(erase_keys.size() == 1);
    CHECK(&erase_keys[0] == &erase.key);
    CHECK(erase_keys[0] == "gone");
}

TEST_CASE("record keys are written the way Kafka's serializers write them", "[codec][kv_codec]") {
    byte_buffer key;
    kv_codec<std::string, std::int64_t>{}.write_key("abc"s, key);
    CHECK(key == bytes({0x61, 0x62, 0x63}));  // StringSerializer: raw bytes

    byte_buffer long_key;
    kv_codec<std::int64_t, reading>{}.write_key(-1, long_key);
    CHECK(long_key == bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));  // LongSerializer

    byte_buffer int_key = bytes({0xaa});  // write_key appends
    kv_codec<std::int32_t, std::string>{}.write_key(1, int_key);
    CHECK(int_key == bytes({0xaa, 0, 0, 0, 1}));
}

TEST_CASE("write_value writes the current value, or reports a tombstone", "[codec][kv_codec]") {
    const kv_codec<std::string, std::int64_t> codec;
    string_store store;
    store.put("present", 258);

    byte_buffer value;
    CHECK(codec.write_value(store, "present"s, value));
    CHECK(value == bytes({0, 0, 0, 0, 0, 0, 1, 2}));

    byte_buffer none;
    CHECK_FALSE(codec.write_value(store, "absent"s, none));
    CHECK(none.empty());

    // A string value at the top level is raw, like the key.
    map_store<std::int32_t, std::string> names;
    names.put(7, "seven");
    byte_buffer name;
    CHECK(kv_codec<std::int32_t, std::string>{}.write_value(names, 7, name));
    CHECK(name == bytes({0x73, 0x65, 0x76, 0x65, 0x6e}));
}

TEST_CASE("restore puts values and erases on tombstones", "[codec][kv_codec]") {
    const kv_codec<std::string, std::int64_t> codec;
    string_store store;
    store.put("old", 1);

    const byte_buffer k = encode("new"s);
    const byte_buffer v = encode(std::int64_t{42});
    codec.restore(store, record_view{k, v, 0});
    CHECK(store.get("new") == 42);

    const byte_buffer old_key = encode("old"s);
    codec.restore(store, record_view{old_key, std::nullopt, 1});
    CHECK_FALSE(store.get("old").has_value());

    // A tombstone for a key that is not there is fine.
    const byte_buffer never = encode("never"s);
    CHECK_NOTHROW(codec.restore(store, record_view{never, std::nullopt, 2}));
    CHECK(store.contents().size() == 1);
}

TEST_CASE("restore from the changelog of a history gives the state it left", "[codec][kv_codec]") {
    const strata::kv_codec_of<long_store> codec;
    long_store live;
    std::vector<record> log;
    using put = put_op<std::int64_t, reading>;
    using erase = erase_op<std::int64_t>;

    apply_and_log(codec, live, put{1, {20.5, "C"s}}, log);
    apply_and_log(codec, live, put{2, {3.0, std::nullopt}}, log);
    apply_and_log(codec, live, put{1, {21.0, "C"s}}, log);
    apply_and_log(codec, live, erase{2}, log);
    apply_and_log(codec, live, put{-3, {-0.0, ""s}}, log);
    apply_and_log(codec, live, erase{99}, log);  // erasing a missing key
    apply_and_log(codec, live, put{2, {4.0, "F"s}}, log);
    apply_and_log(codec, live, erase{-3}, log);
    for (std::int64_t i = 10; i < 60; ++i)
        apply_and_log(codec, live, put{i % 7 + 100, {static_cast<double>(i), std::to_string(i)}}, log);

    REQUIRE(log.size() == 58);
    CHECK(log[3].is_tombstone());
    CHECK(log[3].key == encode(std::int64_t{2}));

    const long_store from_full = restored<strata::kv_codec_of<long_store>, long_store>(codec, log);
    CHECK(from_full.contents() == live.contents());

    const std::vector<record> compacted = compact(log);
    CHECK(compacted.size() == 11);  // keys 1, 2, -3, 99 and 100..106
    const long_store from_compacted = restored<strata::kv_codec_of<long_store>, long_store>(codec, compacted);
    CHECK(from_compacted.contents() == live.contents());
    CHECK(from_compacted.get(1) == reading{21.0, "C"s});
    CHECK_FALSE(from_compacted.get(-3).has_value());
}

TEST_CASE("restore rejects records that are not this store's types", "[codec][kv_codec]") {
    const kv_codec<std::int64_t, reading> codec;
    long_store store;

    const byte_buffer short_key = bytes({0, 1});
    const byte_buffer value = encode(reading{1.0, std::nullopt});
    CHECK_THROWS_WITH(codec.restore(store, record_view{short_key, value, 0}),
                      Catch::Contains("std::int64_t") && Catch::Contains("byte offset 0"));

    const byte_buffer key = encode(std::int64_t{5});
    byte_buffer bad_value = value;
    bad_value.back() = std::byte{7};  // the optional's presence byte
    CHECK_THROWS_AS(codec.restore(store, record_view{key, bad_value, 0}), serde_error);
    CHECK_THROWS_WITH(codec.restore(store, record_view{key, bad_value, 0}),
                      Catch::Contains("reading") && Catch::Contains("byte offset 8"));
    CHECK(store.contents().empty());  // nothing half-restored
}
