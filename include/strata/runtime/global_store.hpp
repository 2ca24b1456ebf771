#pragma once
/// @file
/// @brief `strata::runtime::global_store`: a store built from every
/// partition of a topic on every instance, as Kafka Streams' global tables:
/// reference data every task needs whole (a schedule's metadata, a price
/// list), read by any processor whatever its partition.
///
///     auto prices = strata::runtime::make_global_store<std::string, std::int64_t>(
///         {.topic = "prices"}, strata::hash_map_store<std::string, std::int64_t>("prices"));
///     auto app = strata::runtime::make_application<std::string, std::int64_t>(c, factory,
///         [prices](auto& ctx, const auto& order) {
///             const auto price = prices->get(*order.value);   // any key, on any task
///             ...
///         });
///     app.add_global_store(prices);   // run() reads it whole before any task processes
///     app.run();
///
/// - Bootstrap: `run()` reads every partition of the topic from its start
///   to the end it had when the bootstrap began (read_committed: its last
///   stable offset), applying each record (`put`, or `erase` for a null
///   value), before any task processes a record. `on_progress` reports how
///   far it got.
/// - Kept current: then one consumer per global store and instance follows
///   the topic on a thread of its own and applies what arrives, in batches.
/// - The topic is the store's changelog: no other is written, and the
///   topic should be compacted (a producer of reference data writes
///   current values by key), or the bootstrap reads every version ever
///   written. The store is rebuilt from the topic at every start.
/// - Reads: `get(key)` and `query(f)` from any thread, under a shared lock
///   the follower takes exclusively for each batch it applies: a read sees
///   the store between two batches. Partition offsets are not aligned with
///   any task's input: a processor reads the reference data as far as the
///   follower got, as in Kafka Streams.
/// - Keys and values are decoded with `strata::decode<K>` / `<V>`, as
///   input records are; a record that does not decode stops the follower
///   with an error naming its coordinates (application::run throws it).

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/changelog_reader.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/runtime/error.hpp>
#include <strata/serde/encode.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>
#include <sys/types.h>

namespace strata::runtime {

/// @brief How far a global store's bootstrap got.
struct global_store_progress {
    std::string_view store;
    std::uint64_t records = 0;  ///< records applied so far
    std::uint64_t to_read = 0;  ///< at most this many in all: the topic's offsets from start to end
    bool done = false;          ///< the last report of the bootstrap
};

/// @brief Where a global store comes from.
struct global_store_options {
    std::string topic;                  ///< read whole, every partition; compacted, ideally
    std::string bootstrap_servers{};    ///< empty: the application's
    kafka::settings client_settings{};  ///< librdkafka settings of its consumer (added to the application's)
    /// Called on the bootstrapping thread about once a second, and once at the end.
    std::function<void(const global_store_progress&)> on_progress{};
    std::chrono::milliseconds broker_timeout{60'000};  ///< for looking up the topic and its offsets
};

namespace detail {

/// The part of a global store the application drives.
class global_store_base {
public:
    virtual ~global_store_base() = default;
    /// Reads the topic to the end it had when called; false when stop() cut it short.
    virtual bool bootstrap(const std::string& bootstrap_servers, const kafka::settings& client_settings) = 0;
    /// Follows the topic on a thread of its own until stop(); a failure
    /// ends the follower, which calls `on_failure` (to stop the application).
    virtual void start_following(std::function<void()> on_failure) = 0;
    /// Stops a bootstrap or the follower, and joins the follower.
    /// @throws what stopped the follower, if it failed
    virtual void stop() = 0;
    /// Asks the bootstrap or the follower to stop; safe from a signal handler.
    virtual void request_stop() noexcept = 0;
};

/// The global stores of an application or topology, driven together.
class global_stores {
public:
    void add(std::shared_ptr<global_store_base> g) { stores_.push_back(std::move(g)); }
    [[nodiscard]] bool empty() const noexcept { return stores_.empty(); }

    /// Bootstraps each in turn, then starts their followers.
    /// @returns false when stop() came first (nothing follows then)
    bool start(const std::string& bootstrap_servers, const kafka::settings& client_settings,
               const std::function<void()>& on_failure) {
        for (const auto& g : stores_)
            if (!g->bootstrap(bootstrap_servers, client_settings)) return false;
        for (const auto& g : stores_) g->start_following(on_failure);
        return true;
    }
    /// @throws the first follower's failure
    void stop() {
        std::exception_ptr first;
        for (const auto& g : stores_) {
            try {
                g->stop();
            } catch (...) {
                if (!first) first = std::current_exception();
            }
        }
        if (first) std::rethrow_exception(first);
    }
    void request_stop() noexcept {
        for (const auto& g : stores_) g->request_stop();
    }

private:
    std::vector<std::shared_ptr<global_store_base>> stores_;
};

}  // namespace detail

/// @brief A kv store kept equal to a topic on every instance; see the file comment.
template <class K, class V, kv_store Store>
class global_store final : public detail::global_store_base {
public:
    using store_type = Store;
    using key_type = typename Store::key_type;
    using mapped_type = typename Store::mapped_type;
    static_assert(std::is_same_v<key_type, K> && std::is_same_v<mapped_type, V>,
                  "strata::runtime::global_store<K, V, Store>: the store's key and mapped types are K and V");

    global_store(global_store_options o, Store s) : options_(std::move(o)), store_(std::move(s)) {
        if (options_.topic.empty()) throw usage_error("strata::runtime: a global store needs a topic");
    }
    ~global_store() override {
        request_stop();
        if (follower_.joinable()) follower_.join();
    }

    /// @brief The value of `key`, as far as the store has read the topic; from any thread.
    [[nodiscard]] std::optional<V> get(const K& key) const {
        const std::shared_lock lock(mutex_);
        return store_.get(key);
    }
    /// @brief `f(const Store&)` under the store's shared lock, from any
    /// thread; f returns a value, not a view into the store.
    template <class F>
    auto query(F&& f) const {
        const std::shared_lock lock(mutex_);
        return std::invoke(std::forward<F>(f), std::as_const(store_));
    }

    [[nodiscard]] const std::string& topic() const noexcept { return options_.topic; }
    /// @brief Records applied since the bootstrap began.
    [[nodiscard]] std::uint64_t records_applied() const noexcept { return applied_.load(std::memory_order_relaxed); }
    /// @brief Whether the bootstrap finished (reads before it answer from part of the topic).
    [[nodiscard]] bool bootstrapped() const noexcept { return bootstrapped_.load(std::memory_order_acquire); }
    /// @brief How long the bootstrap took (zero before it finished).
    [[nodiscard]] std::chrono::milliseconds bootstrap_time() const noexcept {
        return std::chrono::milliseconds(bootstrap_ms_.load(std::memory_order_relaxed));
    }

    bool bootstrap(const std::string& bootstrap_servers, const kafka::settings& client_settings) override {
        const auto started = std::chrono::steady_clock::now();
        open(bootstrap_servers, client_settings);
        std::vector<std::pair<std::string, std::int32_t>> parts;
        for (std::int32_t p = 0; p < partitions_; ++p) parts.emplace_back(options_.topic, p);
        const std::vector<kafka::partition_bounds> bounds = kafka::list_bounds_of(consumer_->get(), parts, options_.broker_timeout);
        ends_.clear();
        std::uint64_t to_read = 0;
        for (const kafka::partition_bounds& b : bounds) {
            ends_.push_back(b.end);
            to_read += static_cast<std::uint64_t>(b.end - b.start);
        }
        std::vector<char> reached(static_cast<std::size_t>(partitions_));  // not vector<bool>: its elements are no references
        std::int32_t left = 0;
        for (std::int32_t p = 0; p < partitions_; ++p) {
            reached[static_cast<std::size_t>(p)] = bounds[static_cast<std::size_t>(p)].end <= bounds[static_cast<std::size_t>(p)].start ? 1 : 0;
            left += reached[static_cast<std::size_t>(p)] != 0 ? 0 : 1;
        }
        auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        const auto report = [&](bool done) {
            if (options_.on_progress) options_.on_progress({options_.topic, records_applied(), to_read, done});
        };
        while (left > 0) {
            if (stop_.load(std::memory_order_relaxed)) return false;
            apply_batch([&](std::int32_t p, std::int64_t next_offset) {
                char& r = reached[static_cast<std::size_t>(p)];
                if (r == 0 && next_offset >= ends_[static_cast<std::size_t>(p)]) {
                    r = 1;
                    --left;
                }
            });
            if (options_.on_progress && std::chrono::steady_clock::now() >= next_report) {
                report(false);
                next_report += std::chrono::seconds(1);
            }
        }
        bootstrap_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count(),
                            std::memory_order_relaxed);
        bootstrapped_.store(true, std::memory_order_release);
        report(true);
        return true;
    }

    void start_following(std::function<void()> on_failure) override {
        follower_ = std::thread([this, on_failure = std::move(on_failure)] {
            try {
                while (!stop_.load(std::memory_order_relaxed)) apply_batch([](std::int32_t, std::int64_t) {});
            } catch (...) {
                failure_ = std::current_exception();
                if (on_failure) on_failure();
            }
        });
    }

    void stop() override {
        request_stop();
        if (follower_.joinable()) follower_.join();
        queue_.reset();  // the consumer's, released before it
        consumer_.reset();
        if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    }
    void request_stop() noexcept override { stop_.store(true, std::memory_order_relaxed); }

private:
    void open(const std::string& bootstrap_servers, const kafka::settings& client_settings) {
        kafka::conf c(client_settings);
        c.set("bootstrap.servers", options_.bootstrap_servers.empty() ? bootstrap_servers : options_.bootstrap_servers);
        // A replay's settings (changelog_reader.hpp): above all a deep local
        // queue, without which the fetcher pauses whenever applying falls
        // behind (a bootstrap of 1M records took 3.2 s with librdkafka's
        // default, in steps of a second), and partition ends reported.
        c.set(kafka::replay_consumer_settings(true));
        c.set("group.id", "strata-global-" + options_.topic);  // librdkafka wants one; nothing is committed
        c.set(options_.client_settings);
        consumer_ = std::make_unique<kafka::client>(RD_KAFKA_CONSUMER, std::move(c));
        partitions_ = kafka::probe_topic(consumer_->get(), bootstrap_servers, options_.topic, options_.broker_timeout);
        const kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(partitions_));
        for (std::int32_t p = 0; p < partitions_; ++p)
            rd_kafka_topic_partition_list_add(l.get(), options_.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        kafka::check(rd_kafka_assign(consumer_->get(), l.get()), "assign the partitions of " + options_.topic);
        queue_.reset(rd_kafka_queue_get_consumer(consumer_->get()));
    }

    /// Consumes up to a batch and applies it under the exclusive lock;
    /// `seen(p, next_offset)` learns how far each partition got.
    template <class Seen>
    void apply_batch(Seen&& seen) {
        std::array<rd_kafka_message_t*, 1000> batch{};
        const ssize_t n = rd_kafka_consume_batch_queue(queue_.get(), 100, batch.data(), batch.size());
        if (n < 0) kafka::check(rd_kafka_last_error(), "read " + options_.topic);
        struct release {
            std::array<rd_kafka_message_t*, 1000>& b;
            ssize_t n;
            ~release() {
                for (ssize_t i = 0; i < n; ++i) rd_kafka_message_destroy(b[static_cast<std::size_t>(i)]);
            }
        } owned{batch, n};
        if (n <= 0) return;
        const std::unique_lock lock(mutex_);
        for (ssize_t i = 0; i < n; ++i) {
            const rd_kafka_message_t& m = *batch[static_cast<std::size_t>(i)];
            if (m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                seen(m.partition, m.offset);
                continue;
            }
            if (m.err != RD_KAFKA_RESP_ERR_NO_ERROR)
                kafka::check(m.err, "read " + options_.topic + "[" + std::to_string(m.partition) + "]");
            apply(m);
            seen(m.partition, m.offset + 1);
        }
    }

    void apply(const rd_kafka_message_t& m) {
        try {
            K key = decode<K>(bytes_view(static_cast<const std::byte*>(m.key), m.key_len));
            if (m.payload == nullptr) (void)store_.erase(key);
            else store_.put(key, decode<V>(bytes_view(static_cast<const std::byte*>(m.payload), m.len)));
        } catch (const std::exception& e) {
            throw error("strata::runtime: global store over " + options_.topic +
                        ": cannot decode the record at " + options_.topic + "[" + std::to_string(m.partition) +
                        "]@" + std::to_string(m.offset) + ": " + e.what());
        }
        applied_.fetch_add(1, std::memory_order_relaxed);
    }

    global_store_options options_;
    mutable std::shared_mutex mutex_;
    Store store_;
    std::unique_ptr<kafka::client> consumer_;
    kafka::unique_queue queue_;
    std::int32_t partitions_ = 0;
    std::vector<std::int64_t> ends_;
    std::thread follower_;
    std::exception_ptr failure_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> bootstrapped_{false};
    std::atomic<std::uint64_t> applied_{0};
    std::atomic<std::int64_t> bootstrap_ms_{0};
};

/// @brief A global store of `store`'s type over `o.topic`, shared by the
/// application (add_global_store) and the processors that read it.
template <class K, class V, kv_store Store>
[[nodiscard]] std::shared_ptr<global_store<K, V, Store>> make_global_store(global_store_options o, Store store) {
    static_assert(serializable<K> || std::is_same_v<K, std::string> || std::is_same_v<K, byte_buffer>,
                  "strata::runtime: no serde for the global store's key type K");
    static_assert(serializable<V> || std::is_same_v<V, std::string> || std::is_same_v<V, byte_buffer>,
                  "strata::runtime: no serde for the global store's value type V");
    return std::make_shared<global_store<K, V, Store>>(std::move(o), std::move(store));
}

}  // namespace strata::runtime
