#pragma once
/// @file
/// @brief Owning wrappers of librdkafka's handles, so that no path, error
/// paths included, leaks a client, a configuration or a message: `conf`,
/// `client` (producer or consumer), and `unique_*` pointers for topic
/// partition lists, topics, queues, events, messages and group metadata.

#include <strata/kafka/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief librdkafka settings by name (see librdkafka's CONFIGURATION.md),
/// passed through as they are: batching (`linger.ms`, `batch.size`),
/// compression (`compression.type`), timeouts, security.
using settings = std::map<std::string, std::string, std::less<>>;

/// @brief Owns a topic partition list.
using unique_partition_list =
    std::unique_ptr<rd_kafka_topic_partition_list_t, detail::destroy_with<&rd_kafka_topic_partition_list_destroy>>;
/// @brief Owns a topic handle (for the legacy per-partition consumer API).
using unique_topic = std::unique_ptr<rd_kafka_topic_t, detail::destroy_with<&rd_kafka_topic_destroy>>;
/// @brief Owns a queue reference.
using unique_queue = std::unique_ptr<rd_kafka_queue_t, detail::destroy_with<&rd_kafka_queue_destroy>>;
/// @brief Owns an event (an admin result, for one).
using unique_event = std::unique_ptr<rd_kafka_event_t, detail::destroy_with<&rd_kafka_event_destroy>>;
/// @brief Owns a consumed message.
using unique_message = std::unique_ptr<rd_kafka_message_t, detail::destroy_with<&rd_kafka_message_destroy>>;
/// @brief Owns a consumer's group metadata, as a transaction needs it.
using unique_group_metadata = std::unique_ptr<rd_kafka_consumer_group_metadata_t,
                                              detail::destroy_with<&rd_kafka_consumer_group_metadata_destroy>>;
/// @brief Owns a topic's configuration until a topic handle takes it.
using unique_topic_conf = std::unique_ptr<rd_kafka_topic_conf_t, detail::destroy_with<&rd_kafka_topic_conf_destroy>>;
/// @brief Owns record headers until a produce call takes them.
using unique_headers = std::unique_ptr<rd_kafka_headers_t, detail::destroy_with<&rd_kafka_headers_destroy>>;
/// @brief Owns admin options.
using unique_admin_options =
    std::unique_ptr<rd_kafka_AdminOptions_t, detail::destroy_with<&rd_kafka_AdminOptions_destroy>>;

/// @brief A new partition list holding one partition (offset unset).
[[nodiscard]] inline unique_partition_list one_partition(std::string_view topic, std::int32_t partition,
                                                         std::int64_t offset = RD_KAFKA_OFFSET_INVALID) {
    unique_partition_list list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), std::string(topic).c_str(), partition)->offset = offset;
    return list;
}

/// @brief A librdkafka configuration under construction. Setting an unknown
/// name or an invalid value throws at once, naming both, rather than failing
/// later with a vaguer message.
class conf {
public:
    conf() : conf_(rd_kafka_conf_new()) {}
    explicit conf(const settings& s) : conf() { set(s); }

    conf(conf&&) noexcept = default;
    conf& operator=(conf&&) noexcept = default;

    /// @throws changelog_error librdkafka rejected the name or the value
    conf& set(std::string_view name, std::string_view value) {
        std::array<char, 512> err{};
        const std::string n(name), v(value);
        if (rd_kafka_conf_set(conf_.get(), n.c_str(), v.c_str(), err.data(), err.size()) != RD_KAFKA_CONF_OK)
            throw changelog_error("strata::kafka: invalid setting " + n + "=" + v + ": " + err.data());
        return *this;
    }
    conf& set(const settings& s) {
        for (const auto& [name, value] : s) set(name, value);
        return *this;
    }

    /// @brief The value of a setting (librdkafka's default when unset).
    [[nodiscard]] std::string get(std::string_view name) const {
        std::array<char, 1024> buf{};
        std::size_t size = buf.size();
        if (rd_kafka_conf_get(conf_.get(), std::string(name).c_str(), buf.data(), &size) != RD_KAFKA_CONF_OK)
            return {};
        return buf.data();
    }

    [[nodiscard]] rd_kafka_conf_t* get() const noexcept { return conf_.get(); }
    /// @brief Gives up ownership (rd_kafka_new takes it on success).
    [[nodiscard]] rd_kafka_conf_t* release() noexcept { return conf_.release(); }

private:
    std::unique_ptr<rd_kafka_conf_t, detail::destroy_with<&rd_kafka_conf_destroy>> conf_;
};

/// @brief An owned producer or consumer (`rd_kafka_t`). A consumer that
/// joined a group is closed (leaving the group cleanly) before it is destroyed.
class client {
public:
    /// @throws changelog_error librdkafka refused the configuration
    client(rd_kafka_type_t type, conf c) {
        std::array<char, 512> err{};
        rd_kafka_t* rk = rd_kafka_new(type, c.get(), err.data(), err.size());
        if (rk == nullptr)
            throw changelog_error(std::string("strata::kafka: cannot create a ") +
                                  (type == RD_KAFKA_PRODUCER ? "producer" : "consumer") + ": " + err.data());
        (void)c.release();  // rd_kafka_new owns it now
        rk_.reset(rk);
    }

    client(client&& o) noexcept : rk_(std::move(o.rk_)), close_consumer_(o.close_consumer_) {}
    client& operator=(client&& o) noexcept {
        if (this != &o) {
            destroy();
            rk_ = std::move(o.rk_);
            close_consumer_ = o.close_consumer_;
        }
        return *this;
    }
    ~client() { destroy(); }

    /// @brief Marks a consumer whose group membership must be closed first.
    void close_consumer_on_destroy() noexcept { close_consumer_ = true; }

    [[nodiscard]] rd_kafka_t* get() const noexcept { return rk_.get(); }
    explicit operator bool() const noexcept { return rk_ != nullptr; }

    /// @brief Lets go of the handle without destroying it: its memory and
    /// threads stay until the process ends. Only for a handle whose
    /// destruction librdkafka would abort the process on.
    void abandon() noexcept { (void)rk_.release(); }

private:
    void destroy() noexcept {
        if (!rk_) return;
        if (close_consumer_) (void)rd_kafka_consumer_close(rk_.get());
        rk_.reset();
    }

    std::unique_ptr<rd_kafka_t, detail::destroy_with<&rd_kafka_destroy>> rk_;
    bool close_consumer_ = false;
};

/// @brief Milliseconds as the `int` librdkafka's timeouts take.
[[nodiscard]] inline int timeout_ms(std::chrono::milliseconds t) noexcept {
    const auto c = t.count();
    return c < 0 ? 0 : c > 0x7fffffff ? 0x7fffffff : static_cast<int>(c);
}

/// @brief Where a partition starts and ends, as one request finds them.
struct partition_bounds {
    std::int64_t start;  ///< the log start offset: records below it were deleted
    std::int64_t end;    ///< the high watermark, or for read_committed the last stable offset
};

namespace detail {

/// Errors a cluster gives while a broker dies, a leader moves or a topic just
/// made is not known everywhere yet: asking again (after new metadata) helps.
[[nodiscard]] inline bool transient(rd_kafka_resp_err_t err) noexcept {
    return err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION || err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
           err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
           err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC || err == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
           err == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS || err == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           err == RD_KAFKA_RESP_ERR_NOT_CONTROLLER || err == RD_KAFKA_RESP_ERR__TRANSPORT ||
           err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
}

/// Asks the cluster for `topic`'s metadata, which updates librdkafka's
/// cache of its partitions' leaders. Errors are left to the caller's retry.
inline void refresh_metadata(rd_kafka_t* rk, const std::string& topic, int timeout) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    if (rkt == nullptr) return;
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, timeout) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
}

/// How a ListOffsets call failed: the error, the index of the partition it
/// is charged to, and whether that partition's own answer said so.
struct offsets_failure {
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::size_t index = 0;
    bool own = false;
};

/// The offsets `which` (RD_KAFKA_OFFSET_BEGINNING: the log start, or
/// RD_KAFKA_OFFSET_END: the high watermark, or for a read_committed handle
/// the last stable offset) of `partitions`, in one ListOffsets request to
/// each leader, written to `out` in the order asked. Not
/// rd_kafka_query_watermark_offsets(): librdkafka 2.0.2 waits for its
/// answer with no deadline, and a request to a broker that died was seen
/// waiting for a minute, with the task it restored waiting behind it.
/// rd_kafka_offsets_for_times() sends the same request and keeps its timeout.
/// @returns how it failed, if it did
inline offsets_failure list_offsets(rd_kafka_t* rk, const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                    std::int64_t which, int timeout, std::vector<std::int64_t>& out) {
    const unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (const auto& [topic, partition] : partitions)
        rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), partition)->offset = which;
    const rd_kafka_resp_err_t call = rd_kafka_offsets_for_times(rk, l.get(), timeout);
    out.resize(partitions.size());
    // librdkafka writes each answer into the element asked for; an element
    // left with the offset it was asked with got no answer. A call that
    // timed out as a whole may still carry answers and errors of some
    // partitions (a partition the topic lacks says so at once): the failure
    // is charged to the first partition with an error of its own, and only
    // then to the first without an answer.
    std::optional<std::size_t> unanswered;
    for (std::size_t i = 0; i < partitions.size(); ++i) {
        const rd_kafka_topic_partition_t& e = l->elems[i];
        if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR && e.err != RD_KAFKA_RESP_ERR__IN_PROGRESS) return {e.err, i, true};
        if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset < 0) {
            if (!unanswered) unanswered = i;
            continue;
        }
        out[i] = e.offset;
    }
    if (unanswered) return {call != RD_KAFKA_RESP_ERR_NO_ERROR ? call : RD_KAFKA_RESP_ERR__TIMED_OUT, *unanswered, false};
    return {call, 0, false};
}

/// list_bounds_of, or with `with_start` false only the ends (one request to
/// each leader, not two; the bounds' starts are then their ends).
inline std::vector<partition_bounds> list_bounds_of(rd_kafka_t* rk,
                                                    const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                                    std::chrono::milliseconds timeout, bool with_start) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const auto left = [&] {
        return timeout_ms(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    };
    // One attempt may not take the whole timeout: a request to a leader
    // that died waits until it times out, and only the metadata refreshed
    // after it names the new leader for the next attempt.
    const int attempt = std::max(1000, timeout_ms(timeout) / 4);
    std::vector<std::int64_t> starts, ends;
    offsets_failure named;  // the last failure a partition's own answer gave
    for (;;) {
        offsets_failure f;
        if (with_start) f = list_offsets(rk, partitions, RD_KAFKA_OFFSET_BEGINNING, std::min(attempt, left()), starts);
        if (f.err == RD_KAFKA_RESP_ERR_NO_ERROR)
            f = list_offsets(rk, partitions, RD_KAFKA_OFFSET_END, std::min(attempt, left()), ends);
        if (f.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::vector<partition_bounds> out;
            out.reserve(partitions.size());
            for (std::size_t i = 0; i < partitions.size(); ++i) out.push_back({with_start ? starts[i] : ends[i], ends[i]});
            return out;
        }
        if (f.own) named = f;
        const bool last = !transient(f.err) || std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline;
        // The last attempt, cut short by the deadline, may time out before
        // any answer: an earlier attempt's partition that said what was
        // wrong is the one to name.
        if (last && !f.own && named.own) f = named;
        const auto& [topic, partition] = partitions.at(f.index);
        if (last) throw error("look up the offsets of " + topic + "[" + std::to_string(partition) + "]", f.err);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        // librdkafka 2.0 asks the leader it has cached again and again: after
        // a broker died, only a metadata request tells it the new one.
        if (f.err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && f.err != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
            refresh_metadata(rk, topic, std::min(1000, left()));
    }
}
}  // namespace detail

/// @brief The log start offset and the high watermark of a partition (with
/// a read_committed consumer handle, its last stable offset). Errors a new
/// or moving partition gives for a moment (no leader yet, a leader that
/// died, or, on a cluster, a broker whose metadata does not list the new
/// topic's partitions yet) are retried until `timeout`, which bounds the
/// whole call.
/// @throws kafka::error any other error, or still failing at the deadline
inline partition_bounds list_bounds(rd_kafka_t* rk, const std::string& topic, std::int32_t partition,
                                    std::chrono::milliseconds timeout) {
    return detail::list_bounds_of(rk, {{topic, partition}}, timeout, true).front();
}

/// @brief The bounds of many partitions at once (see list_bounds): two
/// requests to each leader, not two per partition. An instance that starts
/// a task of ten logged stores asks once for the ten.
/// @returns the bounds in the order of `partitions`
/// @throws kafka::error as list_bounds, for the first partition that fails
inline std::vector<partition_bounds> list_bounds_of(rd_kafka_t* rk,
                                                    const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                                    std::chrono::milliseconds timeout) {
    return detail::list_bounds_of(rk, partitions, timeout, true);
}

/// @brief The ends of many partitions at once (see list_end_offset): one
/// request to each leader.
/// @returns the ends in the order of `partitions`
/// @throws kafka::error as list_bounds, for the first partition that fails
inline std::vector<std::int64_t> list_end_offsets(rd_kafka_t* rk,
                                                  const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                                  std::chrono::milliseconds timeout) {
    std::vector<std::int64_t> ends;
    ends.reserve(partitions.size());
    for (const partition_bounds& b : detail::list_bounds_of(rk, partitions, timeout, false)) ends.push_back(b.end);
    return ends;
}

/// @brief The end of a partition (see list_bounds).
inline std::int64_t list_end_offset(rd_kafka_t* rk, const std::string& topic, std::int32_t partition,
                                    std::chrono::milliseconds timeout) {
    return detail::list_bounds_of(rk, {{topic, partition}}, timeout, false).front().end;
}

/// @brief Checks that a broker at `bootstrap` answers within `timeout` and
/// that `topic` exists there: a wrong address or a missing topic fails here,
/// fast and with a clear message, instead of as a delivery timeout minutes later.
/// A topic the answering broker does not know is asked for again for up to
/// 5 s (at most `timeout`): on a cluster, a topic another client created a
/// moment ago reaches the brokers one after another (three instances started
/// at once on three brokers: one was told its coordination topic did not exist).
/// @returns the topic's partition count
inline std::int32_t probe_topic(rd_kafka_t* rk, std::string_view bootstrap, std::string_view topic,
                                std::chrono::milliseconds timeout) {
    using clock = std::chrono::steady_clock;
    const auto started = clock::now();
    const auto unknown_until = started + std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(5));
    const unique_topic rkt(rd_kafka_topic_new(rk, std::string(topic).c_str(), nullptr));
    const auto not_available = [&](rd_kafka_resp_err_t topic_err) {
        return error("topic '" + std::string(topic) + "' is not available at '" + std::string(bootstrap) +
                         "' (create it first, e.g. with strata::kafka::ensure_topic)",
                     topic_err);
    };
    // What the cluster last said of the topic: once it has answered, a later
    // request that times out (a busy broker) does not make the cluster absent.
    rd_kafka_resp_err_t said = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(started + timeout - clock::now());
        const rd_kafka_metadata_t* md = nullptr;
        const rd_kafka_resp_err_t err =
            rd_kafka_metadata(rk, 0, rkt.get(), &md, timeout_ms(std::max(left, std::chrono::milliseconds(1))));
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (said != RD_KAFKA_RESP_ERR_NO_ERROR) throw not_available(said);
            throw error("no answer from the Kafka cluster at '" + std::string(bootstrap) + "' within " +
                            std::to_string(timeout.count()) +
                            " ms (wrong bootstrap.servers, or the broker is down?)",
                        err);
        }
        const std::unique_ptr<const rd_kafka_metadata_t, detail::destroy_with<&rd_kafka_metadata_destroy>> owned(md);
        const rd_kafka_resp_err_t topic_err =
            md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        if (topic_err == RD_KAFKA_RESP_ERR_NO_ERROR) return md->topics[0].partition_cnt;
        said = topic_err;
        const bool may_appear = topic_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                                topic_err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
        if (!may_appear || clock::now() + std::chrono::milliseconds(100) >= unknown_until) throw not_available(topic_err);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

/// @brief Connects to the cluster at `bootstrap` as a client with `s` would
/// (its security settings) and asks for its metadata: a wrong SASL password
/// or a broker certificate no trusted CA signed fails here at once, with
/// librdkafka's words, instead of as a timeout (librdkafka retries such a
/// connection for ever, and says why only in its log).
/// @throws kafka::error RD_KAFKA_RESP_ERR__AUTHENTICATION or __SSL, at the
///         first such failure; __TIMED_OUT when no broker answered within `timeout`
inline void check_access(const std::string& bootstrap, const settings& s, std::chrono::milliseconds timeout) {
    struct seen {
        std::mutex m;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        std::string reason;
    } last;
    conf c(s);
    c.set("bootstrap.servers", bootstrap);
    rd_kafka_conf_set_opaque(c.get(), &last);
    rd_kafka_conf_set_error_cb(c.get(), [](rd_kafka_t*, int err, const char* reason, void* opaque) {
        auto* l = static_cast<seen*>(opaque);
        const std::lock_guard lock(l->m);
        const auto e = static_cast<rd_kafka_resp_err_t>(err);
        // The lasting causes win over the transport failures that come with them.
        if (l->err == RD_KAFKA_RESP_ERR__AUTHENTICATION || l->err == RD_KAFKA_RESP_ERR__SSL) return;
        l->err = e;
        l->reason = reason != nullptr ? reason : "";
    });
    const client k(RD_KAFKA_PRODUCER, std::move(c));
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + timeout;
    for (;;) {
        const rd_kafka_metadata_t* md = nullptr;
        if (rd_kafka_metadata(k.get(), 0, nullptr, &md, 200) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_metadata_destroy(md);
            return;
        }
        rd_kafka_poll(k.get(), 0);  // serves the error callback
        const std::lock_guard lock(last.m);
        if (last.err == RD_KAFKA_RESP_ERR__AUTHENTICATION || last.err == RD_KAFKA_RESP_ERR__SSL)
            throw error("connect to the Kafka cluster at '" + bootstrap + "'", last.err,
                        last.err == RD_KAFKA_RESP_ERR__AUTHENTICATION
                            ? last.reason + " (check sasl.mechanisms, sasl.username and sasl.password)"
                            : last.reason + " (check ssl.ca.location: the broker's certificate must be signed by a "
                                            "CA it names, for the address asked for)");
        if (clock::now() >= until)
            throw error("no answer from the Kafka cluster at '" + bootstrap + "' within " +
                            std::to_string(timeout.count()) + " ms" +
                            (last.reason.empty() ? "" : " (last error: " + last.reason + ")"),
                        RD_KAFKA_RESP_ERR__TIMED_OUT);
    }
}

}  // namespace strata::kafka
