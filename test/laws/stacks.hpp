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

    /// A clean stop: the file log is closed (after the stack's last flush)
    /// and the next file_log() reopens it from its directory.
    void reopen() { file.reset(); }

    /// Compacts the changelogs in use (latest record per key).
    void compact() {
        if (file) file->compact();
        else log.compact();
    }
};

/// The env a fixture's make() takes: its `env_type`, or env.
template <class Fixture>
struct env_of {
    using type = env;
};
template <class Fixture>
    requires requires { typename Fixture::env_type; }
struct env_of<Fixture> {
    using type = typename Fixture::env_type;
};
template <class Fixture>
using env_of_t = typename env_of<Fixture>::type;

using ordered = strata::ordered_map_store<std::int64_t, std::string>;
using hashed = strata::hash_map_store<std::int64_t, std::string>;

// A cache small enough that the histories evict from it constantly, and that
// answers reads (the default does not over these in-memory stores).
inline strata::cached_options tiny_cache() { return {.max_bytes = 600, .reads = strata::read_caching::on}; }

struct hashed_logged_direct {
    static auto make(env& e) { return strata::logged(hashed("s"), e.log); }
};
// Reads not cached (the default over an in-memory store): the cache only
// coalesces, drops entries once flushed, and evicts dirty ones past the bound.
struct hashed_logged_write_cache_tiny {
    static auto make(env& e) { return hashed("s") | strata::logged(e.log) | strata::cached({.max_bytes = 600}); }
};
struct hashed_full_stack {
    static auto make(env& e) {
        return hashed("s") | strata::logged(e.log) | strata::cached() | strata::metered(e.registry);
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

// ---- the generated stacks: every store times every valid choice per layer
// slot (no changelog, the memory log or the file log; cache or not; metrics
// or not), built at compile time. A new store is a descriptor (how to make,
// log and cache it) named in generated_stacks<...>; a new decorator is one
// more slot in `layer_slots`.

/// A layer slot's choice of nothing.
struct no_layer {
    static constexpr bool logs = false, caches = false;
    template <class Store, class S, class Env>
    static auto wrap(S&& s, Env&) {
        return std::forward<S>(s);
    }
};
struct log_to_memory {
    static constexpr bool logs = true, caches = false;
    template <class Store, class S, class Env>
    static auto wrap(S&& s, Env& e) {
        return std::forward<S>(s) | Store::logged(e.log);
    }
};
struct log_to_file {
    static constexpr bool logs = true, caches = false;
    template <class Store, class S, class Env>
    static auto wrap(S&& s, Env& e) {
        return std::forward<S>(s) | Store::logged(e.file_log());
    }
};
struct cache_layer {
    static constexpr bool logs = false, caches = true;
    template <class Store, class S, class Env>
    static auto wrap(S&& s, Env&) {
        return std::forward<S>(s) | strata::cached(Store::cache());
    }
};
struct meter_layer {
    static constexpr bool logs = false, caches = false;
    template <class Store, class S, class Env>
    static auto wrap(S&& s, Env& e) {
        return std::forward<S>(s) | strata::metered(e.registry);
    }
};

/// The slots, innermost first; each lists its choices. The first slot is
/// the changelog: no logging, or one of Changelogs.
template <class... Changelogs>
using slots_over = std::tuple<std::tuple<Changelogs...>, std::tuple<no_layer, cache_layer>,
                              std::tuple<no_layer, meter_layer>>;
/// The slots over strata's own changelogs (test/kafka/laws_test.cpp adds Kafka's).
using layer_slots = slots_over<no_layer, log_to_memory, log_to_file>;

struct ordered_store {
    static auto make() { return ordered("s"); }
    template <class Log>
    static auto logged(Log& log) {
        return strata::logged(log);
    }
    static strata::cached_options cache() { return tiny_cache(); }
    static constexpr bool cache_needs_log = false;
};
struct hashed_store {
    static auto make() { return hashed("s"); }
    template <class Log>
    static auto logged(Log& log) {
        return strata::logged(log);
    }
    static strata::cached_options cache() { return tiny_cache(); }
    static constexpr bool cache_needs_log = false;
};

/// One generated stack: Store wrapped in Layers, innermost first.
template <class Env, class Store, class... Layers>
struct stack_of {
    using env_type = Env;
    static auto make(Env& e) { return wrap_all<Layers...>(make_store(e), e); }

private:
    /// A store that needs the env (a directory of its own) takes it.
    static auto make_store(Env& e) {
        if constexpr (requires { Store::make(e); }) return Store::make(e);
        else return Store::make();
    }

    template <class L, class... Rest, class S>
    static auto wrap_all(S&& s, Env& e) {
        if constexpr (sizeof...(Rest) == 0) return L::template wrap<Store>(std::forward<S>(s), e);
        else return wrap_all<Rest...>(L::template wrap<Store>(std::forward<S>(s), e), e);
    }
};

namespace detail {
template <class Prefix, class Choice>
struct append;
template <class... Ts, class Choice>
struct append<std::tuple<Ts...>, Choice> {
    using type = std::tuple<Ts..., Choice>;
};
template <class Prefix, class Choices>
struct extend_one;
template <class Prefix, class... Choices>
struct extend_one<Prefix, std::tuple<Choices...>> {
    using type = std::tuple<typename append<Prefix, Choices>::type...>;
};
template <class Prefixes, class Choices>
struct extend;
template <class... Prefixes, class Choices>
struct extend<std::tuple<Prefixes...>, Choices> {
    using type = decltype(std::tuple_cat(std::declval<typename extend_one<Prefixes, Choices>::type>()...));
};
/// Every way to pick one choice per slot, as tuples of layers.
template <class Acc, class Slots>
struct choices;
template <class Acc>
struct choices<Acc, std::tuple<>> {
    using type = Acc;
};
template <class Acc, class Slot, class... Rest>
struct choices<Acc, std::tuple<Slot, Rest...>> {
    using type = typename choices<typename extend<Acc, Slot>::type, std::tuple<Rest...>>::type;
};

template <class Env, class Store, class Layers>
struct make_stack;
template <class Env, class Store, class... Layers>
struct make_stack<Env, Store, std::tuple<Layers...>> {
    // A store whose updates only the logged layer can read cannot be cached without it.
    static constexpr bool valid = !Store::cache_needs_log || !(Layers::caches || ...) || (Layers::logs || ...);
    using type = std::conditional_t<valid, std::tuple<stack_of<Env, Store, Layers...>>, std::tuple<>>;
};
template <class Env, class Store, class Picks>
struct stacks_for;
template <class Env, class Store, class... Picks>
struct stacks_for<Env, Store, std::tuple<Picks...>> {
    using type = decltype(std::tuple_cat(std::declval<typename make_stack<Env, Store, Picks>::type>()...));
};
}  // namespace detail

/// Every valid stack of every store in Stores, one choice per slot of
/// Slots, made in an Env.
template <class Env, class Slots, class... Stores>
using generated_stacks_over = decltype(std::tuple_cat(
    std::declval<typename detail::stacks_for<Env, Stores,
                                             typename detail::choices<std::tuple<std::tuple<>>, Slots>::type>::type>()...));

/// Every valid stack of every store in Stores over strata's own changelogs.
template <class... Stores>
using generated_stacks = generated_stacks_over<env, layer_slots, Stores...>;

// The ways of building a stack that the product does not cover: direct
// calls, policies, decorate in scrambled order, the write-only cache.
using kv_stacks = decltype(std::tuple_cat(
    std::declval<generated_stacks<ordered_store, hashed_store>>(),
    std::declval<std::tuple<hashed_logged_direct, hashed_logged_write_cache_tiny, hashed_full_stack, ordered_policy,
                            hashed_decorate_scrambled>>()));
static_assert(std::tuple_size_v<generated_stacks<ordered_store>> == 12);

// ---- the relational table: its updates only reach it through logged
using example::employee_table;
using example::table_codec;

struct table_full_stack_file_log {
    static auto make(env& e) {
        return strata::decorate(employee_table("employees"), strata::metered(e.registry),
                                strata::logged(e.file_log(), table_codec{}), strata::cached());
    }
};

struct table_store {
    static auto make() { return employee_table("employees"); }
    template <class Log>
    static auto logged(Log& log) {
        return strata::logged(log, table_codec{});
    }
    static strata::cached_options cache() { return {.max_bytes = 300}; }
    static constexpr bool cache_needs_log = true;
};

using table_stacks = decltype(std::tuple_cat(std::declval<generated_stacks<table_store>>(),
                                             std::declval<std::tuple<table_full_stack_file_log>>()));
static_assert(std::tuple_size_v<generated_stacks<table_store>> == 10);

/// The stacks of a list that have a changelog: the ones the restore law is about.
template <class Stacks>
struct with_changelog;
template <class... Fixtures>
struct with_changelog<std::tuple<Fixtures...>> {
    template <class F>
    static constexpr bool logs =
        strata::has_layer_v<decltype(F::make(std::declval<env_of_t<F>&>())), strata::layer_kind::logged>;
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
        env_of_t<Fixture> e;
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
    env_of_t<Fixture> e;
    Model m;
    {
        auto s = Fixture::make(e);
        run(s, m);
        s.flush();
    }
    e.reopen();
    {
        auto fresh = Fixture::make(e);
        const auto progress = fresh.restore();
        check(fresh, m);
        REQUIRE(progress.records_done > 0);
    }
    // Latest record per key is enough: compaction keeps restore exact.
    e.compact();
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
    env_of_t<Fixture> e;
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
