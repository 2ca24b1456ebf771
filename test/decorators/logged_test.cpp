// The changelog layer: records per update, flush order, checkpoints,
// restore from a checkpoint for persistent stores, failures.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/restore/checkpoint.hpp>

#include <fstream>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <support/temp_dir.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

/// A store that keeps its data across restarts (its "disk" outlives it), and
/// records the calls strata makes to it.
class persistent_store {
public:
    using key_type = std::int64_t;
    using mapped_type = std::string;
    struct disk {
        std::map<std::int64_t, std::string> data;
        std::vector<std::string> calls;
    };
    explicit persistent_store(std::shared_ptr<disk> d) : disk_(std::move(d)) {}

    std::string_view name() const noexcept { return "persistent"; }
    bool persistent() const noexcept { return true; }
    void flush() { disk_->calls.push_back("store.flush"); }

    std::optional<std::string> get(const std::int64_t& k) const {
        auto it = disk_->data.find(k);
        return it == disk_->data.end() ? std::nullopt : std::optional(it->second);
    }
    void put(const std::int64_t& k, const std::string& v) { disk_->data[k] = v; }
    bool erase(const std::int64_t& k) { return disk_->data.erase(k) != 0; }
    bool empty() const noexcept { return disk_->data.empty(); }  // lets restore tell it holds data

private:
    std::shared_ptr<disk> disk_;
};

/// A memory_log that notes when it is flushed.
struct recording_log : strata::memory_log {
    std::vector<std::string>* calls = nullptr;
    strata::offset_t flush() {
        calls->push_back("log.flush");
        return memory_log::flush();
    }
};

}  // namespace

TEST_CASE("each update writes the current state of the key it touched", "[logged]") {
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log);
    s.put(1, "a");
    s.apply(strata::put_op<std::int64_t, std::string>{2, "b"});
    s.put(1, "c");
    REQUIRE(s.erase(2));
    REQUIRE_FALSE(s.erase(3));
    REQUIRE(log.records().size() == 5);
    REQUIRE(strata::decode<std::string>(*log.records()[2].value) == "c");
    REQUIRE(log.records()[3].is_tombstone());
    REQUIRE(log.records()[4].is_tombstone());  // erasing a missing key still logs a harmless tombstone
    REQUIRE(s.records_written() == 5);
}

namespace {
/// Puts k -> v and erases k through a logged store of K -> V, and checks that
/// the two records carry encode(k) and encode(v), then a tombstone.
template <class K, class V>
void check_records_encode(const K& k, const V& v) {
    strata::memory_log log;
    auto s = strata::ordered_map_store<K, V>("s") | strata::logged(log);
    s.put(k, v);
    REQUIRE(s.erase(k));
    REQUIRE(log.records().size() == 2);
    CHECK(log.records()[0].key == strata::encode(k));
    REQUIRE(log.records()[0].value.has_value());
    CHECK(*log.records()[0].value == strata::encode(v));
    CHECK(log.records()[1].key == strata::encode(k));
    CHECK(log.records()[1].is_tombstone());
}
}  // namespace

TEST_CASE("a put's record holds encode(key) and encode(value), whichever way each part is built", "[logged]") {
    using codec_ss = strata::kv_codec<std::string, std::string>;
    using codec_is = strata::kv_codec<std::int64_t, std::string>;
    using codec_bi = strata::kv_codec<strata::byte_buffer, std::int32_t>;
    using codec_iv = strata::kv_codec<std::int64_t, std::vector<std::int64_t>>;
    STATIC_REQUIRE((codec_ss::key_is_raw && codec_ss::mapped_is_raw));
    STATIC_REQUIRE((codec_is::key_is_fixed && codec_is::mapped_is_raw));
    STATIC_REQUIRE((codec_bi::key_is_raw && codec_bi::mapped_is_fixed));
    STATIC_REQUIRE((!codec_iv::mapped_is_raw && !codec_iv::mapped_is_fixed));
    // Views of the strings' own bytes (the log copies them as it appends).
    check_records_encode(std::string("a key longer than the small-string buffer"), std::string(300, 'v'));
    check_records_encode(std::string(""), std::string(""));
    // A fixed-width key on the stack, a raw value.
    check_records_encode(std::int64_t{-42}, std::string("value"));
    // A raw key, a fixed-width value.
    check_records_encode(strata::encode(std::string("bytes")), std::int32_t{7});
    // A vector value: encoded into the layer's buffer.
    check_records_encode(std::int64_t{5}, std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("flush makes the log durable, flushes the store, then checkpoints", "[logged]") {
    test_support::temp_dir dir;
    auto disk = std::make_shared<persistent_store::disk>();
    recording_log log;
    log.calls = &disk->calls;
    const auto checkpoint = dir.path() / "checkpoint";
    auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = checkpoint});
    s.put(1, "one");
    s.put(2, "two");
    REQUIRE(s.flush() == 2);
    REQUIRE(disk->calls == std::vector<std::string>{"log.flush", "store.flush"});
    REQUIRE(strata::checkpoint_file(checkpoint).load("persistent", 0) == strata::offset_t{2});
}

TEST_CASE("a persistent store restores from its checkpoint, an in-memory one from offset 0", "[logged][restore]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    strata::memory_log log;
    auto disk = std::make_shared<persistent_store::disk>();
    {
        auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = checkpoint});
        s.put(1, "one");
        s.put(2, "two");
        s.flush();      // checkpoint: 2
        s.put(3, "three");  // logged, then the process dies before the next flush
        log.flush();        // ...but the changelog got it durably (e.g. flushed by a shared producer)
    }
    disk->data.erase(3);  // the store's own copy of key 3 was not yet on its disk
    {
        auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = checkpoint});
        const auto p = s.restore();
        REQUIRE(p.from == 2);          // only what the checkpoint does not cover
        REQUIRE(p.records_done == 1);
        REQUIRE(s.get(3) == std::optional<std::string>("three"));
        REQUIRE(s.get(1) == std::optional<std::string>("one"));
    }
    {
        auto s = store_t("persistent") | strata::logged(log, {.checkpoint = checkpoint});
        const auto p = s.restore();
        REQUIRE(p.from == 0);  // not persistent: the checkpoint is no help
        REQUIRE(p.records_done == 3);
    }
}

TEST_CASE("a failed changelog flush throws and writes no checkpoint", "[logged]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    strata::memory_log log;
    auto s = persistent_store(std::make_shared<persistent_store::disk>()) | strata::logged(log, {.checkpoint = checkpoint});
    s.put(1, "one");
    log.fail_next_flush();
    REQUIRE_THROWS_AS(s.flush(), strata::changelog_error);
    REQUIRE_FALSE(strata::checkpoint_file(checkpoint).load("persistent").has_value());
    REQUIRE(s.flush() == 1);
    REQUIRE(strata::checkpoint_file(checkpoint).load("persistent") == strata::offset_t{1});
}

TEST_CASE("a changelog given as a temporary is owned by the store", "[logged]") {
    auto s = store_t("s") | strata::logged(strata::memory_log{});
    s.put(1, "one");
    REQUIRE(s.changelog().records().size() == 1);
    auto moved = std::move(s);
    moved.put(2, "two");
    REQUIRE(moved.changelog().records().size() == 2);
}

TEST_CASE("restore reports progress in batches", "[logged][restore]") {
    strata::memory_log log;
    {
        auto s = store_t("s") | strata::logged(log);
        for (std::int64_t k = 0; k < 2500; ++k) s.put(k, "v");
    }
    struct listener {
        std::vector<std::uint64_t> batches;
        strata::offset_t started_to = 0, ended_at = 0;
        void on_restore_start(const strata::restore_progress& p) { started_to = p.to; }
        void on_batch_restored(const strata::restore_progress& p) { batches.push_back(p.records_done); }
        void on_restore_end(const strata::restore_progress& p) { ended_at = p.position; }
    } l;
    auto s = store_t("s") | strata::logged(log, {.restore_progress_every = 1000});
    s.restore(l);
    REQUIRE(l.started_to == 2500);
    REQUIRE(l.batches == std::vector<std::uint64_t>{1000, 2000, 2500});
    REQUIRE(l.ended_at == 2500);
    REQUIRE(s.base().size() == 2500);
}

TEST_CASE("with checkpoint_on_flush off, only save_checkpoint writes the checkpoint", "[logged]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    strata::memory_log log;
    auto s = persistent_store(std::make_shared<persistent_store::disk>()) |
             strata::logged(log, {.checkpoint = checkpoint, .checkpoint_on_flush = false});
    s.put(1, "one");
    const auto durable = s.flush();
    REQUIRE_FALSE(strata::checkpoint_file(checkpoint).load("persistent").has_value());
    s.save_checkpoint(durable);  // e.g. after the transaction that made it count has committed
    REQUIRE(strata::checkpoint_file(checkpoint).load("persistent") == durable);
}

TEST_CASE("an in-memory store neither reads nor writes a checkpoint, so a damaged one does not stop its flushes",
          "[logged]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    {
        std::ofstream damaged(checkpoint, std::ios::binary);
        damaged << "SCKP but not a checkpoint";
    }
    strata::memory_log log;
    auto s = store_t("s") | strata::logged(log, {.checkpoint = checkpoint});
    s.put(1, "one");
    CHECK(s.flush() == 1);  // the changelog flushed, and the store restores from offset 0 anyway
    s.save_checkpoint(1);
    CHECK_THROWS_AS(strata::checkpoint_file(checkpoint).entries(), strata::corruption_error);  // left as it was
    auto rebuilt = store_t("s") | strata::logged(log, {.checkpoint = checkpoint});
    CHECK(rebuilt.restore().from == 0);
    CHECK(rebuilt.get(1) == std::optional<std::string>("one"));

    // A persistent store does rely on it: its flush says what is wrong.
    auto p = persistent_store(std::make_shared<persistent_store::disk>()) | strata::logged(log, {.checkpoint = checkpoint});
    p.put(2, "two");
    CHECK_THROWS_AS(p.flush(), strata::corruption_error);
}

namespace {
/// A memory_log whose next append can be made to fail, as a full disk, a
/// record too large for the log or a broken producer does.
struct refusing_log : strata::memory_log {
    bool refuse_next = false;
    void append(const strata::record_view& r) {
        if (std::exchange(refuse_next, false)) throw strata::changelog_error("no space left on device");
        memory_log::append(r);
    }
};
}  // namespace

TEST_CASE("an update whose record cannot be logged fails the stack: nothing later is reported durable",
          "[logged]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    refusing_log log;
    auto disk = std::make_shared<persistent_store::disk>();
    auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = checkpoint});
    s.put(1, "one");
    REQUIRE(s.flush() == 1);

    // The put reaches the store, its record does not reach the log.
    log.refuse_next = true;
    try {
        s.put(2, "two");
        FAIL("the put did not throw");
    } catch (const strata::changelog_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'persistent'") != std::string::npos);           // the store
        CHECK(what.find("0x0000000000000002") != std::string::npos);     // the key (an int64, in hex)
        CHECK(what.find("bytes") != std::string::npos);                  // the record's size
        CHECK(what.find("no space left on device") != std::string::npos);  // the cause
    }
    CHECK(s.failed());

    // The store is ahead of its changelog: nothing may be called durable any
    // more, not even records that were logged before.
    log.refuse_next = false;
    CHECK_THROWS_AS(s.flush(), strata::changelog_error);
    CHECK_THROWS_AS(s.save_checkpoint(1), strata::changelog_error);
    CHECK_THROWS_AS(s.put(3, "three"), strata::changelog_error);
    CHECK_FALSE(s.get(3).has_value());  // a refused update does not reach the store
    CHECK(strata::checkpoint_file(checkpoint).load("persistent") == strata::offset_t{1});

    // Rebuilt from the changelog, the store holds exactly what was logged.
    auto rebuilt = store_t("persistent") | strata::logged(log);
    rebuilt.restore();
    CHECK(rebuilt.get(1) == std::optional<std::string>("one"));
    CHECK_FALSE(rebuilt.get(2).has_value());
    CHECK_FALSE(rebuilt.failed());
}

TEST_CASE("under the cache, a dirty entry that cannot be logged fails the stack at the flush", "[logged][cached]") {
    refusing_log log;
    auto s = store_t("s") | strata::logged(log) | strata::cached();
    s.put(1, "one");
    s.put(2, "two");
    log.refuse_next = true;
    CHECK_THROWS_AS(s.flush(), strata::changelog_error);
    // Every later flush says why, instead of reporting a durable offset.
    try {
        (void)s.flush();
        FAIL("the second flush did not throw");
    } catch (const strata::changelog_error& e) {
        CHECK(std::string(e.what()).find("must be rebuilt") != std::string::npos);
    }
}

TEST_CASE("a checkpoint past the changelog's end stops the restore with an error that says so", "[logged][restore]") {
    test_support::temp_dir dir;
    const auto checkpoint = dir.path() / "checkpoint";
    auto disk = std::make_shared<persistent_store::disk>();
    {
        strata::memory_log log;
        auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = checkpoint});
        s.put(1, "one");
        s.put(2, "two");
        REQUIRE(s.flush() == 2);  // checkpoint: 2
    }
    // The changelog lost what it had made durable: a shorter one stands in for it.
    strata::memory_log shorter;
    auto s = persistent_store(disk) | strata::logged(shorter, {.checkpoint = checkpoint});
    try {
        (void)s.restore();
        FAIL("the restore did not throw");
    } catch (const strata::restore_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'persistent'") != std::string::npos);
        CHECK(what.find("below 2") != std::string::npos);
        CHECK(what.find("ends at 0") != std::string::npos);
        CHECK(what.find(checkpoint.string()) != std::string::npos);
    }
    // The checkpoint still names what was lost.
    CHECK(strata::checkpoint_file(checkpoint).load("persistent") == strata::offset_t{2});
}

TEST_CASE("restore from offset 0 into a store that already holds data is refused and changes nothing",
          "[logged][restore]") {
    strata::memory_log log;
    {
        auto s = store_t("s") | strata::logged(log);
        s.put(1, "one");
        s.flush();
    }
    SECTION("an in-memory store with data of its own") {
        store_t filled("s");
        filled.put(7, "seven");  // state the changelog does not describe
        auto s = std::move(filled) | strata::logged(log);
        CHECK_THROWS_WITH(s.restore(), Catch::Contains("store 's'") && Catch::Contains("already holds data") &&
                                           Catch::Contains("it keeps no checkpoint") &&
                                           Catch::Contains("Nothing was restored"));
        CHECK(s.get(7) == "seven");
        CHECK_FALSE(s.get(1).has_value());
    }
    SECTION("a persistent store with data but no checkpoint entry") {
        test_support::temp_dir dir;
        auto disk = std::make_shared<persistent_store::disk>();
        disk->data[9] = "nine";
        auto s = persistent_store(disk) | strata::logged(log, {.checkpoint = dir.path() / "checkpoint"});
        CHECK_THROWS_WITH(s.restore(), Catch::Contains("the checkpoint " + (dir.path() / "checkpoint").string() +
                                                       " names no offset"));
        CHECK(disk->data.size() == 1);
    }
    SECTION("an empty store restores") {
        auto s = store_t("s") | strata::logged(log);
        CHECK(s.restore().records_done == 1);
        CHECK(s.get(1) == "one");
    }
}
