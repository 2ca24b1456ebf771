// End-to-end benchmark of strata against the file log and a real Kafka
// broker, with the ceilings measured by the same program: a plain librdkafka
// producer and consumer loop (no strata code in them) and sequential disk
// bandwidth. Each command prints one JSON line on stdout (`e2e --help`, or
// `e2e COMMAND --help`, lists the options).
//
//   e2e write   --sink file|kafka ...   logged writes through
//               hash_map_store<string,string> | logged(log) [| cached(bytes)]
//               (--store rocksdb --store-dir D: rocksdb_store<string,string>)
//   e2e restore --source file|kafka ... restore into a fresh store (either kind)
//   e2e produce-ceiling ...             librdkafka producer loop, same workload
//   e2e consume-ceiling ...             librdkafka consumer loop, read to end
//   e2e disk --dir D [--bytes 1GiB]     write(2)+fdatasync, then read back cold
//
// Workload (the same as the Kafka Streams peer's, benchmarks/peers/kafka-streams):
// key "k<id>", id uniform or Zipf(s) over --keys (id 0 the hottest), or
// sequential (id = i mod keys: one record per key, the shape of a compacted
// changelog); value: the update's sequence number as --value-bytes ASCII
// digits, zero-padded. Key ids are drawn before the clock starts.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/rocksdb_store.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>

namespace {

/// The command line, every command's options in one place. Numbers take the
/// suffixes k, M, G (x1000) and KiB, MiB, GiB (x1024); an option given twice
/// keeps its last value, --producer-setting every one.
struct options {
    std::string sink, source, dir, bootstrap, topic;
    std::string store = "hash", store_dir;
    std::uint64_t updates = 1'000'000, keys = 100'000, value_bytes = 100, seed = 42;
    std::string dist = "uniform";
    double zipf_s = 0.99;
    std::uint64_t cache_bytes = 0, flush_ms = 100, ceiling_flush_ms = 0, rss_every = 0, produce_batch = 0;
    std::uint64_t bytes = std::uint64_t{1} << 30;
    std::vector<std::string> producer_settings, consumer_settings;
};

/// An option that others make necessary, e.g. --dir with --sink file.
const std::string& need(const std::string& value, const std::string& name) {
    if (value.empty()) throw std::invalid_argument("missing --" + name);
    return value;
}

/// Keeps the order fields are added in, as people read the lines too.
using json = nlohmann::ordered_json;

void print(const json& j) {
    // A path need not be UTF-8: replace what is not rather than throw.
    std::puts(j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    std::fflush(stdout);
}

using clock_type = std::chrono::steady_clock;
using kv = strata::hash_map_store<std::string, std::string>;
using rocks_kv = strata::rocksdb_store<std::string, std::string>;

/// Entries in a store: exact for the map, RocksDB's estimate for RocksDB.
std::uint64_t entries_of(const kv& s) { return s.size(); }
std::uint64_t entries_of(const rocks_kv& s) { return s.estimated_keys(); }

/// Calls body(store) with the store --store names: "hash" (hash_map_store,
/// the default) or "rocksdb" (rocksdb_store in a fresh --store-dir).
template <class Body>
void with_store(const options& o, std::uint64_t keys, Body body) {
    if (o.store == "rocksdb") {
        const std::filesystem::path dir = need(o.store_dir, "store-dir");
        std::filesystem::remove_all(dir);
        body(rocks_kv("kv", dir));
    } else {
        kv s("kv");
        s.reserve(keys);
        body(std::move(s));
    }
}

/// The producer settings of strata's changelog in this benchmark, shared
/// verbatim by the producer ceiling. enable.idempotence and acks=all are
/// forced by strata's producer and set by the ceiling too.
/// name=value pairs of a repeatable option, on top of `s`.
strata::kafka::settings with_pairs(strata::kafka::settings s, const std::vector<std::string>& pairs,
                                   const std::string& option) {
    for (const auto& kv : pairs) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("--" + option + " wants name=value: " + kv);
        s[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return s;
}

strata::kafka::settings producer_settings(const options& o) {
    return with_pairs({{"linger.ms", "20"}, {"batch.size", "1000000"}, {"compression.type", "none"}},
                      o.producer_settings, "producer-setting");
}

/// The consumer settings of strata's replay (replay_consumer_settings(), which
/// strata applies itself) with --consumer-setting on top, shared verbatim by
/// the consumer ceiling.
strata::kafka::settings consumer_settings(const options& o) { return with_pairs({}, o.consumer_settings, "consumer-setting"); }

// ---------------------------------------------------------------- timing --

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

/// The peak resident set size of the process so far, in bytes (VmHWM).
std::uint64_t peak_resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (f == nullptr) throw std::runtime_error("cannot open /proc/self/status");
    char line[256];
    std::uint64_t kib = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f) != nullptr)
        if (std::sscanf(line, "VmHWM: %" SCNu64 " kB", &kib) == 1) {
            found = true;
            break;
        }
    std::fclose(f);
    if (!found) throw std::runtime_error("no VmHWM in /proc/self/status");
    return kib * 1024;
}

/// Resident set size now, in bytes (/proc/self/statm).
std::uint64_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) throw std::runtime_error("cannot open /proc/self/statm");
    unsigned long total = 0, resident = 0;
    const int n = std::fscanf(f, "%lu %lu", &total, &resident);
    std::fclose(f);
    if (n != 2) throw std::runtime_error("cannot read /proc/self/statm");
    return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// -------------------------------------------------------------- workload --

struct workload {
    std::uint64_t updates;
    std::uint64_t keys;
    std::string dist;
    double zipf_s;
    std::size_t value_bytes;
    std::uint64_t seed;

    explicit workload(const options& o)
        : updates(o.updates), keys(o.keys), dist(o.dist), zipf_s(o.zipf_s), value_bytes(o.value_bytes),
          seed(o.seed) {
        if (updates == 0 || keys == 0) throw std::invalid_argument("--updates and --keys must be positive");
    }

    /// The key id of every update, drawn before anything is timed.
    [[nodiscard]] std::vector<std::uint32_t> key_ids() const {
        std::vector<std::uint32_t> ids(updates);
        std::mt19937_64 rnd(seed);
        if (dist == "sequential") {
            for (std::uint64_t i = 0; i < updates; ++i) ids[i] = static_cast<std::uint32_t>(i % keys);
        } else if (dist == "uniform") {
            std::uniform_int_distribution<std::uint64_t> d(0, keys - 1);
            for (auto& id : ids) id = static_cast<std::uint32_t>(d(rnd));
        } else {
            std::vector<double> cdf(keys);
            double sum = 0;
            for (std::uint64_t i = 0; i < keys; ++i) cdf[i] = sum += 1.0 / std::pow(static_cast<double>(i + 1), zipf_s);
            for (auto& c : cdf) c /= sum;
            std::uniform_real_distribution<double> u(0, 1);
            for (auto& id : ids)
                id = static_cast<std::uint32_t>(
                    std::min<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rnd)) - cdf.begin(), keys - 1));
        }
        return ids;
    }

    [[nodiscard]] std::vector<std::string> key_names() const {
        std::vector<std::string> names(keys);
        for (std::uint64_t i = 0; i < keys; ++i) names[i] = "k" + std::to_string(i);
        return names;
    }

    /// Writes update i's value (sequence number, zero-padded) into v.
    void value_of(std::uint64_t i, std::string& v) const {
        v.assign(value_bytes, '0');
        char digits[24];
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, i);
        const auto n = static_cast<std::size_t>(end - digits);
        if (n <= value_bytes) std::memcpy(v.data() + value_bytes - n, digits, n);
        else std::memcpy(v.data(), end - value_bytes, value_bytes);
    }

    void describe(json& j) const {
        j.update({{"updates", updates}, {"keys", keys}, {"dist", dist}, {"value_bytes", value_bytes}});
        if (dist == "zipf") j["zipf_s"] = zipf_s;
    }
};

/// A changelog in front of another one that counts the records and payload
/// bytes (key + value) appended and replayed, and forwards everything.
template <class Log>
class counting_log {
public:
    explicit counting_log(Log& inner) : inner_(&inner) {}

    class range {
    public:
        using inner_range = decltype(std::declval<const Log&>().replay(strata::offset_t{}));
        range(const Log& l, strata::offset_t from, std::uint64_t* bytes) : inner_(l.replay(from)), bytes_(bytes) {}
        range(range&&) = delete;

        using inner_iterator = decltype(std::declval<inner_range&>().begin());
        using inner_sentinel = decltype(std::declval<inner_range&>().end());
        struct sentinel {
            inner_sentinel s;
        };
        class iterator {
        public:
            using value_type = strata::record_view;
            using difference_type = std::ptrdiff_t;
            using iterator_concept = std::input_iterator_tag;
            iterator() = default;
            iterator(inner_iterator it, std::uint64_t* bytes) : it_(std::move(it)), bytes_(bytes) {}
            decltype(auto) operator*() const { return *it_; }
            iterator& operator++() {
                const strata::record_view& r = *it_;
                *bytes_ += r.key.size() + (r.value ? r.value->size() : 0);
                ++it_;
                return *this;
            }
            void operator++(int) { ++*this; }
            friend bool operator==(const iterator& i, const sentinel& s) { return i.it_ == s.s; }

        private:
            inner_iterator it_{};
            std::uint64_t* bytes_ = nullptr;
        };
        iterator begin() { return iterator(inner_.begin(), bytes_); }
        sentinel end() { return sentinel{inner_.end()}; }

        /// The batches of a changelog that offers them (restore_from reads those).
        auto next_batch()
            requires requires(inner_range& r) { r.next_batch(); }
        {
            auto batch = inner_.next_batch();
            for (const strata::record_view& r : batch) *bytes_ += r.key.size() + (r.value ? r.value->size() : 0);
            return batch;
        }

    private:
        inner_range inner_;
        std::uint64_t* bytes_;
    };

    decltype(auto) append(const strata::record_view& r) {
        ++records;
        bytes += r.key.size() + (r.value ? r.value->size() : 0);
        return inner_->append(r);
    }
    strata::offset_t flush() { return inner_->flush(); }
    [[nodiscard]] strata::offset_t end_offset() const { return inner_->end_offset(); }
    [[nodiscard]] range replay(strata::offset_t from = 0) const { return range(*inner_, from, &replayed_bytes); }

    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    mutable std::uint64_t replayed_bytes = 0;

private:
    Log* inner_;
};

strata::kafka::topic_options topic_opts(const std::string& bootstrap) {
    strata::kafka::topic_options t;
    t.bootstrap_servers = bootstrap;
    // The broker's default segment size (1 GiB): the cleaner leaves the
    // changelog alone during a run, as it does for Kafka Streams' changelogs.
    return t;
}

strata::kafka::changelog_options log_opts(const options& o) {
    strata::kafka::changelog_options l;
    l.bootstrap_servers = need(o.bootstrap, "bootstrap");
    l.topic = need(o.topic, "topic");
    l.producer_settings = producer_settings(o);
    l.producer_settings.emplace("message.timeout.ms", "120000");
    l.consumer_settings = consumer_settings(o);
    return l;
}

// ------------------------------------------------------------------ write --

template <class Log>
void run_write(const options& o, const workload& w, Log& inner_log, json& j) {
    const std::uint64_t cache_bytes = o.cache_bytes;
    const std::uint64_t flush_ms = o.flush_ms;
    // The flood: resident memory every N updates, to show where it levels off.
    const std::uint64_t rss_every = o.rss_every;
    const auto ids = w.key_ids();
    const auto names = w.key_names();
    counting_log<Log> log(inner_log);

    auto drive = [&](auto& store, auto& inner, auto records_written) {
        std::string value;
        std::uint64_t flushes = 0;
        json rss = json::array();
        if (rss_every > 0) rss.push_back(json{{"updates", std::uint64_t{0}}, {"rss_bytes", resident_bytes()}});
        const double cpu0 = cpu_seconds();
        const auto t0 = clock_type::now();
        auto next_flush = t0 + std::chrono::milliseconds(flush_ms);
        for (std::uint64_t i = 0; i < w.updates; ++i) {
            w.value_of(i, value);
            store.put(names[ids[i]], value);
            if (rss_every > 0 && (i + 1) % rss_every == 0)
                rss.push_back(json{{"updates", i + 1}, {"rss_bytes", resident_bytes()}});
            if ((i & 255) == 255 && flush_ms > 0) {
                const auto now = clock_type::now();
                if (now >= next_flush) {
                    (void)store.flush();
                    ++flushes;
                    next_flush = now + std::chrono::milliseconds(flush_ms);
                }
            }
        }
        const auto end = store.flush();
        ++flushes;
        const double elapsed = since(t0);
        const double cpu = cpu_seconds() - cpu0;
        const auto records = records_written();
        const auto payload = log.bytes;
        if (records != log.records) throw std::logic_error("records counted twice differ");
        j.update({
            {"elapsed_s", elapsed},
            {"updates_per_s", static_cast<double>(w.updates) / elapsed},
            {"cpu_s", cpu},
            {"cpu_s_per_million", cpu / (static_cast<double>(w.updates) / 1e6)},
            {"flushes", flushes},
            {"changelog_records", records},
            {"changelog_end_offset", static_cast<std::uint64_t>(end)},
            {"changelog_records_per_update", static_cast<double>(records) / static_cast<double>(w.updates)},
            {"changelog_payload_bytes", payload},
            {"changelog_payload_bytes_per_update", static_cast<double>(payload) / static_cast<double>(w.updates)},
            {"entries", entries_of(inner)},
        });
        if (rss_every > 0) j["rss"] = std::move(rss);
    };

    with_store(o, w.keys, [&](auto&& store) {
        if (cache_bytes == 0) {
            auto s = std::move(store) | strata::logged(log);
            drive(s, s.base(), [&] { return s.records_written(); });
        } else {
            auto s = std::move(store) | strata::logged(log) | strata::cached(strata::cached_options{cache_bytes});
            drive(s, s.base().base(), [&] { return s.base().records_written(); });
        }
    });
    j.update({{"cache_bytes", cache_bytes}, {"flush_ms", flush_ms}, {"store", o.store}});
}

void cmd_write(const options& o) {
    const workload w(o);
    json j = {{"command", "write"}, {"system", "strata"}, {"sink", o.sink}};
    w.describe(j);
    if (o.sink == "file") {
        const std::filesystem::path dir = need(o.dir, "dir");
        std::filesystem::remove_all(dir);
        strata::file_log log(dir);
        run_write(o, w, log, j);
        j["dir"] = dir.string();
    } else {
        (void)strata::kafka::ensure_topic(need(o.topic, "topic"), topic_opts(need(o.bootstrap, "bootstrap")));
        strata::kafka::changelog log(log_opts(o));
        run_write(o, w, log, j);
        j["topic"] = o.topic;
        j["producer_settings"] = log.options().producer_settings;
    }
    print(j);
}

// ---------------------------------------------------------------- restore --

template <class MakeLog>
void run_restore(const options& o, MakeLog make_log, json& j) {
    with_store(o, 0, [&](auto&& store) {
        using store_type = std::remove_cvref_t<decltype(store)>;
        std::optional<store_type> restored;
        const std::uint64_t rss_before = resident_bytes();
        {
            const double cpu0 = cpu_seconds();
            const auto t0 = clock_type::now();  // from opening the changelog until the store is ready
            auto inner_log = make_log();
            counting_log<decltype(inner_log)> log(inner_log);
            auto s = std::move(store) | strata::logged(log);
            const auto t1 = clock_type::now();
            const auto p = s.restore();
            const double restore_s = since(t1);
            const double ready_s = since(t0);
            const double cpu = cpu_seconds() - cpu0;
            j.update({
                {"records", p.records_done},
                {"payload_bytes", log.replayed_bytes},
                {"restore_s", restore_s},
                {"ready_s", ready_s},
                {"records_per_s", static_cast<double>(p.records_done) / restore_s},
                {"mb_per_s", static_cast<double>(log.replayed_bytes) / 1e6 / restore_s},
                {"cpu_s", cpu},
                {"cpu_s_per_million", cpu / (static_cast<double>(p.records_done) / 1e6)},
                {"entries", entries_of(s.base())},
                {"store", o.store},
            });
            restored.emplace(std::move(s).base());
        }  // the changelog is closed: its consumer, and whatever it had fetched, are gone
        // The process did nothing before the restore, so its peak is the restore's.
        const std::uint64_t peak = peak_resident_bytes();
        ::malloc_trim(0);  // what the allocator keeps but the store does not use is not the store's
        const std::uint64_t after = resident_bytes();
        j.update({
            {"rss_before_bytes", rss_before},
            {"peak_rss_bytes", peak},
            {"rss_after_bytes", after},
            {"peak_rss_over_after", static_cast<double>(peak) / static_cast<double>(after)},
        });
    });
}

void cmd_restore(const options& o) {
    json j = {{"command", "restore"}, {"system", "strata"}, {"source", o.source}};
    if (o.source == "file") {
        const std::filesystem::path dir = need(o.dir, "dir");
        run_restore(o, [&] { return strata::file_log(dir); }, j);
    } else {
        const auto opts = log_opts(o);
        // kafka::changelog is movable; the replay range it makes is built in place.
        run_restore(o, [&] { return strata::kafka::changelog(opts); }, j);
        j["topic"] = o.topic;
    }
    print(j);
}

// -------------------------------------------------------- kafka ceilings --

rd_kafka_conf_t* make_conf(const std::string& bootstrap, const strata::kafka::settings& s) {
    rd_kafka_conf_t* c = rd_kafka_conf_new();
    char err[512];
    auto set = [&](const std::string& k, const std::string& v) {
        if (rd_kafka_conf_set(c, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
            throw std::runtime_error("setting " + k + "=" + v + ": " + err);
    };
    set("bootstrap.servers", bootstrap);
    for (const auto& [k, v] : s) set(k, v);
    return c;
}

struct acks {
    std::uint64_t ok = 0, failed = 0;
};

void cmd_produce_ceiling(const options& o) {
    const workload w(o);
    const std::string& bootstrap = o.bootstrap;
    const std::string& topic = o.topic;
    const std::uint64_t flush_ms = o.ceiling_flush_ms;
    (void)strata::kafka::ensure_topic(topic, topic_opts(bootstrap));

    auto settings = producer_settings(o);
    settings["enable.idempotence"] = "true";
    settings["acks"] = "all";
    settings["message.timeout.ms"] = "120000";
    rd_kafka_conf_t* conf = make_conf(bootstrap, settings);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
        auto* c = static_cast<acks*>(opaque);
        if (m->err) ++c->failed;
        else ++c->ok;
    });
    acks counts;
    rd_kafka_conf_set_opaque(conf, &counts);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == nullptr) throw std::runtime_error(std::string("producer: ") + err);
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    // Wait for the partition's leader, so the clock does not time the connection.
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);

    const auto ids = w.key_ids();
    const auto names = w.key_names();
    std::string value;
    std::uint64_t payload = 0, flushes = 0;
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    auto next_flush = t0 + std::chrono::milliseconds(flush_ms);
    // --produce-batch N: the same records handed over N at a time with
    // rd_kafka_produce_batch (one call, one partition lookup per batch).
    const std::size_t batch = o.produce_batch;
    std::vector<std::string> batch_values(batch);
    std::vector<rd_kafka_message_t> batch_msgs(batch);
    std::size_t in_batch = 0;
    auto hand_over = [&] {
        std::size_t left = in_batch;
        while (left > 0) {
            for (std::size_t k = 0; k < left; ++k) batch_msgs[k].err = RD_KAFKA_RESP_ERR_NO_ERROR;
            (void)rd_kafka_produce_batch(rkt, 0, RD_KAFKA_MSG_F_COPY, batch_msgs.data(), static_cast<int>(left));
            // The refused ones (a full queue) again, once delivery reports made room.
            std::size_t refused = 0;
            for (std::size_t k = 0; k < left; ++k) {
                if (batch_msgs[k].err == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
                if (batch_msgs[k].err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(batch_msgs[k].err));
                batch_msgs[refused++] = batch_msgs[k];
            }
            left = refused;
            if (left > 0) rd_kafka_poll(rk, 10);
        }
        in_batch = 0;
    };
    for (std::uint64_t i = 0; i < w.updates; ++i) {
        const std::string& key = names[ids[i]];
        if (batch > 0) {
            std::string& v = batch_values[in_batch];
            w.value_of(i, v);
            rd_kafka_message_t& m = batch_msgs[in_batch++];
            m = rd_kafka_message_t{};
            m.payload = v.data();
            m.len = v.size();
            m.key = const_cast<char*>(key.data());
            m.key_len = key.size();
            payload += key.size() + v.size();
            if (in_batch == batch) hand_over();
        } else {
            w.value_of(i, value);
            while (rd_kafka_produce(rkt, 0, RD_KAFKA_MSG_F_COPY, value.data(), value.size(), key.data(), key.size(),
                                    nullptr) != 0) {
                if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(rd_kafka_last_error()));
                rd_kafka_poll(rk, 10);
            }
            payload += key.size() + value.size();
        }
        if ((i & 255) == 255) {
            if (flush_ms > 0 && batch > 0) hand_over();
            rd_kafka_poll(rk, 0);
            if (flush_ms > 0 && clock_type::now() >= next_flush) {
                while (rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, 100);
                ++flushes;
                next_flush = clock_type::now() + std::chrono::milliseconds(flush_ms);
            }
        }
    }
    hand_over();
    while (counts.ok + counts.failed < w.updates) rd_kafka_flush(rk, 100);
    ++flushes;
    const double elapsed = since(t0);
    const double cpu = cpu_seconds() - cpu0;

    json j = {{"command", "produce-ceiling"}, {"system", "librdkafka"}};
    w.describe(j);
    j.update({
        {"topic", topic},
        {"flush_ms", flush_ms},
        {"produce_batch", batch},
        {"flushes", flushes},
        {"elapsed_s", elapsed},
        {"records_per_s", static_cast<double>(w.updates) / elapsed},
        {"updates_per_s", static_cast<double>(w.updates) / elapsed},
        {"cpu_s", cpu},
        {"cpu_s_per_million", cpu / (static_cast<double>(w.updates) / 1e6)},
        {"acked", counts.ok},
        {"failed", counts.failed},
        {"payload_bytes", payload},
        {"producer_settings", settings},
    });
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (counts.failed != 0) throw std::runtime_error("records failed");
    print(j);
}

void cmd_consume_ceiling(const options& o) {
    const std::string& bootstrap = o.bootstrap;
    const std::string& topic = o.topic;
    // The settings of strata's kafka::changelog consumer, read_committed as its default.
    strata::kafka::settings s = strata::kafka::replay_consumer_settings(true);
    for (const auto& [k, v] : consumer_settings(o)) s[k] = v;
    s["group.id"] = "e2e-ceiling-" + std::to_string(::getpid());
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, make_conf(bootstrap, s), err, sizeof err);
    if (rk == nullptr) throw std::runtime_error(std::string("consumer: ") + err);
    // Partition 0 from its first offset, with librdkafka's simple consumer
    // (no group), as rdkafka_performance -C reads. The connection and the
    // partition's leader are set up before the clock starts.
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    if (rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING) != 0)
        throw std::runtime_error(std::string("consume_start: ") + rd_kafka_err2str(rd_kafka_last_error()));

    struct counts {
        std::uint64_t records = 0, payload = 0;
        clock_type::time_point first{};
        bool done = false;
        std::string error;
    } c;
    c.first = t0;
    // Every message already fetched is handed over at once, none waited for.
    auto on_message = [](rd_kafka_message_t* m, void* opaque) {
        auto* c = static_cast<counts*>(opaque);
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) c->done = true;
        else if (m->err) c->error = rd_kafka_message_errstr(m);
        else {
            if (c->records++ == 0) c->first = clock_type::now();
            c->payload += m->key_len + m->len;
        }
    };
    while (!c.done) {
        if (rd_kafka_consume_callback(rkt, 0, 1000, on_message, &c) < 0) throw std::runtime_error("consume failed");
        if (!c.error.empty()) throw std::runtime_error("consume: " + c.error);
        if (since(t0) > 600) throw std::runtime_error("no end of partition within 600 s");
    }
    const std::uint64_t records = c.records, payload = c.payload;
    const auto first = c.first;
    const double elapsed = since(t0);
    const double cpu = cpu_seconds() - cpu0;
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);

    const json j = {
        {"command", "consume-ceiling"},
        {"system", "librdkafka"},
        {"topic", topic},
        {"records", records},
        {"payload_bytes", payload},
        {"elapsed_s", elapsed},
        {"records_per_s", static_cast<double>(records) / elapsed},
        {"mb_per_s", static_cast<double>(payload) / 1e6 / elapsed},
        {"first_record_s", std::chrono::duration<double>(first - t0).count()},
        {"cpu_s", cpu},
        {"cpu_s_per_million", cpu / (static_cast<double>(records) / 1e6)},
        {"peak_rss_bytes", peak_resident_bytes()},
        {"consumer_settings", s},
    };
    print(j);
}

// ------------------------------------------------------------------- disk --

void cmd_disk(const options& o) {
    const std::filesystem::path dir = o.dir;
    const std::uint64_t total = o.bytes;
    const std::size_t chunk = 8u << 20;
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "disk-bandwidth.bin").string();
    std::vector<char> buf(chunk);
    for (std::size_t i = 0; i < chunk; ++i) buf[i] = static_cast<char>(i * 131 + 7);

    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) throw std::runtime_error("open " + path);
    auto t0 = clock_type::now();
    for (std::uint64_t done = 0; done < total; done += chunk)
        if (::write(fd, buf.data(), chunk) != static_cast<ssize_t>(chunk)) throw std::runtime_error("write");
    if (::fdatasync(fd) != 0) throw std::runtime_error("fdatasync");
    const double write_s = since(t0);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);

    fd = ::open(path.c_str(), O_RDONLY);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    t0 = clock_type::now();
    std::uint64_t read_bytes = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), chunk);
        if (n <= 0) break;
        read_bytes += static_cast<std::uint64_t>(n);
    }
    const double read_s = since(t0);
    ::close(fd);
    std::filesystem::remove(path);

    const json j = {
        {"command", "disk"},
        {"system", "disk"},
        {"dir", dir.string()},
        {"bytes", total},
        {"write_s", write_s},
        {"write_mb_per_s", static_cast<double>(total) / 1e6 / write_s},
        {"read_s", read_s},
        {"read_mb_per_s", static_cast<double>(read_bytes) / 1e6 / read_s},
    };
    print(j);
}

// ---------------------------------------------------------- command line --

CLI::Option* add_number(CLI::App& c, const std::string& name, std::uint64_t& v, const std::string& shown,
                        const std::string& what) {
    // AsSizeValue(true): k, M, G are x1000 and KiB, MiB, GiB x1024 (any case, B optional).
    CLI::AsSizeValue suffixed(true);
    suffixed.description("[k|M|G|KiB|MiB|GiB]");
    return c.add_option(name, v, what)->transform(suffixed)->default_str(shown);
}

void add_store(CLI::App& c, options& o) {
    c.add_option("--store", o.store, "hash: hash_map_store; rocksdb: rocksdb_store in a fresh --store-dir")
        ->check(CLI::IsMember({"hash", "rocksdb"}));
    c.add_option("--store-dir", o.store_dir, "the RocksDB store's directory (removed first)");
}

void add_kafka(CLI::App& c, options& o, bool required) {
    c.add_option("--bootstrap", o.bootstrap, "the brokers")->required(required);
    c.add_option("--topic", o.topic, "the topic")->required(required);
}

void add_producer(CLI::App& c, options& o) {
    c.add_option("--producer-setting", o.producer_settings, "a librdkafka setting name=value, repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false)
        ->default_str("");
}

void add_consumer(CLI::App& c, options& o) {
    c.add_option("--consumer-setting", o.consumer_settings,
                 "a librdkafka setting name=value of the replaying consumer, repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false)
        ->default_str("");
}

void add_workload(CLI::App& c, options& o) {
    add_number(c, "--updates", o.updates, "1M", "updates");
    add_number(c, "--keys", o.keys, "100k", "distinct keys k0, k1, ...");
    c.add_option("--dist", o.dist, "key ids: uniform, zipf (id 0 the hottest) or sequential (i mod keys)")
        ->check(CLI::IsMember({"uniform", "zipf", "sequential"}));
    c.add_option("--zipf-s", o.zipf_s, "the Zipf exponent");
    add_number(c, "--value-bytes", o.value_bytes, "100", "value size: the update's number, zero-padded");
    add_number(c, "--seed", o.seed, "42", "seed of the key ids");
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    CLI::App app("strata end to end, against the file log and Kafka, and their ceilings; each command prints one "
                 "JSON line",
                 "e2e");
    app.require_subcommand(1);
    app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    CLI::App& write = *app.add_subcommand("write", "logged writes through hash_map_store (or rocksdb_store) | "
                                                   "logged(log) [| cached(bytes)]");
    write.add_option("--sink", o.sink, "the changelog")->required()->check(CLI::IsMember({"file", "kafka"}));
    write.add_option("--dir", o.dir, "the file log's directory (removed first)");
    add_kafka(write, o, false);
    add_producer(write, o);
    add_store(write, o);
    add_workload(write, o);
    add_number(write, "--cache-bytes", o.cache_bytes, "0", "the cache's bound, 0 for no cache (e.g. 10MiB)");
    add_number(write, "--flush-ms", o.flush_ms, "100", "flush every this many ms of wall time, 0 only at the end");
    add_number(write, "--rss-every", o.rss_every, "0", "sample resident memory every this many updates");

    CLI::App& restore = *app.add_subcommand("restore", "restore a fresh store from a changelog");
    restore.add_option("--source", o.source, "the changelog")->required()->check(CLI::IsMember({"file", "kafka"}));
    restore.add_option("--dir", o.dir, "the file log's directory");
    add_kafka(restore, o, false);
    add_producer(restore, o);
    add_consumer(restore, o);
    add_store(restore, o);

    CLI::App& produce = *app.add_subcommand("produce-ceiling", "a plain librdkafka producer loop, same workload");
    add_kafka(produce, o, true);
    add_producer(produce, o);
    add_workload(produce, o);
    add_number(produce, "--flush-ms", o.ceiling_flush_ms, "0", "flush every this many ms, 0 only at the end");
    add_number(produce, "--produce-batch", o.produce_batch, "0",
               "hand the records over this many at a time (rd_kafka_produce_batch), 0: one rd_kafka_produce each");

    CLI::App& consume = *app.add_subcommand("consume-ceiling", "a plain librdkafka consumer loop, read to the end");
    add_kafka(consume, o, true);
    add_consumer(consume, o);

    CLI::App& disk = *app.add_subcommand("disk", "write(2) + fdatasync, then read back cold");
    disk.add_option("--dir", o.dir, "a directory on the disk to measure")->required();
    add_number(disk, "--bytes", o.bytes, "1GiB", "bytes to write");

    if (argc < 2) {
        std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stderr);
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    try {
        if (write.parsed()) cmd_write(o);
        else if (restore.parsed()) cmd_restore(o);
        else if (produce.parsed()) cmd_produce_ceiling(o);
        else if (consume.parsed()) cmd_consume_ceiling(o);
        else if (disk.parsed()) cmd_disk(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "e2e: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
