// The law suite over the RocksDB store: every stack the generator makes of
// it (no changelog, the memory log or the file log; cache or not; metrics or
// not) behaves as a std::map, restores from its changelog, and after a crash
// between flushes holds the state of the last flush. Each generated stack
// opens a database of its own in the env's directory; the persistent stack
// reopens one directory after the crash and restores from its checkpoint.

#include <laws/kv_history.hpp>
#include <laws/stacks.hpp>

#include <strata/stores/rocksdb_store.hpp>

#include <atomic>
#include <string>
#include <tuple>

namespace {

struct rocksdb_kv {
    using store_type = strata::rocksdb_store<std::int64_t, std::string>;
    static store_type make(laws::env& e) {
        static std::atomic<int> next{0};
        // Small memtables, so that the histories reach SST files too.
        return store_type("s", e.dir.path() / ("rocksdb-" + std::to_string(next++)),
                          {.write_buffer_bytes = 64 << 10});
    }
    template <class Log>
    static auto logged(Log& log) {
        return strata::logged(log);
    }
    static strata::cached_options cache() { return laws::tiny_cache(); }
    static constexpr bool cache_needs_log = false;
};

using rocksdb_stacks = laws::generated_stacks<rocksdb_kv>;
static_assert(std::tuple_size_v<rocksdb_stacks> == 12);
using rocksdb_logged_stacks = laws::with_changelog_t<rocksdb_stacks>;

/// One database directory and a checkpoint, on the file log: a crash keeps
/// the database as its last flush wrote it, and restore reads only the
/// changelog past the checkpoint.
struct rocksdb_persistent_on_file_log {
    static auto make(laws::env& e) {
        return rocksdb_kv::store_type("s", e.dir.path() / "db", {.write_buffer_bytes = 64 << 10}) |
               strata::logged(e.file_log(), {.checkpoint = e.dir.path() / "checkpoint"}) |
               strata::cached(laws::tiny_cache());
    }
};
using rocksdb_crash_stacks = decltype(std::tuple_cat(std::declval<rocksdb_logged_stacks>(),
                                                     std::declval<std::tuple<rocksdb_persistent_on_file_log>>()));

}  // namespace

TEMPLATE_LIST_TEST_CASE("rocksdb law: every stack over the RocksDB store behaves as a std::map", "[rocksdb][laws]",
                        rocksdb_stacks) {
    laws::kv_model_law<TestType>(1, 3, 500);
}

TEMPLATE_LIST_TEST_CASE("rocksdb law: a logged RocksDB store restores from its changelog", "[rocksdb][laws][restore]",
                        rocksdb_logged_stacks) {
    laws::kv_restore_law<TestType>(100, 103, 500);
}

TEMPLATE_LIST_TEST_CASE("rocksdb law: after a crash between two flushes, restore gives the state of the last flush",
                        "[rocksdb][laws][restore][crash]", rocksdb_crash_stacks) {
    int lost = 0;
    for (std::uint64_t seed = 200; seed <= 203; ++seed) {
        INFO("seed " << seed);
        lost += laws::check_crash_law<TestType, laws::kv_model>(
            [&](auto& s, laws::kv_model& m, auto flushed) {
                laws::run_kv_history(s, m, seed, 300, {.flush_one_in = 4}, flushed);
            },
            [](const auto& s, const laws::kv_model& m) { REQUIRE(laws::contents_of(s) == m); });
    }
    REQUIRE(lost > 0);  // the crashes did lose updates: this is not a clean stop
}
