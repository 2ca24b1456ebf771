#pragma once
/// @file
/// @brief Changelog topics: their names, and making sure one exists with the
/// settings a changelog needs (compacted, the right partition count) before
/// any store writes to it.

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief The changelog topic of a store, named as Kafka Streams names it,
/// `<application>-<store>-changelog`, so tools that know Kafka Streams find it.
[[nodiscard]] inline std::string changelog_topic_name(std::string_view application, std::string_view store) {
    std::string t(application);
    t += '-';
    t += store;
    t += "-changelog";
    return t;
}

/// @brief How a changelog topic is created, and what is checked when it exists.
struct topic_options {
    std::string bootstrap_servers{};       ///< e.g. "127.0.0.1:9092"
    std::int32_t partitions = 1;           ///< one per input partition
    std::int16_t replication_factor = 1;   ///< 3 in production; 1 for a single test broker; -1: the broker's default
    /// Topic configs added at creation, e.g. {"segment.ms", "100"}; cleanup.policy
    /// is `compact` unless given here.
    settings topic_configs{};
    /// librdkafka settings of the admin client (security, timeouts).
    settings client_settings{};
    std::chrono::milliseconds timeout{30'000};  ///< for each admin request
    /// Refuse an existing topic whose cleanup.policy is not `compact` (or not
    /// the one topic_configs asks for). Records carry the current state of a
    /// key, so only compaction (never time or size retention) keeps
    /// everything restore needs; a windowed store's changelog deletes by time
    /// too, past what the store keeps (windowed_changelog_configs).
    bool require_compaction = true;
};

/// @brief What `ensure_topic` found.
enum class topic_status { created, existed };

namespace detail {

inline client admin_client(const topic_options& o) {
    conf c(o.client_settings);
    c.set("bootstrap.servers", o.bootstrap_servers);
    return client(RD_KAFKA_PRODUCER, std::move(c));
}

/// Waits for the result event of one admin request.
inline unique_event await_admin(rd_kafka_queue_t* q, rd_kafka_event_type_t type, std::chrono::milliseconds timeout,
                                std::string_view what) {
    unique_event ev(rd_kafka_queue_poll(q, timeout_ms(timeout) + 1000));
    if (!ev) throw error(what, RD_KAFKA_RESP_ERR__TIMED_OUT);
    if (rd_kafka_event_type(ev.get()) != type || rd_kafka_event_error(ev.get()) != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw error(what, rd_kafka_event_error(ev.get()), rd_kafka_event_error_string(ev.get()));
    return ev;
}

inline unique_admin_options admin_options(rd_kafka_t* rk, rd_kafka_admin_op_t op, std::chrono::milliseconds timeout) {
    unique_admin_options opts(rd_kafka_AdminOptions_new(rk, op));
    std::array<char, 256> err{};
    check(rd_kafka_AdminOptions_set_request_timeout(opts.get(), timeout_ms(timeout), err.data(), err.size()),
          "admin request timeout");
    if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS)
        check(rd_kafka_AdminOptions_set_operation_timeout(opts.get(), timeout_ms(timeout), err.data(), err.size()),
              "admin operation timeout");
    return opts;
}

/// @returns whether the topic was created (false: it already existed)
inline bool create_topic(rd_kafka_t* rk, const std::string& topic, const topic_options& o) {
    std::array<char, 512> err{};
    using unique_new_topic = std::unique_ptr<rd_kafka_NewTopic_t, destroy_with<&rd_kafka_NewTopic_destroy>>;
    unique_new_topic nt(rd_kafka_NewTopic_new(topic.c_str(), o.partitions, o.replication_factor, err.data(),
                                              err.size()));
    if (!nt) throw changelog_error("strata::kafka: cannot create topic " + topic + ": " + err.data());
    const std::string what = "create topic " + topic;
    if (!o.topic_configs.contains("cleanup.policy"))
        check(rd_kafka_NewTopic_set_config(nt.get(), "cleanup.policy", "compact"), what);
    for (const auto& [name, value] : o.topic_configs)
        check(rd_kafka_NewTopic_set_config(nt.get(), name.c_str(), value.c_str()), what);

    const unique_queue q(rd_kafka_queue_new(rk));
    const auto opts = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, o.timeout);
    rd_kafka_NewTopic_t* topics[] = {nt.get()};
    rd_kafka_CreateTopics(rk, topics, 1, opts.get(), q.get());
    const unique_event ev = await_admin(q.get(), RD_KAFKA_EVENT_CREATETOPICS_RESULT, o.timeout, what);
    std::size_t n = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev.get()), &n);
    if (n != 1) throw error(what, RD_KAFKA_RESP_ERR__BAD_MSG, "no result for the topic");
    const rd_kafka_resp_err_t code = rd_kafka_topic_result_error(results[0]);
    if (code == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) return false;
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* msg = rd_kafka_topic_result_error_string(results[0]);
        throw error(what, code, msg != nullptr ? msg : "");
    }
    return true;
}

/// The value of one of the topic's configs, as the broker reports it ("" if none).
inline std::string topic_config(rd_kafka_t* rk, const std::string& topic, std::string_view name,
                                const topic_options& o) {
    const std::string what = "describe the configs of topic " + topic;
    using unique_resource = std::unique_ptr<rd_kafka_ConfigResource_t, destroy_with<&rd_kafka_ConfigResource_destroy>>;
    unique_resource res(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()));
    const unique_queue q(rd_kafka_queue_new(rk));
    const auto opts = admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, o.timeout);
    rd_kafka_ConfigResource_t* resources[] = {res.get()};
    rd_kafka_DescribeConfigs(rk, resources, 1, opts.get(), q.get());
    const unique_event ev = await_admin(q.get(), RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, o.timeout, what);
    std::size_t n = 0;
    const rd_kafka_ConfigResource_t** described =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev.get()), &n);
    if (n != 1) throw error(what, RD_KAFKA_RESP_ERR__BAD_MSG, "no result for the topic");
    check(rd_kafka_ConfigResource_error(described[0]), what);
    std::size_t entries = 0;
    const rd_kafka_ConfigEntry_t** configs = rd_kafka_ConfigResource_configs(described[0], &entries);
    for (std::size_t i = 0; i < entries; ++i) {
        if (std::string_view(rd_kafka_ConfigEntry_name(configs[i])) == name) {
            const char* v = rd_kafka_ConfigEntry_value(configs[i]);
            return v != nullptr ? v : "";
        }
    }
    return {};
}

/// The policies of a cleanup.policy value ("compact,delete"), sorted.
inline std::vector<std::string> policies_of(std::string_view policy) {
    std::vector<std::string> out;
    while (!policy.empty()) {
        const auto comma = policy.find(',');
        std::string_view one = policy.substr(0, comma);
        while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
        while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
        if (!one.empty()) out.emplace_back(one);
        policy = comma == std::string_view::npos ? std::string_view{} : policy.substr(comma + 1);
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Runs `f` until it returns, again while it throws an error that asking
/// again may mend (detail::transient) and `deadline` is not near: a topic
/// another client has just created is unknown for a moment to the broker
/// that answers (on a cluster, brokers learn of it one by one), and a broker
/// that dies while it answers leaves a transport error behind.
template <class F>
auto retry_while_transient(std::chrono::steady_clock::time_point deadline, F&& f) -> decltype(f()) {
    for (;;) {
        try {
            return f();
        } catch (const error& e) {
            if (!transient(e.code()) || std::chrono::steady_clock::now() + std::chrono::milliseconds(100) >= deadline)
                throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

/// Asks the end offset of every partition of `t` at once, again while an
/// answer says to ask again, until `deadline`. @returns the last error, or none
inline rd_kafka_resp_err_t list_ends(rd_kafka_t* rk, const std::string& topic, const rd_kafka_metadata_topic_t& t,
                                     std::chrono::steady_clock::time_point deadline) {
    std::vector<std::pair<std::string, std::int32_t>> partitions;
    partitions.reserve(static_cast<std::size_t>(t.partition_cnt));
    for (int i = 0; i < t.partition_cnt; ++i) partitions.emplace_back(topic, t.partitions[i].id);
    std::vector<std::int64_t> ends;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        const rd_kafka_resp_err_t err =
            list_offsets(rk, partitions, RD_KAFKA_OFFSET_END, timeout_ms(std::max(left, std::chrono::milliseconds(1))), ends)
                .err;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR || !transient(err) ||
            std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline)
            return err;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

/// Polls metadata until the topic has `expected` partitions, each with a
/// leader (a freshly created topic takes a moment to become usable); -1
/// accepts any count. @returns the partition count
inline std::int32_t await_partitions(rd_kafka_t* rk, const std::string& topic, std::int32_t expected,
                                     std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const unique_topic rkt(rd_kafka_topic_new(rk, topic.c_str(), nullptr));
    rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR__TIMED_OUT;
    for (;;) {
        const rd_kafka_metadata_t* md = nullptr;
        last = rd_kafka_metadata(rk, 0, rkt.get(), &md, 5000);
        if (last == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const std::unique_ptr<const rd_kafka_metadata_t, destroy_with<&rd_kafka_metadata_destroy>> owned(md);
            last = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
            if (last == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const auto& t = md->topics[0];
                bool led = t.partition_cnt > 0;
                for (int i = 0; i < t.partition_cnt; ++i) led = led && t.partitions[i].leader >= 0;
                if (led && (expected < 0 || t.partition_cnt >= expected)) {
                    // Leaders in the metadata may not serve yet: wait until each
                    // answers, all partitions in one request to each leader (a
                    // topic of 1,000 partitions was 2,000 requests one by one).
                    last = list_ends(rk, topic, t, deadline);
                    if (last == RD_KAFKA_RESP_ERR_NO_ERROR) return t.partition_cnt;
                    if (!transient(last)) throw error("look up the offsets of " + topic, last);
                }
            }
        }
        if (std::chrono::steady_clock::now() >= deadline)
            throw error("wait for topic " + topic + " to become available", last);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace detail

/// @brief Makes sure `topic` exists and can serve as a changelog: creates it
/// (compacted, `o.partitions` partitions, `o.topic_configs`) when missing;
/// when it exists, refuses it unless its cleanup.policy is `compact`, or the
/// one `o.topic_configs` asks for (a windowed store's `compact,delete`),
/// with `o.require_compaction`, and it has exactly `o.partitions` partitions, since
/// a store instance per input partition reads the changelog partition of the
/// same number.
/// @throws changelog_error the cluster cannot be reached, refused the topic,
///         or the existing topic does not fit
inline topic_status ensure_topic(const std::string& topic, const topic_options& o) {
    if (o.partitions < 1) throw usage_error("strata::kafka::ensure_topic: partitions must be at least 1");
    const client admin = detail::admin_client(o);
    const auto deadline = std::chrono::steady_clock::now() + o.timeout;
    // Asked again after a transport error, creating finds the topic it made
    // the first time: existing, its settings are then checked as any other's.
    const bool created =
        detail::retry_while_transient(deadline, [&] { return detail::create_topic(admin.get(), topic, o); });
    const std::int32_t partitions =
        detail::await_partitions(admin.get(), topic, created ? o.partitions : -1, o.timeout);
    if (created) return topic_status::created;

    if (partitions != o.partitions)
        throw changelog_error("strata::kafka: changelog topic " + topic + " has " + std::to_string(partitions) +
                              " partitions, expected " + std::to_string(o.partitions) +
                              " (one per input partition); a changelog's partition count cannot change, so "
                              "recreate the topic or use the matching count");
    if (o.require_compaction) {
        const std::string policy = detail::retry_while_transient(
            deadline, [&] { return detail::topic_config(admin.get(), topic, "cleanup.policy", o); });
        // A windowed store's changelog asks for compact,delete (its windows
        // expire); any other changelog is compact alone.
        const auto asked = o.topic_configs.find("cleanup.policy");
        const std::string wanted = asked != o.topic_configs.end() ? asked->second : "compact";
        if (detail::policies_of(wanted) != std::vector<std::string>{"compact"}) {
            if (detail::policies_of(policy) != detail::policies_of(wanted))
                throw changelog_error("strata::kafka: changelog topic " + topic + " has cleanup.policy=" +
                                      (policy.empty() ? std::string("<unknown>") : policy) + ", expected " + wanted +
                                      " (the store's changelog configs). Alter the topic (kafka-configs --alter "
                                      "--add-config cleanup.policy=" + wanted + ") or choose another name");
        } else if (policy != "compact")
            throw changelog_error("strata::kafka: changelog topic " + topic + " has cleanup.policy=" +
                                  (policy.empty() ? std::string("<unknown>") : policy) +
                                  ", but a changelog needs cleanup.policy=compact: its records carry the "
                                  "current state of each key, and deletion by time or size would lose state "
                                  "that restore needs. Alter the topic (kafka-configs --alter --add-config "
                                  "cleanup.policy=compact) or choose another name");
    }
    return topic_status::existed;
}

/// @brief The fewest replicas any partition of `topic` has (what a
/// replication factor of -1, the broker's default, came to).
/// A topic just created may be unknown for a moment to the broker that
/// answers, and a broker may die while it answers: retried until `o.timeout`.
inline int replication_of(const std::string& topic, const topic_options& o) {
    using owned_metadata = std::unique_ptr<const rd_kafka_metadata_t, detail::destroy_with<&rd_kafka_metadata_destroy>>;
    const client admin = detail::admin_client(o);
    const unique_topic rkt(rd_kafka_topic_new(admin.get(), topic.c_str(), nullptr));
    const owned_metadata md = detail::retry_while_transient(std::chrono::steady_clock::now() + o.timeout, [&] {
        const rd_kafka_metadata_t* m = nullptr;
        check(rd_kafka_metadata(admin.get(), 0, rkt.get(), &m, timeout_ms(o.timeout)), "describe topic " + topic);
        owned_metadata owned(m);
        check(m->topic_cnt == 1 ? m->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "describe topic " + topic);
        return owned;
    });
    int fewest = 0;
    for (int i = 0; i < md->topics[0].partition_cnt; ++i) {
        const int n = md->topics[0].partitions[i].replica_cnt;
        fewest = i == 0 ? n : std::min(fewest, n);
    }
    return fewest;
}

/// @brief The value of the config `name` of `topic` ("" if the broker has none).
/// @throws changelog_error the cluster cannot be reached or refused the request
inline std::string describe_topic_config(const std::string& topic, std::string_view name, const topic_options& o) {
    const client admin = detail::admin_client(o);
    return detail::retry_while_transient(std::chrono::steady_clock::now() + o.timeout,
                                         [&] { return detail::topic_config(admin.get(), topic, name, o); });
}

/// @brief How much longer than its store a windowed store's changelog keeps
/// records: Kafka Streams' windowstore.changelog.additional.retention.ms
/// default, a day, so a restore still finds every window the store keeps.
inline constexpr std::chrono::milliseconds windowed_changelog_extra_retention{24 * 60 * 60 * 1000};

/// @brief The changelog topic configs of a window or session store that
/// keeps `store_retention`, as Kafka Streams sets them
/// (WindowedChangelogTopicConfig): compacted and deleted by time, records
/// kept for the store's retention plus `extra`. Pass them as
/// topic_options::topic_configs.
[[nodiscard]] inline settings windowed_changelog_configs(
    std::chrono::milliseconds store_retention,
    std::chrono::milliseconds extra = windowed_changelog_extra_retention) {
    return {{"cleanup.policy", "compact,delete"},
            {"retention.ms", std::to_string((store_retention + extra).count())}};
}

/// @brief The changelog topic configs of a versioned store that keeps
/// `history_retention` of history, as Kafka Streams sets them
/// (VersionedChangelogTopicConfig): compacted, but no record compacted away
/// before it is `history_retention + extra` old, since every record is a
/// version of its key that reads as of a time within the history need.
[[nodiscard]] inline settings versioned_changelog_configs(
    std::chrono::milliseconds history_retention,
    std::chrono::milliseconds extra = windowed_changelog_extra_retention) {
    return {{"cleanup.policy", "compact"},
            {"min.compaction.lag.ms", std::to_string((history_retention + extra).count())}};
}

/// @brief Where `delete_records_before` cuts one partition: its records
/// before `offset` go.
struct record_cut {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
};

/// @brief Deletes the records before each cut's offset (the broker moves
/// the partition's log start there; DeleteRecords), in one request. Only
/// the admin client in `o` is used (bootstrap, client settings, timeout).
/// @throws error the request failed, or a partition refused its cut (the
///         first such partition is named)
inline void delete_records_before(const std::vector<record_cut>& cuts, const topic_options& o) {
    if (cuts.empty()) return;
    const client admin = detail::admin_client(o);
    unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(cuts.size())));
    for (const record_cut& c : cuts)
        rd_kafka_topic_partition_list_add(l.get(), c.topic.c_str(), c.partition)->offset = c.offset;
    using unique_delete = std::unique_ptr<rd_kafka_DeleteRecords_t, detail::destroy_with<&rd_kafka_DeleteRecords_destroy>>;
    const unique_delete del(rd_kafka_DeleteRecords_new(l.get()));
    const std::string what = "delete records of " + cuts.front().topic + (cuts.size() > 1 ? " and others" : "");
    const unique_queue q(rd_kafka_queue_new(admin.get()));
    const auto opts = detail::admin_options(admin.get(), RD_KAFKA_ADMIN_OP_DELETERECORDS, o.timeout);
    rd_kafka_DeleteRecords_t* dels[] = {del.get()};
    rd_kafka_DeleteRecords(admin.get(), dels, 1, opts.get(), q.get());
    const unique_event ev = detail::await_admin(q.get(), RD_KAFKA_EVENT_DELETERECORDS_RESULT, o.timeout, what);
    const rd_kafka_topic_partition_list_t* done =
        rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev.get()));
    for (int i = 0; done != nullptr && i < done->cnt; ++i)
        check(done->elems[i].err, "delete records of " + std::string(done->elems[i].topic) + "[" +
                                      std::to_string(done->elems[i].partition) + "]");
}

/// @brief `ensure_topic(changelog_topic_name(application, store), o)`.
/// @returns the topic's name
inline std::string ensure_changelog_topic(std::string_view application, std::string_view store,
                                          const topic_options& o) {
    std::string topic = changelog_topic_name(application, store);
    (void)ensure_topic(topic, o);
    return topic;
}

}  // namespace strata::kafka
