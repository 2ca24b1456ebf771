#pragma once
/// @file
/// @brief `strata::runtime::topology`: an application of several
/// sub-topologies joined by repartition topics. One sub-topology re-keys
/// records to a repartition topic (`ctx.repartition(name, key, value)`);
/// another reads that topic, so each of its tasks sees every record of its
/// keys, with stores keyed the new way. Agents' reports keyed by agent
/// become votes keyed by the object voted on, say:
///
///     strata::runtime::application_options o;
///     o.application_id = "votes";
///     o.bootstrap_servers = "127.0.0.1:9092";
///     o.state_dir = "/var/lib/votes";
///     auto topo = strata::runtime::make_topology(o,
///         strata::runtime::sub_topology<std::string, std::string>(     // agent -> object
///             {.name = "reports", .topics = {"reports"}},
///             [](strata::runtime::task_context&) { return strata::hash_map_store<std::string, std::int64_t>("seen"); },
///             [](auto& ctx, const auto& r) { ctx.repartition("by-object", *r.value, r.key); }),
///         strata::runtime::sub_topology<std::string, std::string>(     // object -> agent
///             {.name = "counts", .repartitions = {"by-object"}},
///             [](strata::runtime::task_context& t) {
///                 return strata::hash_map_store<std::string, std::int64_t>("votes") | t.logged();
///             },
///             [](auto& ctx, const auto& r) {
///                 auto& votes = ctx.stores();
///                 votes.put(r.key, votes.get(r.key).value_or(0) + 1);
///             }));
///     topo.run();  // until topo.stop(); topo.sub<1>().get("object-7") from any thread
///
/// How it maps onto the runtime: each sub-topology is an `application` of
/// its own within the process, a consumer group named
/// `<application_id>-<sub-topology>` with its own tasks
/// (`<sub-topology>_<partition>`), coordination topic, transactional ids
/// and state folder, and its instance named `<instance_id>.<sub-topology>`;
/// changelogs keep `<application_id>-<store>-changelog`. The repartition
/// topic `<application_id>-<name>-repartition` is made before anything
/// runs, with Kafka Streams' configs (repartition_topic.hpp).
///
/// Exactly-once across the hop: the writing task's repartition records
/// commit in the transaction that commits its input offsets; the reading
/// sub-topology consumes read_committed and commits its own output, stores
/// and repartition offsets in its transactions. A record is processed once
/// on each side of the hop, whichever instance dies where. Records the
/// reading side committed are deleted every `repartition_purge_interval`
/// (repartition_purger.hpp).
///
/// Kafka Streams runs every sub-topology in one group and one transaction
/// per thread; here each is a group and a producer of its own. What that
/// costs: one more consumer group member, producer and coordination
/// reader per sub-topology and instance; what it gains: a sub-topology's
/// failover, standbys and queries are those of any application, tested
/// alone.

#include <strata/kafka/admin.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/application.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/instance.hpp>
#include <strata/runtime/detail/repartition_purger.hpp>
#include <strata/runtime/error.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/runtime/repartition_topic.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace strata::runtime {

/// @brief What one sub-topology is called and reads.
struct sub_topology_inputs {
    /// Names its group, tasks and state folder: letters, digits, '.', '_', '-'.
    std::string name;
    /// Topics from outside the topology, co-partitioned.
    std::vector<std::string> topics{};
    /// Repartition topics it reads, by the name another sub-topology's
    /// `repartition(name, ...)` writes to.
    std::vector<std::string> repartitions{};
};

/// @brief One sub-topology: its inputs, with a store factory and a
/// processor as `make_application` takes them, over records of key K and value V.
template <class K, class V, class Factory, class Processor>
struct sub_topology_spec {
    using key_type = K;
    using value_type = V;
    sub_topology_inputs inputs;
    Factory factory;
    Processor processor;
};

/// @brief A sub-topology over records of key K and value V; see topology.hpp.
template <class K, class V, class Factory, class Processor>
[[nodiscard]] sub_topology_spec<K, V, Factory, Processor> sub_topology(sub_topology_inputs inputs, Factory factory,
                                                                      Processor processor) {
    static_assert(serializable<K> || std::is_same_v<K, std::string> || std::is_same_v<K, byte_buffer>,
                  "strata::runtime: no serde for the sub-topology's key type K");
    static_assert(serializable<V> || std::is_same_v<V, std::string> || std::is_same_v<V, byte_buffer>,
                  "strata::runtime: no serde for the sub-topology's value type V");
    return {std::move(inputs), std::move(factory), std::move(processor)};
}

namespace detail {
template <class Spec>
using application_of = application<typename Spec::key_type, typename Spec::value_type, decltype(Spec::factory),
                                   decltype(Spec::processor)>;
}  // namespace detail

/// @brief Sub-topologies run together, joined by repartition topics; see the file comment.
template <class... Specs>
class topology {
    static_assert(sizeof...(Specs) >= 1, "strata::runtime: a topology has at least one sub-topology");

public:
    /// @param o what every sub-topology shares (application_id, brokers,
    ///        state_dir, guarantee, ...); `input_topics` stays empty: each
    ///        sub-topology names its own
    /// @throws usage_error the options or the sub-topologies do not fit together
    topology(application_options o, Specs... specs, metrics::registry* reg = nullptr)
        : options_(std::move(o)),
          owned_registry_(reg == nullptr ? std::make_unique<metrics::registry>() : nullptr),
          registry_(reg == nullptr ? owned_registry_.get() : reg) {
        if (!options_.input_topics.empty())
            throw usage_error("strata::runtime: a topology's options name no input_topics; each sub-topology "
                              "names its own (sub_topology_inputs::topics)");
        if (options_.instance_id.empty()) options_.instance_id = detail::instance::default_instance_id();
        const std::vector<const sub_topology_inputs*> inputs{&specs.inputs...};
        check(inputs);
        for (const sub_topology_inputs* in : inputs) {
            for (const std::string& t : in->topics) external_.push_back(t);
            for (const std::string& r : in->repartitions) repartitions_.insert(r);
        }
        // Braces: make_sub runs in the order of the sub-topologies (the purge plans' index counts on it).
        subs_ = std::tuple<std::unique_ptr<detail::application_of<Specs>>...>{make_sub(std::move(specs))...};
    }

    topology(const topology&) = delete;
    topology& operator=(const topology&) = delete;

    /// @brief Sub-topology I, an `application`: its queries, metadata and
    /// tasks (`sub<1>().get(key)`).
    template <std::size_t I>
    [[nodiscard]] auto& sub() noexcept {
        return *std::get<I>(subs_);
    }
    template <std::size_t I>
    [[nodiscard]] const auto& sub() const noexcept {
        return *std::get<I>(subs_);
    }

    /// @brief The repartition topics, by the names sub-topologies use.
    [[nodiscard]] std::vector<std::string> repartition_topics() const {
        std::vector<std::string> out;
        for (const std::string& r : repartitions_) out.push_back(repartition_topic_name(options_.application_id, r));
        return out;
    }

    /// @brief Makes the repartition topics, then runs every sub-topology
    /// (the first on the caller's thread, each other on one of its own) and
    /// purges the repartition records they committed, until `stop()`. When
    /// one sub-topology fails, the others stop as after `stop()`, and run()
    /// throws the first failure.
    void run() {
        ensure_repartition_topics();
        // Global stores first: read whole before any sub-topology processes a record.
        if (!globals_.start(options_.bootstrap_servers, options_.client_settings, [this] { stop(); })) {
            globals_.stop();  // stop() came during the bootstrap
            return;
        }
        try {
            run_sub_topologies();
        } catch (...) {
            try {
                globals_.stop();
            } catch (...) {  // the sub-topologies' failure is the one to tell
            }
            throw;
        }
        globals_.stop();  // throws what stopped a follower (it stopped the sub-topologies)
    }

    /// @brief Has `run()` read `g` whole before processing and keep it
    /// current while it runs (see global_store.hpp); every sub-topology's
    /// processors may read it. Add before run().
    template <class G>
    void add_global_store(std::shared_ptr<G> g) {
        globals_.add(std::move(g));
    }

private:
    void run_sub_topologies() {
        std::vector<std::exception_ptr> failures(sizeof...(Specs) + 1);
        std::vector<std::function<void()>> parts;
        std::apply([&](auto&... s) { (parts.emplace_back([&s] { s->run(); }), ...); }, subs_);
        purge_stop_.store(false);
        std::thread purge([this, &failures] {
            try {
                purge_until_stopped();
            } catch (...) {
                failures.back() = std::current_exception();
                stop();
            }
        });
        const auto run_one = [&](std::size_t k) {
            try {
                parts[k]();
            } catch (...) {
                failures[k] = std::current_exception();
            }
            stop();  // one sub-topology's end is every one's
        };
        std::vector<std::thread> others;
        for (std::size_t k = 1; k < parts.size(); ++k) others.emplace_back(run_one, k);
        run_one(0);
        for (std::thread& t : others) t.join();
        purge.join();
        for (const std::exception_ptr& f : failures)
            if (f) std::rethrow_exception(f);
    }

public:
    /// @brief Asks `run()` to stop every sub-topology; safe from any thread
    /// and from a signal handler.
    void stop() noexcept {
        globals_.request_stop();
        purge_stop_.store(true, std::memory_order_relaxed);
        std::apply([](auto&... s) { (s->stop(), ...); }, subs_);
    }

    /// @brief Restore progress of every sub-topology's tasks.
    void on_restore(restore_callback fn) {
        std::apply([&](auto&... s) { (s->on_restore(fn), ...); }, subs_);
    }
    /// @brief Every task a sub-topology starts (its id names the sub-topology).
    void on_takeover(std::function<void(const task&)> fn) {
        std::apply([&](auto&... s) { (s->on_takeover(fn), ...); }, subs_);
    }

    [[nodiscard]] metrics::registry& metrics() noexcept { return *registry_; }
    [[nodiscard]] const application_options& options() const noexcept { return options_; }

    /// @brief How many times a purge pass cut a repartition partition (moved its start) so far.
    [[nodiscard]] std::uint64_t purges() const noexcept { return purges_.load(std::memory_order_relaxed); }

private:
    static void check(const std::vector<const sub_topology_inputs*>& inputs) {
        std::set<std::string> names;
        for (const sub_topology_inputs* in : inputs) {
            if (in->name.empty()) throw usage_error("strata::runtime: a sub-topology has no name");
            if (!names.insert(in->name).second)
                throw usage_error("strata::runtime: two sub-topologies are named " + in->name);
            if (in->topics.empty() && in->repartitions.empty())
                throw usage_error("strata::runtime: sub-topology " + in->name +
                                  " reads nothing: give it topics or repartitions");
        }
    }

    template <class Spec>
    std::unique_ptr<detail::application_of<Spec>> make_sub(Spec spec) {
        application_options c = options_;
        c.sub_topology = spec.inputs.name;
        c.instance_id = options_.instance_id + "." + spec.inputs.name;
        c.input_topics = spec.inputs.topics;
        for (const std::string& r : spec.inputs.repartitions)
            c.input_topics.push_back(repartition_topic_name(options_.application_id, r));
        if (!spec.inputs.repartitions.empty()) {
            std::vector<std::string> topics;
            for (const std::string& r : spec.inputs.repartitions)
                topics.push_back(repartition_topic_name(options_.application_id, r));
            purge_plans_.push_back({std::move(topics), c});
        }
        purge_plans_index_.push_back(spec.inputs.repartitions.empty() ? npos : purge_plans_.size() - 1);
        return std::make_unique<detail::application_of<Spec>>(std::move(c), std::move(spec.factory),
                                                              std::move(spec.processor), registry_);
    }

    /// The partition count of the repartition topics: the option, or the
    /// largest of the topology's input topics (Kafka Streams' count).
    std::int32_t repartition_partition_count() const {
        if (options_.repartition_partitions > 0) return options_.repartition_partitions;
        kafka::conf k(options_.client_settings);
        k.set("bootstrap.servers", options_.bootstrap_servers);
        const kafka::client admin(RD_KAFKA_PRODUCER, std::move(k));
        std::int32_t most = 1;
        for (const std::string& t : external_)
            most = std::max(most, kafka::probe_topic(admin.get(), options_.bootstrap_servers, t,
                                                     options_.broker_timeout));
        return most;
    }

    void ensure_repartition_topics() {
        if (repartitions_.empty()) return;
        kafka::topic_options o;
        o.bootstrap_servers = options_.bootstrap_servers;
        o.client_settings = options_.client_settings;
        o.partitions = repartition_partition_count();
        o.replication_factor = options_.changelog_replication_factor;
        o.topic_configs = repartition_topic_configs();
        o.timeout = options_.broker_timeout;
        o.require_compaction = false;
        for (const std::string& topic : repartition_topics()) (void)kafka::ensure_topic(topic, o);
    }

    /// Every purge interval, each reading sub-topology's running tasks on
    /// this instance have their repartition partitions cut at the committed offsets.
    void purge_until_stopped() {
        if (purge_plans_.empty()) return;
        std::vector<detail::repartition_purger> purgers;
        for (const purge_plan& p : purge_plans_) purgers.emplace_back(p.options, p.topics);
        auto next = std::chrono::steady_clock::now() + options_.repartition_purge_interval;
        while (!purge_stop_.load(std::memory_order_relaxed)) {
            if (std::chrono::steady_clock::now() < next) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                continue;
            }
            next = std::chrono::steady_clock::now() + options_.repartition_purge_interval;
            std::size_t k = 0;
            std::apply([&](auto&... s) { (purge_one(purgers, k++, *s), ...); }, subs_);
        }
    }

    template <class App>
    void purge_one(std::vector<detail::repartition_purger>& purgers, std::size_t k, const App& app) {
        if (purge_plans_index_[k] == npos) return;
        std::vector<std::int32_t> running;
        for (const task_info& t : app.local_tasks())
            if (t.state == task_state::running) running.push_back(t.partition);
        try {
            purges_.fetch_add(purgers[purge_plans_index_[k]].purge(running).size(), std::memory_order_relaxed);
        } catch (const kafka::error& e) {
            // A broker away for a moment costs a pass, not the topology: the next one cuts further.
            options_.warn(std::string("repartition purge skipped: ") + e.what());
        }
    }

    struct purge_plan {
        std::vector<std::string> topics;
        application_options options;
    };
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    application_options options_;
    std::unique_ptr<metrics::registry> owned_registry_;
    metrics::registry* registry_;
    std::vector<std::string> external_;
    std::set<std::string> repartitions_;
    std::vector<purge_plan> purge_plans_;
    std::vector<std::size_t> purge_plans_index_;  // per sub-topology: its plan, or npos
    std::tuple<std::unique_ptr<detail::application_of<Specs>>...> subs_;
    detail::global_stores globals_;
    std::atomic<bool> purge_stop_{false};
    std::atomic<std::uint64_t> purges_{0};
};

/// @brief A topology of the given sub-topologies (see topology.hpp):
/// `make_topology(options, sub_topology<K, V>(...), sub_topology<K2, V2>(...))`.
template <class... Specs>
[[nodiscard]] topology<Specs...> make_topology(application_options o, Specs... specs) {
    return topology<Specs...>(std::move(o), std::move(specs)...);  // made in place: a topology does not move
}

}  // namespace strata::runtime
