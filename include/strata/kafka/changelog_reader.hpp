#pragma once
/// @file
/// @brief Where a `kafka::changelog` writes and how (`changelog_options`),
/// the consumer settings of its replays, and `changelog_reader`: the
/// consumer through which many changelogs look up offsets and replay.

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

class changelog_reader;

/// @brief Where a `kafka::changelog` writes and how.
struct changelog_options {
    std::string bootstrap_servers{};  ///< e.g. "127.0.0.1:9092"
    std::string topic{};              ///< see changelog_topic_name() and ensure_topic()
    std::int32_t partition = 0;     ///< the partition this store instance owns
    /// librdkafka settings of every client (the producer and the consumers):
    /// the connection's security, e.g. security.protocol=SASL_SSL,
    /// sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location.
    /// producer_settings and consumer_settings win where they name the same.
    settings client_settings{};
    /// librdkafka settings of the producer, passed through: batching
    /// (`linger.ms`, `batch.size`), `compression.type`, `message.timeout.ms`
    /// (how long a record may wait for a broker before flush() fails), ...
    settings producer_settings{};
    /// librdkafka settings of the consumers that replay and look up offsets.
    settings consumer_settings{};
    /// Bound on reaching the cluster at construction: a wrong address or a
    /// missing topic fails within it.
    std::chrono::milliseconds connect_timeout{10'000};
    /// Bound on one offset lookup (end_offset) and on a replay that receives
    /// nothing at all for this long.
    std::chrono::milliseconds request_timeout{30'000};
    /// Replay and end_offset() see only committed transactions (and stop at
    /// the last stable offset). Keep it on: with exactly-once, records of an
    /// aborted or unfinished transaction must never be restored.
    bool read_committed = true;
    /// Records handed over per librdkafka batch call during replay.
    std::size_t replay_batch = 4096;
    /// The consumer that looks up offsets and replays, shared with other
    /// changelogs (see changelog_reader); none: the changelog connects one
    /// of its own.
    std::shared_ptr<changelog_reader> reader{};
    /// The topic's partition count when the caller checked it already (the
    /// runtime does, once per store, for all of its tasks): the constructor
    /// then asks no metadata of the broker: an instance of 1,000 tasks with
    /// ten stores otherwise starts with 10,000 metadata requests, each
    /// answered with the topic's 1,000 partitions. 0: it asks.
    std::int32_t checked_partitions = 0;
    /// The reader `follow()` reads through, shared likewise; none: `reader`.
    /// Followers want a long fetch wait (a fetch returns as soon as records
    /// come, so it costs them nothing, and many idle partitions are asked
    /// for less often), restores a short one (a replay that must see the
    /// partition's end waits for one empty fetch).
    std::shared_ptr<changelog_reader> follower{};
};

/// @brief The settings strata gives the consumer that replays a changelog
/// and looks up its offsets (`changelog_options::consumer_settings` go
/// on top). Public so that a benchmark's plain librdkafka consumer can read
/// with exactly the same ones.
///
/// Measured on one partition of 1M records of 106 B (docs/benchmarks-kafka.md):
/// - fetch sizes stay at librdkafka's defaults (1 MiB per partition): 32 MiB
///   fetches made a replay 3-4 times slower;
/// - `queued.min.messages` is raised from 100,000 to 1,000,000: a restore
///   that applied records more slowly than they arrived let the queue reach
///   100,000, and the fetcher then paused for long enough to make the whole
///   replay 3-4 times slower (the memory bound, `queued.max.messages.kbytes`,
///   stays at its default);
/// - a short fetch wait matters at the end only: a replay that must see the
///   partition's end waits for one empty fetch.
[[nodiscard]] inline settings replay_consumer_settings(bool read_committed) {
    return {
        {"allow.auto.create.topics", "false"},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},
        {"auto.offset.reset", "earliest"},
        {"fetch.wait.max.ms", "10"},
        {"queued.min.messages", "1000000"},
        {"isolation.level", read_committed ? "read_committed" : "read_uncommitted"},
    };
}

namespace detail {
inline client make_consumer(const changelog_options& o) {
    conf c(o.client_settings);
    c.set("bootstrap.servers", o.bootstrap_servers);
    c.set(replay_consumer_settings(o.read_committed));
    c.set(o.consumer_settings);
    return client(RD_KAFKA_CONSUMER, std::move(c));
}
}  // namespace detail

/// @brief The consumer with which changelogs look up their offsets and
/// replay, shared by as many of them as hold it: every logged store of an
/// application instance, whatever its tasks and standbys. A librdkafka
/// client has a thread of its own, one per broker it talks to, and a
/// connection to each; a consumer per changelog made an instance of 1,000
/// tasks hold more than 1,000 clients (docs/benchmarks-runtime.md, "Scale").
///
/// Replays of different partitions read through it at once, each its own
/// partition's queue (librdkafka fetches for all of them together); a
/// second replay of the same partition, while the first is open, connects a
/// consumer of its own. Offset lookups go through a second consumer, made
/// on the first lookup, that never fetches: a broker answers the requests
/// of one connection in turn, so a lookup sent behind a fetch that waits
/// for records (`fetch.wait.max.ms`) waited as long. The connection
/// settings (bootstrap servers, client and consumer settings,
/// read_committed) are those of the options it is made with; a changelog
/// with other ones is refused. Thread-safe.
class changelog_reader {
public:
    /// @brief Connects (lazily: librdkafka connects on the first request).
    /// @param lookups_apart whether offsets are looked up with a consumer of
    ///        their own (false: with the one that fetches, as a changelog's
    ///        own reader does; its replays are few and short)
    explicit changelog_reader(const changelog_options& o, bool lookups_apart = true)
        : options_(o), consumer_(detail::make_consumer(o)), lookups_apart_(lookups_apart) {
        options_.reader.reset();
        options_.follower.reset();
    }

    /// @brief The consumer replays fetch with.
    [[nodiscard]] rd_kafka_t* get() const noexcept { return consumer_.get(); }

    /// @brief The consumer offsets are looked up with (it fetches nothing).
    [[nodiscard]] rd_kafka_t* lookups() {
        if (!lookups_apart_) return consumer_.get();
        const std::lock_guard lock(mutex_);
        if (!lookups_) lookups_.emplace(detail::make_consumer(options_));
        return lookups_->get();
    }

    /// @brief The bounds of many partitions, asked for at once through the
    /// lookups consumer (list_bounds_of).
    [[nodiscard]] std::vector<partition_bounds> bounds(
        const std::vector<std::pair<std::string, std::int32_t>>& partitions) {
        return list_bounds_of(lookups(), partitions, options_.request_timeout);
    }

    /// @brief Whether a changelog with options `o` may read through it.
    [[nodiscard]] bool fits(const changelog_options& o) const noexcept {
        return o.bootstrap_servers == options_.bootstrap_servers && o.read_committed == options_.read_committed;
    }

    /// @brief Claims the partition's queue for one replay. False while
    /// another replay of it is open.
    [[nodiscard]] bool open(const std::string& topic, std::int32_t partition) {
        const std::lock_guard lock(mutex_);
        return open_.emplace(topic, partition).second;
    }
    /// @brief Gives back what open() claimed.
    void close(const std::string& topic, std::int32_t partition) noexcept {
        const std::lock_guard lock(mutex_);
        open_.erase({topic, partition});
    }
    /// @brief Replays open now.
    [[nodiscard]] std::size_t open_replays() const {
        const std::lock_guard lock(mutex_);
        return open_.size();
    }

    /// @brief A partition a replay reads, and the offset it reads next.
    struct position {
        std::string topic;
        std::int32_t partition = 0;
        std::int64_t next = 0;
    };

    /// @brief Stops fetching for these replays' partitions. Records fetched
    /// and not yet read are dropped. The pause outlives the replay: a new
    /// replay of the partition fetches only once resume_at() names it.
    void pause(const std::vector<position>& replays) {
        if (replays.empty()) return;
        check(rd_kafka_pause_partitions(consumer_.get(), list_of(replays, false).get()),
              "pause a changelog reader's fetching");
    }

    /// @brief Fetches again for these replays' partitions, each from the
    /// offset its replay reads next. librdkafka resumes a paused partition
    /// from the position the application last consumed, and that outlives a
    /// replay: a partition read by one standby, paused, and then followed by
    /// a new one from elsewhere resumed where the old one had stopped (below
    /// the new one's position, which read as a truncated log; or past it, a
    /// gap). A partition whose consumed position is not the offset its
    /// replay reads next is sent there first; the others are not (a seek
    /// asks the broker to validate the offset: thousands of them a second
    /// took the broker again).
    void resume_at(const std::vector<position>& replays) {
        if (replays.empty()) return;
        const unique_partition_list all = list_of(replays, false);
        check(rd_kafka_position(consumer_.get(), all.get()), "read a changelog reader's positions");
        std::vector<position> elsewhere;
        for (int i = 0; i < all->cnt; ++i) {
            const std::int64_t at = all->elems[i].offset;
            const position& want = replays[static_cast<std::size_t>(i)];
            if (at >= 0 && at != want.next) elsewhere.push_back(want);
        }
        if (!elsewhere.empty())
            check(rd_kafka_seek_partitions(consumer_.get(), list_of(elsewhere, true).get(), 0),
                  "position a changelog reader's partitions");
        check(rd_kafka_resume_partitions(consumer_.get(), all.get()), "resume a changelog reader's fetching");
    }

private:
    static unique_partition_list list_of(const std::vector<position>& replays, bool with_offsets) {
        unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(replays.size())));
        for (const position& p : replays) {
            rd_kafka_topic_partition_t* e = rd_kafka_topic_partition_list_add(l.get(), p.topic.c_str(), p.partition);
            if (with_offsets) e->offset = p.next;
        }
        return l;
    }

    changelog_options options_;  // what its consumers are made with
    client consumer_;
    bool lookups_apart_;
    mutable std::mutex mutex_;
    std::optional<client> lookups_;                        // under mutex_
    std::set<std::pair<std::string, std::int32_t>> open_;  // under mutex_
};

}  // namespace strata::kafka
