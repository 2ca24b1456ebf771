#pragma once
/// @file
/// @brief `strata::runtime::application`: the same program started on any
/// number of machines, each instance owning some partitions of the input,
/// each partition with its own stores, rebuilt from their changelogs on
/// whichever instance the partition moves to.
///
///     strata::runtime::application_options c;
///     c.application_id = "totals";
///     c.bootstrap_servers = "127.0.0.1:9092";
///     c.input_topics = {"payments"};
///     c.state_dir = "/var/lib/totals";
///     auto app = strata::runtime::make_application<std::string, std::int64_t>(
///         c,
///         [](strata::runtime::task_context& t) {            // once per task
///             return strata::hash_map_store<std::string, std::int64_t>("totals")
///                  | t.logged() | strata::cached() | t.metered();
///         },
///         [](auto& ctx, const auto& r) {                     // once per record
///             auto& totals = ctx.stores();
///             const std::int64_t total = totals.get(r.key).value_or(0) + r.value.value_or(0);
///             totals.put(r.key, total);
///             ctx.emit("totals", r.key, total);
///         });
///     app.run();  // until app.stop()

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/metrics/histogram.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/instance.hpp>
#include <strata/runtime/detail/output.hpp>
#include <strata/runtime/error.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/runtime/metadata.hpp>
#include <strata/runtime/processor_context.hpp>
#include <strata/runtime/queries.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/task_context.hpp>
#include <strata/serde/encode.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime {

/// @brief An input record as a processor sees it: key and value decoded,
/// with where it came from.
template <class K, class V>
struct record {
    K key;
    std::optional<V> value;  ///< nullopt: a tombstone (the record's value is null)
    std::string_view topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp = -1;  ///< ms since the epoch, -1 when the record has none
};

namespace detail {

template <class Stores, class F>
void for_each_store(Stores& s, F&& f) {
    if constexpr (is_tuple<Stores>::value) std::apply([&](auto&... each) { (f(each), ...); }, s);
    else f(s);
}

/// Store I of what a factory returned (a store, or a std::tuple of them).
template <class Stores, std::size_t I>
struct store_at {
    static_assert(I == 0, "strata::runtime: the factory returns a single store: it is store 0");
    using type = Stores;
    static const Stores& get(const Stores& s) noexcept { return s; }
};
template <class... S, std::size_t I>
struct store_at<std::tuple<S...>, I> {
    static_assert(I < sizeof...(S), "strata::runtime: the factory returns fewer stores than that");
    using type = std::tuple_element_t<I, std::tuple<S...>>;
    static const type& get(const std::tuple<S...>& s) noexcept { return std::get<I>(s); }
};

template <class Stores>
inline constexpr bool is_store_or_tuple_of_stores = state_store<Stores>;
template <class... S>
inline constexpr bool is_store_or_tuple_of_stores<std::tuple<S...>> = (state_store<S> && ...);

/// The typed part of a task: the user's stores and a copy of the processor.
template <class K, class V, class Factory, class Processor>
class typed_task final : public task {
public:
    using stores_type = std::invoke_result_t<const Factory&, task_context&>;
    static_assert(is_store_or_tuple_of_stores<stores_type>,
                  "strata::runtime: the store factory must return a state store (any stack of decorators over "
                  "one) or a std::tuple of them");

    typed_task(std::int32_t partition, const Factory& factory, Processor processor, output& out,
               const application_options& config, metrics::registry& reg)
        : task(partition, config.sub_topology), factory_(&factory), processor_(std::move(processor)), out_(&out), config_(&config),
          ctx_(partition, id(), out, config.application_id) {
        const metrics::labels l{{"task", id()}};
        processed_ = &reg.counter_for("strata_task_records_processed_total", "Input records a task processed", l);
        latency_ = &reg.histogram_for("strata_task_process_seconds",
                                      "Time a task's processor took per record (one record in 16 is timed)", l);
        skipped_ = &reg.counter_for("strata_task_records_skipped_total",
                                    "Input records a task skipped because their key or value did not decode", l);
        dead_lettered_ = &reg.counter_for("strata_task_records_dead_lettered_total",
                                          "Input records a task sent to the dead-letter topic", l);
    }

    void build(task_context& t) override {
        state_.emplace(std::invoke(*factory_, t));
        const std::lock_guard lock(mutex());
        for_each_store(*state_, [&](auto& s) {
            stores_.push_back(std::make_unique<store_port_of<std::remove_cvref_t<decltype(s)>>>(s));
        });
        ctx_.attach(*state_);
        built_ = true;
    }

    void start() override {
        if constexpr (requires(Processor& p, processor_context<stores_type>& c) { p.init(c); }) {
            const std::lock_guard lock(mutex());
            processor_.init(ctx_);
        }
    }

    /// What the factory returned; read or changed only under `mutex()`, once built.
    [[nodiscard]] const stores_type& stores_unlocked() const noexcept { return *state_; }

    void process(const rd_kafka_message_t& m) override {
        const std::string_view topic = rd_kafka_topic_name(m.rkt);
        std::optional<record<K, V>> r;
        try {
            r.emplace(decode_record(m, topic));
        } catch (const std::exception& e) {
            bad_record(m, topic, e.what());
            return;
        }
        const std::int64_t ts = r->timestamp;
        ctx_.set_timestamp(ts);
        try {
            if (--until_timed_ == 0) {
                until_timed_ = 16;
                const auto start = std::chrono::steady_clock::now();
                processor_(ctx_, std::as_const(*r));
                latency_->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            } else {
                processor_(ctx_, std::as_const(*r));
            }
            processed_->inc();
            if (ts >= 0) ctx_.advance_stream_time(ts);
        } catch (const std::exception& e) {
            std::throw_with_nested(processing_error(id(), topic, m.partition, m.offset, e.what()));
        }
    }

    void resume_stream_time(std::int64_t timestamp) override {
        const std::lock_guard lock(mutex());
        ctx_.advance_stream_time(timestamp);  // before start(): no punctuation is scheduled yet
    }

    bool punctuate(std::chrono::steady_clock::time_point now) override {
        const std::lock_guard lock(mutex());
        return ctx_.punctuate(now) > 0;
    }

private:
    record<K, V> decode_record(const rd_kafka_message_t& m, std::string_view topic) const {
        record<K, V> r{decode<K>(bytes_view(static_cast<const std::byte*>(m.key), m.key_len)), std::nullopt, topic,
                       m.partition, m.offset, -1};
        if (m.payload != nullptr) r.value.emplace(decode<V>(bytes_view(static_cast<const std::byte*>(m.payload), m.len)));
        rd_kafka_timestamp_type_t type{};
        r.timestamp = rd_kafka_message_timestamp(&m, &type);
        return r;
    }

    void bad_record(const rd_kafka_message_t& m, std::string_view topic, const char* what) {
        switch (config_->on_bad_record) {
            case bad_record_action::fail: throw bad_record_error(topic, m.partition, m.offset, what);
            case bad_record_action::skip: skipped_->inc(); return;
            case bad_record_action::dead_letter: {
                const bytes_view key(static_cast<const std::byte*>(m.key), m.key_len);
                std::optional<bytes_view> value;
                if (m.payload != nullptr) value = bytes_view(static_cast<const std::byte*>(m.payload), m.len);
                out_->send(config_->effective_dead_letter_topic(), key, value, partition_by_key,
                           {{"strata.error", what},
                            {"strata.topic", std::string(topic)},
                            {"strata.partition", std::to_string(m.partition)},
                            {"strata.offset", std::to_string(m.offset)}},
                           m.partition);  // the task of the input partition
                dead_lettered_->inc();
                return;
            }
        }
    }

    const Factory* factory_;
    Processor processor_;
    output* out_;
    const application_options* config_;
    std::optional<stores_type> state_;  // what the factory returned; the ports point into it
    processor_context<stores_type> ctx_;
    metrics::counter* processed_;
    metrics::histogram* latency_;
    metrics::counter* skipped_;
    metrics::counter* dead_lettered_;
    std::uint32_t until_timed_ = 1;
};

}  // namespace detail

/// @brief An application: a store factory and a processor over input
/// records with keys of type K and values of type V (decoded with
/// `strata::decode`). Each running copy of the program is one instance;
/// `run()` joins the group and processes until `stop()`. With
/// `processing_threads` above 1, each thread is a member of the group of
/// its own (see application_options); a query goes to the thread that
/// holds its partition.
template <class K, class V, class Factory, class Processor>
class application {
    using task_type = detail::typed_task<K, V, Factory, Processor>;
    using stores_type = typename task_type::stores_type;

public:
    application(application_options config, Factory factory, Processor processor,
                metrics::registry* reg = nullptr)
        : factory_(std::move(factory)), processor_(std::move(processor)),
          owned_registry_(reg == nullptr ? std::make_unique<metrics::registry>() : nullptr),
          registry_(reg == nullptr ? owned_registry_.get() : reg) {
        config.validate();
        if (config.instance_id.empty()) config.instance_id = detail::instance::default_instance_id();
        const int threads = config.processing_threads;
        instances_.reserve(static_cast<std::size_t>(threads));
        for (int k = 0; k < threads; ++k) {
            application_options c = config;
            if (k > 0) {
                c.instance_id = config.instance_id + "-t" + std::to_string(k);
                c.state_dir = config.state_dir / ("thread-" + std::to_string(k));
            }
            const auto thread = static_cast<std::size_t>(k);
            instances_.push_back(std::make_unique<detail::instance>(
                std::move(c),
                [this, thread](std::int32_t p, detail::output& out) -> std::shared_ptr<task> {
                    return std::make_shared<task_type>(p, factory_, processor_, out, instances_[thread]->options(),
                                                       *registry_);
                },
                *registry_, restore_callback{}, threads > 1 ? config.instance_id : std::string()));
        }
    }

    application(const application&) = delete;
    application& operator=(const application&) = delete;

    /// @brief Processes until `stop()`; see detail::instance::run
    /// (detail/instance.hpp). With several processing threads, thread 0 runs
    /// on the caller's and the others on threads of their own; when one
    /// fails, the others stop as after `stop()`, and run() throws the first failure.
    void run() {
        // Global stores first: read whole before any task processes a record.
        if (!globals_.empty()) {
            const application_options& o = options();
            if (!globals_.start(o.bootstrap_servers, o.client_settings, [this] { stop(); })) {
                globals_.stop();  // stop() came during the bootstrap
                return;
            }
            try {
                run_instances();
            } catch (...) {
                try {
                    globals_.stop();
                } catch (...) {  // the instances' failure is the one to tell
                }
                throw;
            }
            globals_.stop();  // throws what stopped a follower (it stopped the instances)
            return;
        }
        run_instances();
    }
    /// @brief Has `run()` read `g` whole before processing and keep it
    /// current while it runs (see global_store.hpp). Add before run().
    template <class G>
    void add_global_store(std::shared_ptr<G> g) {
        globals_.add(std::move(g));
    }

private:
    void run_instances() {
        if (instances_.size() == 1) {
            instances_.front()->run();
            return;
        }
        std::vector<std::exception_ptr> failures(instances_.size());
        const auto run_one = [&](std::size_t k) {
            try {
                instances_[k]->run();
            } catch (...) {
                failures[k] = std::current_exception();
            }
            stop();  // one thread's end is every thread's
        };
        std::vector<std::thread> others;
        others.reserve(instances_.size() - 1);
        for (std::size_t k = 1; k < instances_.size(); ++k) others.emplace_back(run_one, k);
        run_one(0);
        for (std::thread& t : others) t.join();
        for (const std::exception_ptr& f : failures)
            if (f) std::rethrow_exception(f);
    }
public:
    /// @brief Asks `run()` to commit, leave the group and return; safe from
    /// any thread and from a signal handler.
    void stop() noexcept {
        globals_.request_stop();
        for (const auto& in : instances_) in->stop();
    }

    /// @brief Receives every task's restore progress (on the restore
    /// thread, one per processing thread).
    void on_restore(restore_callback fn) {
        for (const auto& in : instances_) in->set_restore_callback(fn);
    }
    /// @brief Called when this instance (one of its threads), as leader, sees the membership change.
    void on_rebalance_noticed(std::function<void(std::int64_t)> fn) {
        for (const auto& in : instances_) in->on_rebalance_noticed(fn);
    }
    /// @brief Receives every task this instance starts, with its takeover
    /// timeline (on the processing thread that starts it).
    void on_takeover(std::function<void(const task&)> fn) {
        for (const auto& in : instances_) in->on_takeover(fn);
    }

    [[nodiscard]] metrics::registry& metrics() noexcept { return *registry_; }
    /// @brief The options as given (with the instance id filled in when it was empty).
    [[nodiscard]] const application_options& options() const noexcept { return instances_.front()->options(); }

    /// @brief Whether `instance_id` names this instance or one of its processing threads.
    [[nodiscard]] bool runs_as(std::string_view instance_id) const noexcept {
        return std::any_of(instances_.begin(), instances_.end(),
                           [&](const auto& in) { return in->options().instance_id == instance_id; });
    }

    /// @brief The type of store I of a task (what the factory returned, or
    /// element I of the std::tuple it returned).
    template <std::size_t I>
    using store_type = typename detail::store_at<stores_type, I>::type;

    /// @brief Interactive query: runs `f(const store_type<I>&)` on partition
    /// p's store I, from any thread, while the application processes.
    /// f runs under the task's lock (the state between two records) and
    /// must return a value, not a view into the store. Safe to call before
    /// and after run() (the answer says not_running).
    /// @returns the value, or why the store cannot answer here (see query_status)
    template <std::size_t I = 0, class F>
    auto query(std::int32_t partition, F&& f, const read_options& o = {}) const {
        const auto read = [&](const detail::instance& in) {
            return in.queries().read(partition, o, [&](task& t) {
                const auto& typed = static_cast<const task_type&>(t);
                return std::invoke(f, detail::store_at<stores_type, I>::get(typed.stores_unlocked()));
            });
        };
        if (instances_.size() == 1) return read(*instances_.front());
        // The thread the assignment names first; then the others, which may
        // hold the partition on its way between two threads, or a standby.
        const detail::instance* owner = instances_.front().get();
        if (const auto md = metadata(); md != nullptr && partition >= 0 && partition < md->partitions())
            for (const auto& in : instances_)
                if (in->options().instance_id == md->partition(partition).active) owner = in.get();
        auto first = read(*owner);
        if (!elsewhere(first.status)) return first;
        for (const auto& in : instances_) {
            if (in.get() == owner) continue;
            auto r = read(*in);
            if (!elsewhere(r.status)) return r;
        }
        // Owned by none of its threads: another instance's, or moving between two of its threads.
        if (first.status == query_status::not_owned && runs_as(first.owner)) first.status = query_status::rebalancing;
        return first;
    }

    /// @brief `get(key)` on store I of the key's partition (see partition_for;
    /// the store must be keyed as the input is partitioned).
    template <std::size_t I = 0, class Key>
    auto get(const Key& key, const read_options& o = {}) const {
        using result = std::remove_cvref_t<decltype(std::declval<const store_type<I>&>().get(key))>;
        const std::shared_ptr<const application_metadata> md = metadata();
        if (md == nullptr) return query_result<result>{};  // not_running
        return query<I>(partition_for(key, md->partitions()), [&](const auto& s) { return s.get(key); }, o);
    }

    /// @brief This instance's tasks and standbys with their states, restore
    /// progress and lags (empty while it is not running), over all its threads.
    [[nodiscard]] std::vector<task_info> local_tasks() const {
        std::vector<task_info> all;
        for (const auto& in : instances_) {
            std::vector<task_info> mine = in->queries().tasks();
            all.insert(all.end(), mine.begin(), mine.end());
        }
        return all;
    }

    /// @brief Where every partition runs and every instance's endpoint, as
    /// this instance knows it; null until it has read the first assignment.
    [[nodiscard]] std::shared_ptr<const application_metadata> metadata() const {
        for (const auto& in : instances_)
            if (auto md = in->queries().metadata()) return md;
        return nullptr;
    }

private:
    /// Whether a thread's answer leaves the partition to another thread or instance.
    static bool elsewhere(query_status s) noexcept {
        return s == query_status::not_owned || s == query_status::rebalancing || s == query_status::not_running;
    }

    Factory factory_;
    Processor processor_;
    std::unique_ptr<metrics::registry> owned_registry_;
    metrics::registry* registry_;
    std::vector<std::unique_ptr<detail::instance>> instances_;  // one per processing thread
    detail::global_stores globals_;
};

/// @brief `application<K, V, ...>` with the factory's and the processor's
/// types deduced: `make_application<std::string, std::int64_t>(config, factory, processor)`.
///
/// - `factory(task_context&)` returns the task's stores: one store stack, or
///   a std::tuple of them. Give each stack `t.logged()` to make it fault
///   tolerant (its changelog is `<application id>-<store name>-changelog`).
/// - `processor(processor_context<Stores>&, const record<K, V>&)` handles a
///   record; it is copied once per task. An optional member
///   `init(processor_context<Stores>&)` runs when the task starts
///   (the place to schedule punctuations).
template <class K, class V, class Factory, class Processor>
auto make_application(application_options config, Factory factory, Processor processor,
                      metrics::registry* reg = nullptr) {
    static_assert(serializable<K> || std::is_same_v<K, std::string> || std::is_same_v<K, byte_buffer>,
                  "strata::runtime: no serde for the input key type K");
    static_assert(serializable<V> || std::is_same_v<V, std::string> || std::is_same_v<V, byte_buffer>,
                  "strata::runtime: no serde for the input value type V");
    return application<K, V, Factory, Processor>(std::move(config), std::move(factory), std::move(processor), reg);
}

}  // namespace strata::runtime
