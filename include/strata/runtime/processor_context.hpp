#pragma once
/// @file
/// @brief `processor_context`: what a processor reaches while it handles a
/// record: the task's stores, output topics, and punctuations (periodic
/// work on wall-clock time or on stream time, the largest record timestamp
/// the task has seen).

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/runtime/detail/output.hpp>
#include <strata/runtime/repartition_topic.hpp>
#include <strata/serde/encode.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime {

/// @brief The clock a punctuation follows.
enum class punctuation_type {
    wall_clock_time,  ///< every interval of real time, whether records arrive or not
    stream_time,      ///< every interval of record time: driven by the timestamps of the task's records
};

/// @brief Names a scheduled punctuation, to cancel it.
using punctuation_id = std::uint64_t;

/// @brief "Let the partitioner choose": the partition of the record's key
/// (`emit`'s default).
inline constexpr std::int32_t partition_by_key = RD_KAFKA_PARTITION_UA;

namespace detail {
template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};
}  // namespace detail

/// @brief The processor's handle on its task. `Stores` is what the store
/// factory returned: one store stack, or a std::tuple of them.
template <class Stores>
class processor_context {
public:
    using punctuator = std::function<void(processor_context&, std::int64_t timestamp_ms)>;

    /// @param application_id names the repartition topics (`repartition`)
    processor_context(std::int32_t partition, std::string task_id, detail::output& out,
                      std::string application_id = {})
        : partition_(partition), task_id_(std::move(task_id)), out_(&out),
          application_id_(std::move(application_id)) {}

    /// @brief What the factory returned for this task.
    [[nodiscard]] Stores& stores() noexcept { return *stores_; }
    /// @brief Store I of a factory that returned a std::tuple (I = 0 for a single store).
    template <std::size_t I>
    [[nodiscard]] auto& store() noexcept {
        if constexpr (detail::is_tuple<Stores>::value) {
            return std::get<I>(*stores_);
        } else {
            static_assert(I == 0, "strata::runtime: the factory returned a single store: use store<0>() or stores()");
            return *stores_;
        }
    }

    /// @brief The input partition number of this task.
    [[nodiscard]] std::int32_t partition() const noexcept { return partition_; }
    [[nodiscard]] const std::string& task_id() const noexcept { return task_id_; }
    /// @brief The largest record timestamp the task has seen (ms), -1 before any.
    [[nodiscard]] std::int64_t stream_time() const noexcept { return stream_time_; }

    /// @brief Sends (key, value) to `topic`, each encoded as a whole record
    /// key or value (`strata::encode`), to the partition of the key unless
    /// one is given. Under exactly-once it commits with the task's state.
    template <class K, class V>
    void emit(std::string_view topic, const K& key, const V& value, std::int32_t partition = partition_by_key) {
        key_buf_.clear();
        value_buf_.clear();
        encode(key, key_buf_);
        encode(value, value_buf_);
        out_->send(topic, key_buf_, bytes_view(value_buf_), partition, partition_);
    }
    /// @brief Sends a tombstone (a null value) for `key` to `topic`.
    template <class K>
    void emit_tombstone(std::string_view topic, const K& key, std::int32_t partition = partition_by_key) {
        key_buf_.clear();
        encode(key, key_buf_);
        out_->send(topic, key_buf_, std::nullopt, partition, partition_);
    }
    /// @brief Sends bytes as they are.
    void emit_bytes(std::string_view topic, bytes_view key, std::optional<bytes_view> value,
                    std::int32_t partition = partition_by_key) {
        out_->send(topic, key, value, partition, partition_);
    }

    /// @brief Sends (key, value) re-keyed to the repartition topic `name`
    /// (`<application_id>-<name>-repartition`, made by the topology; see
    /// topology.hpp), to the partition of the new key, with the time of the
    /// record being processed (of the punctuation, in a punctuator): the
    /// sub-topology that reads the topic gets the key's records in one task,
    /// in the order they were sent. Under exactly-once the records commit
    /// with the task's state and input offsets, and the reading
    /// sub-topology sees only committed ones.
    template <class K, class V>
    void repartition(std::string_view name, const K& key, const V& value) {
        key_buf_.clear();
        value_buf_.clear();
        encode(key, key_buf_);
        encode(value, value_buf_);
        out_->send(repartition_topic(name), key_buf_, bytes_view(value_buf_), partition_by_key, partition_,
                   timestamp_ > 0 ? timestamp_ : no_timestamp);  // librdkafka reads 0 as "now"
    }

    /// @brief The time of the record being processed (of the punctuation,
    /// in a punctuator), ms since the epoch; -1 when it has none.
    [[nodiscard]] std::int64_t timestamp() const noexcept { return timestamp_; }

    /// @brief Calls `fn(context, timestamp)` every `interval` of the given
    /// clock, on the processing thread, between records. A wall-clock
    /// punctuation gets the wall-clock time (ms since the epoch); a
    /// stream-time one the stream time that made it due, and fires once
    /// however far stream time jumped.
    punctuation_id schedule(std::chrono::milliseconds interval, punctuation_type type, punctuator fn) {
        if (interval.count() <= 0) throw usage_error("strata::runtime: a punctuation interval must be positive");
        scheduled s{next_id_++, type, interval, std::move(fn), {}, -1};
        if (type == punctuation_type::wall_clock_time) s.due = std::chrono::steady_clock::now() + interval;
        else if (stream_time_ >= 0) s.stream_due = stream_time_ + interval.count();
        punctuations_.push_back(std::move(s));
        return punctuations_.back().id;
    }
    /// @brief Stops a punctuation; cancelling from inside it is allowed.
    void cancel(punctuation_id id) {
        for (auto& p : punctuations_)
            if (p.id == id) p.cancelled = true;
    }

    // ---- driven by the runtime

    void attach(Stores& s) noexcept { stores_ = &s; }

    /// The time of the record about to be processed.
    void set_timestamp(std::int64_t timestamp) noexcept { timestamp_ = timestamp; }

    /// Advances stream time to `timestamp` and runs the stream-time
    /// punctuations that became due.
    void advance_stream_time(std::int64_t timestamp) {
        if (timestamp <= stream_time_) return;
        stream_time_ = timestamp;
        run_due([&](scheduled& p) {
            if (p.type != punctuation_type::stream_time) return false;
            if (p.stream_due < 0) p.stream_due = stream_time_ + p.interval.count();
            if (stream_time_ < p.stream_due) return false;
            const auto k = (stream_time_ - p.stream_due) / p.interval.count() + 1;
            p.stream_due += k * p.interval.count();
            return true;
        }, [&] { return stream_time_; });
    }

    /// Runs the wall-clock punctuations that are due at `now`.
    /// @returns how many punctuators ran (their writes are work to commit)
    std::size_t punctuate(std::chrono::steady_clock::time_point now) {
        return run_due([&](scheduled& p) {
            if (p.type != punctuation_type::wall_clock_time || now < p.due) return false;
            p.due += p.interval * ((now - p.due) / p.interval + 1);
            return true;
        }, [] {
            return std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                .count();
        });
    }

private:
    struct scheduled {
        punctuation_id id;
        punctuation_type type;
        std::chrono::milliseconds interval;
        punctuator fn;
        std::chrono::steady_clock::time_point due;
        std::int64_t stream_due;
        bool cancelled = false;
    };

    template <class IsDue, class Timestamp>
    std::size_t run_due(IsDue&& is_due, Timestamp&& timestamp) {
        std::size_t ran = 0;
        // By index: a punctuation may schedule another, which may reallocate.
        for (std::size_t i = 0; i < punctuations_.size(); ++i) {
            if (punctuations_[i].cancelled || !is_due(punctuations_[i])) continue;
            punctuator fn = punctuations_[i].fn;  // a copy: the vector may move under it
            const std::int64_t at = timestamp();
            timestamp_ = at;
            fn(*this, at);
            ++ran;
        }
        std::erase_if(punctuations_, [](const scheduled& p) { return p.cancelled; });
        return ran;
    }

    const std::string& repartition_topic(std::string_view name) {
        if (application_id_.empty())
            throw usage_error("strata::runtime: repartition(\"" + std::string(name) +
                              "\") from a context that belongs to no application");
        if (name != last_repartition_) {
            last_repartition_ = std::string(name);
            last_repartition_topic_ = repartition_topic_name(application_id_, name);
        }
        return last_repartition_topic_;
    }

    Stores* stores_ = nullptr;
    std::int32_t partition_;
    std::string task_id_;
    detail::output* out_;
    std::int64_t stream_time_ = -1;
    std::int64_t timestamp_ = -1;
    std::string application_id_;
    std::string last_repartition_;        // the name repartition() was given last,
    std::string last_repartition_topic_;  // and its topic: one name is usual, and spares a string a record
    std::vector<scheduled> punctuations_;
    punctuation_id next_id_ = 1;
    byte_buffer key_buf_;
    byte_buffer value_buf_;
};

}  // namespace strata::runtime
