#pragma once
/// @file
/// @brief `strata::kafka::changelog`: a store's changelog in one
/// partition of a compacted Kafka topic, written by an idempotent (or
/// transactional) producer and replayed by a consumer that needs no group.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/kafka/changelog_reader.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/producer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief A changelog in partition `partition` of a Kafka topic; satisfies
/// `strata::changelog`.
///
/// - `append` copies the record into librdkafka's queue (a tombstone is a
///   record with a null value) for the explicit partition: the store instance
///   that owns input partition p writes changelog partition p.
/// - `flush` blocks until the broker acknowledged every record appended, and
///   returns one past the highest acknowledged offset. If any record failed,
///   it throws, and so does every later call: records after a lost one could
///   be acknowledged, but a store rebuilt from them would silently miss the
///   lost update, so nothing from this changelog object is reported durable
///   again. Recover by rebuilding the store from a new changelog object.
/// - `end_offset` asks the broker (the last stable offset when read_committed).
/// - `replay(from)` reads up to the end offset taken when it begins, with the
///   changelog's reader (`changelog_options::reader`, shared, or one the
///   changelog connected at construction), so a restore does not pay for a
///   new connection (a replay made while another of the same partition is
///   open connects a consumer of its own).
///
/// Movable, not copyable; one thread at a time.
class changelog {
public:
    class replay_range;

    /// @brief Connects with its own idempotent producer.
    /// @throws changelog_error no broker answers within `connect_timeout`, the
    ///         topic or partition does not exist, a setting is invalid
    /// A wrong password or an untrusted broker certificate fails here, with
    /// librdkafka's reason (check_access), not as a timeout.
    explicit changelog(changelog_options o) : changelog(o, checked_producer(o)) {}

    /// @brief Writes through a shared producer: with a transactional one, the
    /// records belong to its open transaction (see transaction.hpp) and the
    /// options' producer settings are not used.
    changelog(changelog_options o, std::shared_ptr<producer> p)
        : opts_(std::move(o)), producer_(std::move(p)), tracker_(&producer_->new_tracker()),
          reader_(opts_.reader ? opts_.reader : std::make_shared<changelog_reader>(opts_, false)),
          follower_(opts_.follower ? opts_.follower : reader_) {
        if (opts_.partition < 0) throw usage_error("strata::kafka::changelog: negative partition");
        if (!reader_->fits(opts_) || !follower_->fits(opts_))
            throw usage_error("strata::kafka::changelog: the shared changelog_reader was made for other bootstrap "
                              "servers or another read_committed than " + where() + "'s options");
        const std::int32_t count =
            opts_.checked_partitions > 0
                ? opts_.checked_partitions
                : probe_topic(producer_->get(), opts_.bootstrap_servers, opts_.topic, opts_.connect_timeout);
        if (opts_.partition >= count)
            throw changelog_error("strata::kafka: topic " + opts_.topic + " has " + std::to_string(count) +
                                  " partitions, no partition " + std::to_string(opts_.partition));
        topic_.reset(rd_kafka_topic_new(producer_->get(), opts_.topic.c_str(), nullptr));
        // The end known durable is learnt when first needed (flush), or from
        // the first replay's end: a store that restores at once, as every
        // store of the runtime does, asks the broker for its offsets once,
        // not twice (an instance of 1,000 tasks of ten stores starts 10,000).
    }

    changelog(changelog&&) noexcept = default;
    changelog& operator=(changelog&&) noexcept = default;

private:
    static std::shared_ptr<producer> checked_producer(const changelog_options& o) {
        settings s = o.producer_settings;
        for (const auto& [name, value] : o.client_settings) s.try_emplace(name, value);
        check_access(o.bootstrap_servers, s, o.connect_timeout);
        return std::make_shared<producer>(producer_options{o.bootstrap_servers, std::nullopt, std::move(s)});
    }

public:

    /// @brief Queues a copy of `r` (its offset is ignored). Not durable until
    /// flush(). Its timestamp becomes the Kafka record's; without one
    /// (no_timestamp) the record gets the time it is produced.
    /// @throws changelog_error an earlier record failed, or librdkafka refused this one
    /// @throws usage_error a timestamp of 0 (librdkafka reads it as "now",
    ///         so the record would come back with another time) or negative
    void append(const record_view& r) {
        if (r.timestamp <= 0 && r.timestamp != no_timestamp) [[unlikely]]
            refuse_timestamp(r.timestamp);
        throw_if_failed();
        producer_->produce(topic_.get(), opts_.partition, r.key, r.value, *tracker_, r.timestamp);
        // Serve delivery reports as they come, as librdkafka's own producer
        // loop does, not all at flush(): the copies of acknowledged records
        // are freed while still in cache, and the next records' copies reuse
        // that memory instead of cold memory from the allocator's free lists.
        if ((++appended_ & (poll_every - 1)) == 0) producer_->poll();
    }

    /// @brief Waits until every appended record is acknowledged.
    /// @returns one past the last acknowledged offset: every record below it
    ///          that this object appended is in the log
    /// @throws changelog_error a record was not acknowledged (the broker
    ///         refused it, or it timed out after `message.timeout.ms`)
    offset_t flush() {
        producer_->wait(*tracker_);
        throw_if_failed();
        if (tracker_->last_offset >= 0)
            durable_end_ = std::max(durable_end_.value_or(0), static_cast<offset_t>(tracker_->last_offset) + 1);
        else if (!durable_end_)
            durable_end_ = end_offset();
        return *durable_end_;
    }

    /// @brief The end of the partition, from the broker: the high watermark,
    /// or with read_committed the last stable offset (transactions still open
    /// end it). Records appended but not yet acknowledged are not counted.
    /// @throws changelog_error the broker did not answer within request_timeout
    [[nodiscard]] offset_t end_offset() const {
        const std::int64_t hi =
            list_end_offset(reader_->lookups(), opts_.topic, opts_.partition, opts_.request_timeout);
        return hi < 0 ? 0 : static_cast<offset_t>(hi);
    }

    /// @brief The records from offset `from` up to the end offset taken now.
    [[nodiscard]] replay_range replay(offset_t from = 0) const;

    /// @brief The records from offset `from` on, with no end: those written
    /// later come as they are fetched. Reading never waits (see
    /// replay_range::poll); a standby follows its changelog so, with no
    /// request of its own to the broker once it began (one lookup of the
    /// partition's bounds when it begins).
    [[nodiscard]] replay_range follow(offset_t from = 0) const;

    /// @brief replay() and follow() with the partition's bounds looked up
    /// already, with others, by the caller (see list_bounds_of): a task of
    /// ten stores asks for the ten at once. `known` must be taken after
    /// anything the replay has to see was written: it ends the replay.
    [[nodiscard]] replay_range replay(offset_t from, const partition_bounds& known) const;
    [[nodiscard]] replay_range follow(offset_t from, const partition_bounds& known) const;

    /// @brief The consumers its replays and follow() read through (shared
    /// with other changelogs when the options name them).
    [[nodiscard]] changelog_reader& reader() const noexcept { return *reader_; }
    [[nodiscard]] changelog_reader& follower() const noexcept { return *follower_; }

    [[nodiscard]] const std::string& topic() const noexcept { return opts_.topic; }
    [[nodiscard]] std::int32_t partition() const noexcept { return opts_.partition; }
    [[nodiscard]] const changelog_options& options() const noexcept { return opts_; }
    /// @brief Records appended by this object.
    [[nodiscard]] std::uint64_t appended() const noexcept { return appended_; }
    /// @brief Records of this object the broker acknowledged so far.
    [[nodiscard]] std::uint64_t acknowledged() const noexcept { return tracker_->acked; }
    [[nodiscard]] producer& writer() noexcept { return *producer_; }

    /// @brief "topic[partition]", as messages name it.
    [[nodiscard]] std::string where() const { return opts_.topic + "[" + std::to_string(opts_.partition) + "]"; }

private:

    [[noreturn, gnu::cold]] void refuse_timestamp(std::int64_t t) const {
        throw usage_error("strata::kafka::changelog " + opts_.topic + ": a record at time " + std::to_string(t) +
                          (t == 0 ? " cannot be produced: librdkafka takes 0 for \"the time of sending\""
                                  : ": a time is at least 1 ms here (or no_timestamp, -1, for none)"));
    }
    void throw_if_failed() const {
        if (!tracker_->has_failed()) return;
        throw error(std::to_string(tracker_->failed) + " record(s) to " + where() +
                        " were not acknowledged; nothing appended to this changelog is reported "
                        "durable any more (rebuild the store from a new changelog)",
                    tracker_->first_error, tracker_->first_error_text);
    }

    changelog_options opts_;
    std::shared_ptr<producer> producer_;
    delivery_tracker* tracker_;
    /// The consumer of offset lookups and replays, with the configured
    /// isolation level: the options' shared one, or the changelog's own.
    std::shared_ptr<changelog_reader> reader_;
    std::shared_ptr<changelog_reader> follower_;  // follow()'s: reader_ unless the options name another
    unique_topic topic_;
    /// One past the last offset known in the log: what flush() returns when
    /// this object has had nothing acknowledged. Unknown until a flush or a
    /// replay asks the broker (mutable: a replay, a const read, learns it too).
    mutable std::optional<offset_t> durable_end_;
    std::uint64_t appended_ = 0;
    static constexpr std::uint64_t poll_every = 256;  // a power of two
};

/// @brief An input range of `record_view`s read from one partition, ending
/// at the end offset taken when the range was made. Offsets may jump
/// (compaction, transaction markers, aborted records); the range ends when
/// the consumer reaches the end, even where the last offsets are markers.
/// Each view is valid until the iterator moves on.
///
/// It can also be read a batch at a time (`next_batch()`): every record
/// librdkafka has fetched already, as one span. A restore uses that to look
/// ahead (see restore_from) and to pay strata's per-record handling once per
/// batch. Read a range one way or the other, not both.
///
/// A range made by `changelog::follow` has no end: its iterator reaches the
/// sentinel when nothing more has been fetched yet, `poll()` takes in what
/// came since (the iterator is then valid again), and `end_offset()` and
/// `start_offset()` move with what the fetches report.
class changelog::replay_range {
public:
    class iterator {
    public:
        using value_type = record_view;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;
        explicit iterator(replay_range* r) : r_(r) {}

        [[nodiscard]] const record_view& operator*() const noexcept { return r_->views_[r_->next_]; }
        iterator& operator++() {
            r_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.at_end(); }

    private:
        [[nodiscard]] bool at_end() const noexcept { return r_ == nullptr || r_->next_ == r_->views_.size(); }

        replay_range* r_ = nullptr;
    };

    /// `learnt_end`: where the end found is kept as well (the changelog's
    /// durable end, see changelog::flush), or null.
    /// `known`: the partition's bounds looked up already, or null to ask.
    replay_range(const changelog_options& o, changelog_reader& r, offset_t from, bool follow = false,
                 std::optional<offset_t>* learnt_end = nullptr, const partition_bounds* known = nullptr)
        : consumer_(r, o), partition_(o.partition), idle_timeout_(o.request_timeout),
          where_(o.topic + "[" + std::to_string(o.partition) + "]"), follow_(follow),
          read_committed_(o.read_committed) {
        // A follower too asks once where the partition begins and ends (its
        // caller's checks and lag hold from the start); later its fetches
        // tell it (learn_bounds), and a position past either end sends the
        // fetcher back to the log's start, which shows in the offsets and in
        // start_offset().
        const partition_bounds b =
            known != nullptr ? *known : list_bounds(r.lookups(), o.topic, o.partition, o.request_timeout);
        end_ = b.end < 0 ? 0 : static_cast<offset_t>(b.end);
        start_ = b.start < 0 ? 0 : std::min(static_cast<offset_t>(b.start), end_);
        if (learnt_end != nullptr) *learnt_end = std::max(learnt_end->value_or(0), end_);
        if (from >= end_ && !follow_) {
            done_ = true;
            return;
        }
        expected_ = from;
        topic_.reset(rd_kafka_topic_new(consumer_.get(), o.topic.c_str(), nullptr));
        if (rd_kafka_consume_start(topic_.get(), partition_, static_cast<std::int64_t>(from)) != 0)
            throw error("start reading " + where_, rd_kafka_last_error());
        started_ = true;
        const std::size_t n = o.replay_batch == 0 ? 1 : o.replay_batch;
        batch_.resize(n);
        taken_.reserve(n);
        views_.reserve(n);
    }

    replay_range(replay_range&&) = delete;  // iterators point into it; see replay()

    ~replay_range() {
        release_batch();
        if (started_) (void)rd_kafka_consume_stop(topic_.get(), partition_);
    }

    [[nodiscard]] iterator begin() {
        if (!primed_) {
            primed_ = true;
            (void)fill();
        }
        return iterator(this);
    }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

    /// @brief The next records, all those fetched already (at least one,
    /// waiting for it if none is); empty at the end. The views are valid
    /// until the next call.
    /// @throws kafka::error reading failed, or nothing arrived for `request_timeout`
    [[nodiscard]] std::span<const record_view> next_batch() {
        primed_ = true;
        if (!fill()) return {};
        next_ = views_.size();  // handed over whole
        return views_;
    }

    /// @brief The offset it reads next (following: one past the last record
    /// it took from the consumer, or where it began).
    [[nodiscard]] offset_t next_offset() const noexcept { return expected_; }
    /// @brief The end offset taken when the replay began (following: the
    /// highest end heard of since).
    [[nodiscard]] offset_t end_offset() const noexcept { return end_; }
    /// @brief The partition's log start offset then (following: the highest
    /// heard of since): records below it were deleted (by retention or
    /// DeleteRecords; compaction does not move it).
    [[nodiscard]] offset_t start_offset() const noexcept { return start_; }
    /// @brief Following: the end the partition was found to have below the
    /// offsets read (or the first offset asked for), if it was (the log lost
    /// records, and the fetcher went back to its start).
    [[nodiscard]] std::optional<offset_t> went_back() const noexcept { return went_back_; }

    /// @brief Following: takes in the records fetched since the iterator
    /// reached the sentinel, without waiting. @returns whether there are
    /// records to read (the iterator is valid again). A range with an end
    /// is read to it as before.
    /// @throws kafka::error reading failed
    bool poll() {
        primed_ = true;
        if (next_ < views_.size()) return true;
        return fill();
    }

private:
    /// The views point into the messages: both go together.
    void release_batch() noexcept {
        taken_.clear();
        views_.clear();
        next_ = 0;
    }

    void advance() {
        if (++next_ < views_.size()) return;
        (void)fill();
    }

    /// Releases the last batch and reads the next: whatever is fetched
    /// already, or, only when nothing is, the next message as soon as it
    /// comes (a batch call with a timeout would wait to fill the whole
    /// batch). @returns false at the end (then views_ is empty).
    bool fill() {
        release_batch();
        if (done_) return false;
        if (deferred_error_ != RD_KAFKA_RESP_ERR_NO_ERROR)
            throw error("read " + where_, deferred_error_, deferred_error_text_);
        auto idle_since = std::chrono::steady_clock::now();
        while (taken_.empty()) {
            const ssize_t n = rd_kafka_consume_batch(topic_.get(), partition_, 0, batch_.data(), batch_.size());
            if (n < 0) throw error("read " + where_, rd_kafka_last_error());
            if (n > 0) {
                // Owned at once (the capacity is reserved: nothing throws before).
                for (ssize_t i = 0; i < n; ++i) taken_.emplace_back(batch_[static_cast<std::size_t>(i)]);
                break;
            }
            if (follow_) {
                learn_bounds();
                return false;  // nothing fetched yet: a follower does not wait
            }
            if (unique_message m{rd_kafka_consume(topic_.get(), partition_, 200)}) {
                taken_.push_back(std::move(m));
                break;
            }
            if (const auto err = rd_kafka_last_error(); err != RD_KAFKA_RESP_ERR__TIMED_OUT)
                throw error("read " + where_, err);
            if (std::chrono::steady_clock::now() - idle_since > idle_timeout_)
                throw error("replay " + where_ + ": nothing received for " +
                                std::to_string(idle_timeout_.count()) + " ms before offset " +
                                std::to_string(end_),
                            RD_KAFKA_RESP_ERR__TIMED_OUT);
        }
        for (const unique_message& owned : taken_) {
            const rd_kafka_message_t* m = owned.get();
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                // Caught up with everything readable; with read_committed the
                // readable end is the last stable offset.
                if (follow_) {
                    const auto at = static_cast<offset_t>(std::max<std::int64_t>(m->offset, 0));
                    // The end below where it read to: the fetcher was sent
                    // back to the start of a log that lost records.
                    if (at < expected_ && !went_back_) went_back_ = at;
                    end_ = std::max(end_, at);
                    eof_seen_ = true;
                    continue;
                }
                done_ = true;
                break;
            }
            if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                // A follower outlives a broker's death or a leader's move;
                // librdkafka fetches again by itself.
                if (follow_ && detail::transient(m->err)) continue;
                if (!views_.empty()) {
                    // The records before it first; the error with the next call.
                    deferred_error_ = m->err;
                    deferred_error_text_ = rd_kafka_message_errstr(m);
                    break;
                }
                throw error("read " + where_, m->err, rd_kafka_message_errstr(m));
            }
            if (m->offset < 0) {
                if (follow_) continue;
                done_ = true;
                break;
            }
            if (follow_) {
                end_ = std::max(end_, static_cast<offset_t>(m->offset) + 1);
                expected_ = std::max(expected_, static_cast<offset_t>(m->offset) + 1);
            } else if (static_cast<offset_t>(m->offset) >= end_) {
                done_ = true;
                break;
            }
            record_view& v = views_.emplace_back();
            v.key = bytes_view(static_cast<const std::byte*>(m->key), m->key_len);
            if (m->payload != nullptr) v.value = bytes_view(static_cast<const std::byte*>(m->payload), m->len);
            v.offset = static_cast<offset_t>(m->offset);
            v.timestamp = rd_kafka_message_timestamp(m, nullptr);  // -1 (no_timestamp) when it has none
            if (!follow_ && v.offset + 1 >= end_) {  // the last record: no wait for the partition's end
                done_ = true;
                break;
            }
        }
        // The bounds of the fetch that brought these records, or of a later
        // one: a start past the records' first offset and the position tells
        // the caller that records it had not fetched were deleted.
        if (follow_) learn_bounds();
        return !views_.empty();
    }

    /// Following: the partition's bounds as librdkafka's last fetch gave
    /// them (no request). With read_committed the high watermark may count
    /// records of a transaction still open: it stands for the end only
    /// until the first end-of-partition event, which comes at the last
    /// stable offset (a follower far behind learns its lag from it).
    void learn_bounds() {
        std::int64_t lo = -1, hi = -1;
        if (rd_kafka_get_watermark_offsets(consumer_.get(), rd_kafka_topic_name(topic_.get()), partition_, &lo, &hi) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
            return;
        if (lo > 0) start_ = std::max(start_, static_cast<offset_t>(lo));
        if (hi >= 0 && !(read_committed_ && eof_seen_)) end_ = std::max(end_, static_cast<offset_t>(hi));
    }

    /// The changelog's reader when no other replay of the partition holds
    /// it (it is connected already), else a new consumer of the replay's own.
    class consumer_lease {
    public:
        consumer_lease(changelog_reader& r, const changelog_options& o) : topic_(o.topic), partition_(o.partition) {
            if (r.open(topic_, partition_)) shared_ = &r;
            else own_.emplace(detail::make_consumer(o));
        }
        consumer_lease(const consumer_lease&) = delete;
        consumer_lease& operator=(const consumer_lease&) = delete;
        ~consumer_lease() {
            if (shared_ != nullptr) shared_->close(topic_, partition_);
        }
        [[nodiscard]] rd_kafka_t* get() const noexcept { return shared_ ? shared_->get() : own_->get(); }

    private:
        std::string topic_;
        std::int32_t partition_;
        changelog_reader* shared_ = nullptr;  // the changelog's, which outlives the replay
        std::optional<client> own_;
    };

    consumer_lease consumer_;  // before topic_: the topic handle goes first
    unique_topic topic_;
    std::int32_t partition_;
    std::chrono::milliseconds idle_timeout_;
    std::string where_;
    bool follow_;
    bool read_committed_ = true;
    bool eof_seen_ = false;   // following: an end-of-partition event came
    offset_t expected_ = 0;   // following: the first offset asked for, then one past the last record
    std::optional<offset_t> went_back_;  // following: an end below expected_
    offset_t end_ = 0;
    offset_t start_ = 0;
    bool started_ = false;
    bool primed_ = false;
    bool done_ = false;
    rd_kafka_resp_err_t deferred_error_ = RD_KAFKA_RESP_ERR_NO_ERROR;  // met after records still to hand over
    std::string deferred_error_text_;
    std::vector<rd_kafka_message_t*> batch_;  // filled by rd_kafka_consume_batch, then moved into taken_
    std::vector<unique_message> taken_;       // the last batch
    std::vector<record_view> views_;          // its records, pointing into taken_
    std::size_t next_ = 0;                    // the iterator's record in views_
};

inline changelog::replay_range changelog::replay(offset_t from) const {
    if (!reader_) throw usage_error("strata::kafka::changelog: replay of a moved-from changelog");
    return replay_range(opts_, *reader_, from, false, &durable_end_);  // guaranteed copy elision: never moved
}

inline changelog::replay_range changelog::follow(offset_t from) const {
    if (!follower_) throw usage_error("strata::kafka::changelog: follow of a moved-from changelog");
    return replay_range(opts_, *follower_, from, true, &durable_end_);
}

inline changelog::replay_range changelog::replay(offset_t from, const partition_bounds& known) const {
    if (!reader_) throw usage_error("strata::kafka::changelog: replay of a moved-from changelog");
    return replay_range(opts_, *reader_, from, false, &durable_end_, &known);
}

inline changelog::replay_range changelog::follow(offset_t from, const partition_bounds& known) const {
    if (!follower_) throw usage_error("strata::kafka::changelog: follow of a moved-from changelog");
    return replay_range(opts_, *follower_, from, true, &durable_end_, &known);
}

static_assert(strata::changelog<changelog>);

}  // namespace strata::kafka
