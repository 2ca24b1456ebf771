// restore_from over a changelog whose replay hands over batches
// (next_batch, as kafka::changelog's does): the store ends up as a
// record-by-record restore leaves it, every key is announced to the store
// (prefetch) before its record is applied, progress comes every
// progress_every records whatever the batch sizes, and a bad record names its
// offset with everything before it applied and nothing after.

#include <catch2/catch.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/codec/kv_codec.hpp>
#include <strata/decorators/all.hpp>
#include <strata/restore/restore.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <optional>
#include <span>
#include <algorithm>
#include <string>
#include <vector>

namespace {

/// A memory_log whose replay also offers next_batch(), `batch` records at a
/// time, and counts which way it was read.
class batched_log {
public:
    batched_log(const strata::memory_log& log, std::size_t batch) : log_(&log), batch_(batch) {}

    class range {
    public:
        range(const batched_log& l, strata::offset_t from) : log_(&l) {
            for (const strata::record_view r : l.log_->replay(from)) records_.push_back(r);
        }
        [[nodiscard]] auto begin() const {
            ++log_->iterated;
            return records_.begin();
        }
        [[nodiscard]] auto end() const { return records_.end(); }
        std::span<const strata::record_view> next_batch() {
            ++log_->batches;
            const std::size_t n = std::min(log_->batch_, records_.size() - next_);
            const std::span<const strata::record_view> out(records_.data() + next_, n);
            next_ += n;
            return out;
        }

    private:
        const batched_log* log_;
        std::vector<strata::record_view> records_;
        std::size_t next_ = 0;
    };

    [[nodiscard]] range replay(strata::offset_t from = 0) const { return range(*this, from); }
    [[nodiscard]] strata::offset_t end_offset() const noexcept { return log_->end_offset(); }
    strata::offset_t append(const strata::record_view&) { throw std::logic_error("read only"); }
    strata::offset_t flush() { return log_->end_offset(); }

    mutable std::size_t batches = 0;
    mutable std::size_t iterated = 0;

private:
    const strata::memory_log* log_;
    std::size_t batch_;
};

static_assert(strata::changelog<batched_log>);

using kv = strata::hash_map_store<std::string, std::string>;

/// A hash_map_store that records the keys announced to it.
class announcing_store : public kv {
public:
    using kv::kv;
    void prefetch(std::span<const std::string> keys) const noexcept {
        announced.insert(announced.end(), keys.begin(), keys.end());
        kv::prefetch(keys);
    }
    mutable std::vector<std::string> announced;
};

struct progress_listener {
    std::vector<std::uint64_t> reported;
    void on_restore_start(const strata::restore_progress&) {}
    void on_batch_restored(const strata::restore_progress& p) { reported.push_back(p.records_done); }
    void on_restore_end(const strata::restore_progress&) {}
};

void put(strata::memory_log& log, const std::string& k, std::optional<std::string> v) {
    strata::record_view r{strata::as_bytes(k), std::nullopt};
    if (v) r.value = strata::as_bytes(*v);
    log.append(r);
}

/// Overwrites (longer and shorter values), empty values, tombstones, a key
/// back after its tombstone, a tombstone for a key never written.
strata::memory_log history() {
    strata::memory_log log;
    for (int i = 0; i < 500; ++i) {
        const std::string k = "k" + std::to_string(i % 37);
        if (i % 11 == 0) put(log, k, std::nullopt);
        else if (i % 7 == 0) put(log, k, "");
        else put(log, k, std::string(static_cast<std::size_t>((i * 13) % 90), 'v') + std::to_string(i));
    }
    put(log, "never written", std::nullopt);
    return log;
}

}  // namespace

TEST_CASE("restore in batches leaves the store as a record-by-record restore does", "[restore]") {
    strata::memory_log log = history();
    const strata::kv_codec<std::string, std::string> codec;

    kv one_by_one("s");
    (void)strata::restore_from(one_by_one, log, codec);  // memory_log: no batches

    for (const std::size_t batch : {std::size_t{1}, std::size_t{5}, std::size_t{64}, std::size_t{1000}}) {
        batched_log batched(log, batch);
        announcing_store s("s");
        const auto p = strata::restore_from(s, batched, codec);
        CAPTURE(batch);
        REQUIRE(batched.batches > 0);
        REQUIRE(batched.iterated == 0);
        REQUIRE(p.records_done == log.size());
        REQUIRE(static_cast<const kv&>(s) == one_by_one);
        // Every record's key, in order, announced before it was applied.
        REQUIRE(s.announced.size() == log.size());
        for (std::size_t i = 0; i < log.size(); ++i)
            REQUIRE(s.announced[i] == std::string(strata::as_chars(log.records()[i].key)));
    }
    // And as the history says, key by key.
    std::map<std::string, std::optional<std::string>> model;
    for (const strata::record& r : log.records()) {
        std::optional<std::string> v;
        if (r.value) v = std::string(strata::as_chars(*r.value));
        model[std::string(strata::as_chars(r.key))] = v;
    }
    std::size_t live = 0;
    for (const auto& [k, v] : model) {
        REQUIRE(one_by_one.get(k) == v);
        live += v.has_value();
    }
    REQUIRE(one_by_one.size() == live);
}

TEST_CASE("restore in batches reports progress every progress_every records", "[restore]") {
    strata::memory_log log = history();  // 501 records
    batched_log batched(log, 64);
    kv s("s");
    progress_listener l;
    const auto p = strata::restore_from(s, batched, strata::kv_codec<std::string, std::string>{},
                                        strata::restore_options{0, 50}, l);
    REQUIRE(p.records_done == 501);
    std::vector<std::uint64_t> expected;
    for (std::uint64_t n = 50; n <= 500; n += 50) expected.push_back(n);
    expected.push_back(501);  // the rest, at the end
    REQUIRE(l.reported == expected);
}

TEST_CASE("restore in batches: a bad record names its offset, and those before it are applied, none after",
          "[restore]") {
    strata::memory_log log;
    using int_kv = strata::hash_map_store<std::int64_t, std::string>;
    const strata::kv_codec<std::int64_t, std::string> codec;
    {
        int_kv w("w");
        auto s = std::move(w) | strata::logged(log);
        for (std::int64_t k = 0; k < 10; ++k) s.put(k, "v" + std::to_string(k));
    }
    put(log, "abc", "bad");  // offset 10: an int64 key needs 8 bytes
    {
        int_kv w("w");
        auto s = std::move(w) | strata::logged(log);
        s.put(100, "after");  // offset 11
    }
    batched_log batched(log, 64);  // all in one batch
    int_kv s("s");
    try {
        (void)strata::restore_from(s, batched, codec);
        FAIL("restore accepted a 3-byte int64 key");
    } catch (const strata::restore_error& e) {
        REQUIRE(e.offset() == 10);
    }
    REQUIRE(s.size() == 10);
    REQUIRE(s.get(9) == std::optional<std::string>("v9"));
    REQUIRE_FALSE(s.get(100).has_value());
}
