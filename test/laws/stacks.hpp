#pragma once
// The store stacks the law suite runs over: every store, alone and under
// every decorator stack, built in each of the ways strata offers (pipes,
// direct calls, policies, decorate in scrambled order).

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <relational_table.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <tuple>

#include <support/temp_dir.hpp>

namespace laws {

/// What a stack may need: a changelog, a metrics registry, a directory.
struct env {
    strata::memory_log log;
    strata::metrics::registry registry;
    test_support::temp_dir dir;
    std::optional<strata::file_log> file;

    strata::file_log& file_log() {
        if (!file) file.emplace(dir.path() / "log", strata::file_log_options{.segment_bytes = 4096});
        return *file;
    }

    /// A crash: each changelog keeps only what its last flush made durable.
    /// The memory log forgets its unflushed tail; the file log is closed
    /// without a flush (its destructor drops unflushed appends) and the next
    /// file_log() reopens it from its directory.
    /// @pre no stack over these changelogs is alive
    void crash() {
        log.drop_unflushed();
        file.reset();
    }
};

using ordered = strata::ordered_map_store<std::int64_t, std::string>;
using hashed = strata::hash_map_store<std::int64_t, std::string>;

// A cache small enough that the histories evict from it constantly, and that
// answers reads (the default does not over these in-memory stores).
inline strata::cache_options tiny_cache() { return {.max_bytes = 600, .reads = strata::read_caching::on}; }

struct ordered_bare {
    static auto make(env&) { return ordered("s"); }
};
struct hashed_bare {
    static auto make(env&) { return hashed("s"); }
};
struct ordered_logged {
    static auto make(env& e) { return ordered("s") | strata::logged(e.log); }
};
struct hashed_logged_direct {
    static auto make(env& e) { return strata::logged(hashed("s"), e.log); }
};
struct ordered_cached_only {
    static auto make(env&) { return ordered("s") | strata::cached(tiny_cache()); }
};
struct ordered_metered_only {
    static auto make(env& e) { return ordered("s") | strata::metered(e.registry); }
};
// Reads not cached (the default over an in-memory store): the cache only
// coalesces, drops entries once flushed, and evicts dirty ones past the bound.
struct hashed_logged_write_cache_tiny {
    static auto make(env& e) { return hashed("s") | strata::logged(e.log) | strata::cached({.max_bytes = 600}); }
};
struct ordered_logged_cached {
    static auto make(env& e) { return ordered("s") | strata::logged(e.log) | strata::cached(tiny_cache()); }
};
struct hashed_full_stack {
    static auto make(env& e) {
        return hashed("s") | strata::logged(e.log) | strata::cached() | strata::metered(e.registry);
    }
};
struct ordered_full_stack_tiny_cache_file_log {
    static auto make(env& e) {
        return ordered("s") | strata::logged(e.file_log()) | strata::cached(tiny_cache()) |
               strata::metered(e.registry);
    }
};
struct ordered_policy {
    static auto make(env& e) {
        auto policy = strata::cached(tiny_cache()) | strata::metered(e.registry);
        return ordered("s") | strata::logged(e.log) | policy;
    }
};
struct hashed_decorate_scrambled {
    static auto make(env& e) {
        return strata::decorate(hashed("s"), strata::metered(e.registry), strata::cached(tiny_cache()),
                                strata::logged(e.log));
    }
};

using kv_stacks = std::tuple<ordered_bare, hashed_bare, ordered_logged, hashed_logged_direct, ordered_cached_only,
                             ordered_metered_only, ordered_logged_cached, hashed_logged_write_cache_tiny, hashed_full_stack,
                             ordered_full_stack_tiny_cache_file_log, ordered_policy, hashed_decorate_scrambled>;

// ---- the relational table: its updates only reach it through logged
using example::employee_table;
using example::table_codec;

struct table_bare {
    static auto make(env&) { return employee_table("employees"); }
};
struct table_logged {
    static auto make(env& e) { return employee_table("employees") | strata::logged(e.log, table_codec{}); }
};
struct table_logged_cached_tiny {
    static auto make(env& e) {
        return employee_table("employees") | strata::logged(e.log, table_codec{}) |
               strata::cached({.max_bytes = 300});
    }
};
struct table_full_stack_file_log {
    static auto make(env& e) {
        return strata::decorate(employee_table("employees"), strata::metered(e.registry),
                                strata::logged(e.file_log(), table_codec{}), strata::cached());
    }
};

using table_stacks = std::tuple<table_bare, table_logged, table_logged_cached_tiny, table_full_stack_file_log>;

/// The stacks of a list that have a changelog: the ones the restore law is about.
template <class Stacks>
struct with_changelog;
template <class... Fixtures>
struct with_changelog<std::tuple<Fixtures...>> {
    template <class F>
    static constexpr bool logs =
        strata::has_layer_v<decltype(F::make(std::declval<env&>())), strata::layer_kind::logged>;
    using type = decltype(std::tuple_cat(std::conditional_t<logs<Fixtures>, std::tuple<Fixtures>, std::tuple<>>{}...));
};
template <class Stacks>
using with_changelog_t = typename with_changelog<Stacks>::type;

/// The law that a stack behaves as the bare store: for each seed, a history
/// run on a fresh stack and on a model leaves them equal.
///
/// @param run    run(stack, model, seed) applies a history to both
/// @param check  check(stack, model) asserts they agree
template <class Fixture, class Model, class Run, class Check>
void check_model_law(std::uint64_t first_seed, std::uint64_t last_seed, Run run, Check check) {
    for (std::uint64_t seed = first_seed; seed <= last_seed; ++seed) {
        env e;
        auto s = Fixture::make(e);
        Model m;
        run(s, m, seed);
        check(s, m);
    }
}

/// The restore law for one stack: the state a history leaves equals what a
/// fresh stack restores from the changelog the history wrote (a file log is
/// reopened from disk first), and from that changelog compacted.
///
/// @param run    run(stack, model) applies a history to both
/// @param check  check(restored_stack, model) asserts they agree
template <class Fixture, class Model, class Run, class Check>
void check_restore_law(Run run, Check check) {
    env e;
    Model m;
    {
        auto s = Fixture::make(e);
        run(s, m);
        s.flush();
    }
    if (e.file) e.file.reset();
    {
        auto fresh = Fixture::make(e);
        const auto progress = fresh.restore();
        check(fresh, m);
        REQUIRE(progress.records_done > 0);
    }
    // Latest record per key is enough: compaction keeps restore exact.
    if (e.file) e.file_log().compact();
    else e.log.compact();
    {
        auto fresh = Fixture::make(e);
        fresh.restore();
        check(fresh, m);
    }
}

/// The crash law for one stack: a history that flushes at random points and
/// then crashes (the stack and its changelog go away without a last flush,
/// so what the cache holds and what the changelog buffered since that flush
/// are lost) leaves a changelog from which a fresh stack restores exactly the
/// state of the last flush.
///
/// @param run    run(stack, model, flushed) applies a history to both and
///               calls flushed() right after each flush of the stack
/// @param check  check(restored_stack, model) asserts they agree
/// @returns whether the crash lost updates (the history changed the model
///          after its last flush), so a caller can require that some did
template <class Fixture, class Model, class Run, class Check>
bool check_crash_law(Run run, Check check) {
    env e;
    Model m;
    Model at_last_flush;  // a copy of the plain model, taken at each flush
    int flushes = 0;
    {
        auto s = Fixture::make(e);
        run(s, m, [&] {
            at_last_flush = m;
            ++flushes;
        });
    }  // destroyed without a flush
    e.crash();
    REQUIRE(flushes > 0);
    {
        auto fresh = Fixture::make(e);
        fresh.restore();
        check(fresh, at_last_flush);
    }
    return m != at_last_flush;
}

}  // namespace laws
