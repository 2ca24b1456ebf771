// The runtime benchmark's driver: runs one stream topology in strata's
// runtime (aggregate_app, built from test/runtime/app) or in Kafka Streams
// (scripts/peer-kafka-streams.sh runtime), as child processes on one broker,
// feeds them input, watches what they print and what the group commits, and
// prints one JSON line per run on stdout.
//
//   runtime_bench throughput ...  N records prefilled, one instance, wall
//                                 time from its start until the group has
//                                 committed every input offset; its CPU time
//   runtime_bench scale ...       one instance (or a few) over --partitions
//                                 P: time until every task runs, and the
//                                 threads, Kafka clients, sockets and memory
//                                 each instance holds then
//   runtime_bench failover ...    three instances, input at a steady rate,
//                                 SIGKILL of one after a while, then for each
//                                 task it owned: detection, assignment,
//                                 restore and first record on its new owner
//
// Both check the output at the end: one record per input offset of every
// input partition (missing ones, duplicates, and values that differ from
// what one uninterrupted run computes).
//
// The topology on both sides: input key "k<i % keys>" (string), value the
// amount (i % 13) + 1 as 8 bytes big-endian, written to partition
// murmur2(key) % partitions; per-key store of (count, sum); one output
// record per input, same key, 24 bytes: input offset, count, sum (int64
// big-endian each).
//
// Child processes: argv is built before fork (librdkafka's threads may hold
// the allocator's lock), stdout and stderr go to files, and the child dies
// with the driver (PR_SET_PDEATHSIG). Times the children print are wall-clock
// milliseconds since the epoch; the driver uses the same clock for its own.

#include "support/driver.hpp"
#include "support/own_network.hpp"  // test/support

#include <strata/kafka/admin.hpp>
#include <strata/kafka/handles.hpp>
#include <strata/kafka/murmur2.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#ifndef RUNTIME_BENCH_CEILING
#define RUNTIME_BENCH_CEILING "ceiling_app"
#endif
#ifndef RUNTIME_BENCH_PROXY
#define RUNTIME_BENCH_PROXY "test/support/tcp_proxy.py"
#endif
#ifndef RUNTIME_BENCH_APP
#define RUNTIME_BENCH_APP "aggregate_app"
#endif
#ifndef RUNTIME_BENCH_PEER
#define RUNTIME_BENCH_PEER "scripts/peer-kafka-streams.sh"
#endif

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// The partitions of the input and output topics: 6, or `--partitions` of
/// the scale command (set once, before any topic is made).
std::int32_t partitions = 6;

std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }

void say(const std::string& s) {
    std::fprintf(stderr, "runtime_bench: %s\n", s.c_str());
    std::fflush(stderr);
}

using bench::args;
using bench::json;

/// "k<i>" (appended, not operator+: GCC 12 warns falsely about that one).
std::string key_name(std::uint64_t i) {
    std::string k = "k";
    k += std::to_string(i);
    return k;
}

// ------------------------------------------------------------- processes --

/// One child process (strata's app or the Kafka Streams peer), stdout and
/// stderr to files. Ended with SIGKILL when destroyed while running.
class child {
public:
    child(std::string name, std::vector<std::string> args, const fs::path& out, const fs::path& err)
        : name_(std::move(name)), out_(out) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const std::string out_path = out.string(), err_path = err.string();
        const pid_t parent = ::getpid();
        start_ms_ = wall_ms();
        start_ = steady::now();
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            // Only async-signal-safe calls from here on.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(126);
            const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (in < 0 || o < 0 || e < 0) ::_exit(127);
            ::dup2(in, 0);
            ::dup2(o, 1);
            ::dup2(e, 2);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
    }
    child(const child&) = delete;
    child& operator=(const child&) = delete;
    ~child() {
        if (running()) {
            ::kill(pid_, SIGKILL);
            (void)wait(10s);
        }
    }

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    [[nodiscard]] std::int64_t start_ms() const noexcept { return start_ms_; }
    [[nodiscard]] steady::time_point start() const noexcept { return start_; }

    /// Whether it has not ended (reaps it if it has).
    bool running() {
        if (pid_ <= 0 || status_) return false;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) != pid_) return true;
        status_ = status;
        return false;
    }

    void signal(int sig) {
        if (running()) ::kill(pid_, sig);
    }

    /// Waits for it to end, SIGKILL after `timeout`; its wait status.
    int wait(std::chrono::seconds timeout) {
        if (status_) return *status_;
        const auto deadline = steady::now() + timeout;
        int status = 0;
        for (;;) {
            if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
            if (steady::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                killed_after_timeout_ = true;
                break;
            }
            std::this_thread::sleep_for(20ms);
        }
        status_ = status;
        return status;
    }
    [[nodiscard]] bool killed_after_timeout() const noexcept { return killed_after_timeout_; }

    /// "exit 0", "signal 9", ...
    [[nodiscard]] std::string how_it_ended() const {
        if (!status_) return "running";
        if (WIFEXITED(*status_)) return "exit " + std::to_string(WEXITSTATUS(*status_));
        if (WIFSIGNALED(*status_)) return "signal " + std::to_string(WTERMSIG(*status_));
        return "status " + std::to_string(*status_);
    }
    [[nodiscard]] bool exited_ok() const { return status_ && WIFEXITED(*status_) && WEXITSTATUS(*status_) == 0; }

    /// user + system CPU seconds of the process (all its threads), from
    /// /proc/<pid>/stat; -1 if it cannot be read.
    [[nodiscard]] double cpu_seconds() const {
        std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
        std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto close = s.rfind(')');
        if (close == std::string::npos) return -1;
        std::istringstream rest(s.substr(close + 2));
        std::vector<std::string> f;
        for (std::string t; rest >> t;) f.push_back(t);
        // Fields 14 (utime) and 15 (stime) of proc(5); f[0] is field 3.
        if (f.size() < 13) return -1;
        const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
        return (std::stod(f[11]) + std::stod(f[12])) / ticks;
    }

    /// Peak resident set (VmHWM) in MiB, -1 if unknown.
    [[nodiscard]] double peak_rss_mib() const { return status_mib("VmHWM:"); }

    /// What the process holds now: threads, librdkafka clients (each has
    /// one "rdk:main" thread), open sockets, resident set in MiB.
    struct resources {
        int threads = 0, kafka_clients = 0, sockets = 0;
        double rss_mib = -1;
    };
    [[nodiscard]] resources holds() const {
        resources r;
        const fs::path proc = "/proc/" + std::to_string(pid_);
        std::error_code ec;
        for (const auto& t : fs::directory_iterator(proc / "task", ec)) {
            ++r.threads;
            std::ifstream comm(t.path() / "comm");
            std::string name;
            std::getline(comm, name);
            if (name == "rdk:main") ++r.kafka_clients;
        }
        for (const auto& fd : fs::directory_iterator(proc / "fd", ec)) {
            const fs::path target = fs::read_symlink(fd.path(), ec);
            if (!ec && target.string().rfind("socket:", 0) == 0) ++r.sockets;
        }
        r.rss_mib = status_mib("VmRSS:");
        return r;
    }

    [[nodiscard]] std::vector<std::string> lines() const {
        std::ifstream in(out_);
        std::vector<std::string> out;
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }

    /// The complete lines written since the last call: for a caller that
    /// looks often at a long output. Reading all of it again every 50 ms,
    /// as `lines()` does, took a third of a core from the machine under
    /// test once two instances of 1,000 tasks had written 17,000 lines each.
    [[nodiscard]] std::vector<std::string> new_lines() {
        std::ifstream in(out_, std::ios::binary);
        in.seekg(consumed_);
        const std::string chunk{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        const std::size_t end = chunk.rfind('\n');
        std::vector<std::string> out;
        if (end == std::string::npos) return out;
        consumed_ += static_cast<std::streamoff>(end + 1);
        for (std::size_t at = 0; at <= end;) {
            const std::size_t nl = chunk.find('\n', at);
            out.push_back(chunk.substr(at, nl - at));
            at = nl + 1;
        }
        return out;
    }

private:
    /// A size field of /proc/<pid>/status ("VmHWM:", "VmRSS:", in kB there)
    /// in MiB, -1 if unknown.
    [[nodiscard]] double status_mib(std::string_view field) const {
        std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
        for (std::string l; std::getline(in, l);)
            if (l.rfind(field, 0) == 0) return std::stod(l.substr(field.size())) / 1024.0;
        return -1;
    }

    std::string name_;
    fs::path out_;
    pid_t pid_ = -1;
    std::int64_t start_ms_ = 0;
    steady::time_point start_;
    std::optional<int> status_;
    bool killed_after_timeout_ = false;
    std::streamoff consumed_ = 0;  // of the output, by new_lines()
};

/// A line such as "started task=3 assigned_ms=..." split into its first
/// word and its name=value fields.
struct event {
    std::string kind;
    std::map<std::string, std::string> f;

    [[nodiscard]] std::int64_t num(const std::string& k, std::int64_t def = -1) const {
        const auto it = f.find(k);
        if (it == f.end() || it->second.empty() || it->second == "-") return def;
        try {
            return std::stoll(it->second);
        } catch (...) {
            return def;
        }
    }
    [[nodiscard]] std::string text(const std::string& k) const {
        const auto it = f.find(k);
        return it == f.end() ? std::string() : it->second;
    }
};

std::vector<event> events_of(const std::vector<std::string>& lines) {
    std::vector<event> out;
    for (const auto& l : lines) {
        std::istringstream in(l);
        event e;
        if (!(in >> e.kind)) continue;
        for (std::string w; in >> w;) {
            const auto eq = w.find('=');
            if (eq != std::string::npos) e.f[w.substr(0, eq)] = w.substr(eq + 1);
        }
        out.push_back(std::move(e));
    }
    return out;
}

// ------------------------------------------------------------- the systems --

struct system_options {
    std::string system;  // "strata", "kafka-streams", or "ceiling" (throughput only)
    std::string bootstrap;
    std::string app_path, peer_path, ceiling_path;
    std::string guarantee;  // at_least_once | exactly_once
    std::uint64_t commit_ms = 0;
    std::uint64_t session_ms = 6000;
    std::uint64_t transaction_ms = 10000;
    std::uint64_t standbys = 0;
    std::uint64_t cache_bytes = 10u << 20;  // Kafka Streams' statestore.cache.max.bytes
    std::uint64_t stores = 1;               // logged stores a task: 1, or 10 (aggregate_app --ten-stores)
    std::uint64_t liveness_ms = 0;          // strata's liveness_timeout; 0: its default (600 ms)
    std::string standby_fetch_ms;           // strata's standby_fetch_interval (0: fetching all the time); empty: its default
    std::string standby_pacing_from;        // strata's standby_pacing_from_partitions; empty: its default
    std::uint64_t threads = 1;              // processing threads (strata, the ceiling; Kafka Streams' stream threads)
    bool ceiling_changelog = false;         // the ceiling also writes a changelog (ceiling_app --changelog)
    std::string application_id, input, output;

    explicit system_options(const args& a)
        : system(a.need("system")), bootstrap(a.need("bootstrap")), app_path(a.str("app", RUNTIME_BENCH_APP)),
          peer_path(a.str("peer", RUNTIME_BENCH_PEER)), ceiling_path(a.str("ceiling", RUNTIME_BENCH_CEILING)),
          guarantee(a.str("guarantee", "at_least_once")),
          session_ms(a.num("session-ms", 6000)), transaction_ms(a.num("transaction-ms", 10000)),
          standbys(a.num("standbys", 0)), cache_bytes(a.num("cache-bytes", 10u << 20)), stores(a.num("stores", 1)),
          liveness_ms(a.num("liveness-ms", 0)), standby_fetch_ms(a.str("standby-fetch-ms", "")),
          standby_pacing_from(a.str("standby-pacing-from", "")),
          threads(a.num("threads", 1)),
          ceiling_changelog(a.num("ceiling-changelog", 0) != 0) {
        if (threads < 1) throw std::invalid_argument("--threads is at least 1");
        if (stores != 1 && stores != 10) throw std::invalid_argument("--stores is 1 or 10");
        if (system != "strata" && system != "kafka-streams" && system != "ceiling")
            throw std::invalid_argument("--system is strata, kafka-streams or ceiling");
        if (guarantee != "at_least_once" && guarantee != "exactly_once")
            throw std::invalid_argument("--guarantee is at_least_once or exactly_once");
        commit_ms = a.num("commit-ms", guarantee == "exactly_once" ? 100 : 1000);
        const std::string name = a.need("name");
        application_id = name + "-app";
        input = name + "-input";
        output = name + "-output";
    }

    [[nodiscard]] bool strata() const { return system == "strata"; }
    /// The ceiling's changelog, as strata names the totals store's.
    [[nodiscard]] std::string ceiling_changelog_topic() const { return application_id + "-totals-changelog"; }

    /// The command line of one instance.
    [[nodiscard]] std::vector<std::string> argv(const std::string& instance, const fs::path& state) const {
        if (system == "ceiling") {
            std::vector<std::string> v = {ceiling_path, "--bootstrap", bootstrap, "--app", application_id,
                                          "--input", input, "--output", output, "--commit-ms",
                                          std::to_string(commit_ms), "--threads", std::to_string(threads)};
            if (ceiling_changelog) v.insert(v.end(), {"--changelog", ceiling_changelog_topic()});
            return v;
        }
        if (strata()) {
            std::vector<std::string> v = {app_path,    "--bootstrap",  bootstrap,          "--app",
                                          application_id, "--input",   input,              "--output",
                                          output,      "--state",      state.string(),     "--instance",
                                          instance,    "--commit-ms",  std::to_string(commit_ms),
                                          "--session-ms", std::to_string(session_ms), "--transaction-ms",
                                          std::to_string(transaction_ms), "--standbys", std::to_string(standbys)};
            if (guarantee == "exactly_once") v.emplace_back("--exactly-once");
            if (stores == 10) v.emplace_back("--ten-stores");
            v.emplace_back("--notes");  // the coordination's notes, in each instance's .err log
            v.emplace_back("--threads");
            v.emplace_back(std::to_string(threads));
            if (liveness_ms != 0) {
                v.emplace_back("--liveness-ms");
                v.emplace_back(std::to_string(liveness_ms));
            }
            if (!standby_fetch_ms.empty()) {
                v.emplace_back("--standby-fetch-ms");
                v.emplace_back(standby_fetch_ms);
            }
            if (!standby_pacing_from.empty()) {
                v.emplace_back("--standby-pacing-from");
                v.emplace_back(standby_pacing_from);
            }
            return v;
        }
        return {peer_path,       "runtime",
                "--bootstrap",   bootstrap,
                "--application-id", application_id,
                "--input",       input,
                "--output",      output,
                "--instance",    instance,
                "--state-dir",   state.string(),
                "--guarantee",   guarantee == "exactly_once" ? "exactly_once_v2" : "at_least_once",
                "--standbys",    std::to_string(standbys),
                "--session-ms",  std::to_string(session_ms),
                "--commit-ms",   std::to_string(commit_ms),
                "--transaction-ms", std::to_string(transaction_ms),
                "--cache-bytes", std::to_string(cache_bytes),
                "--threads",     std::to_string(threads)};
    }

    void describe(json& j) const {
        j.put("system", system)
            .put("guarantee", guarantee)
            .put("commit_ms", commit_ms)
            .put("session_ms", session_ms)
            .put("transaction_ms", transaction_ms)
            .put("standbys", standbys)
            .put("stores", stores)
            .put("threads", threads)
            .put("application_id", application_id);
        if (system == "ceiling") j.put("ceiling_changelog", ceiling_changelog);
        if (system == "kafka-streams") j.put("cache_bytes", cache_bytes);
        if (strata())
            j.put("liveness_ms", liveness_ms != 0 ? liveness_ms : 600)
                .put("standby_fetch_ms", standby_fetch_ms.empty() ? "default" : standby_fetch_ms)
                .put("standby_pacing_from", standby_pacing_from.empty() ? "default" : standby_pacing_from);
    }
};

// ----------------------------------------------------------------- kafka --

strata::kafka::conf base_conf(const std::string& bootstrap) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", bootstrap);
    return c;
}

void create_topics(const std::string& bootstrap, const std::vector<std::string>& topics) {
    strata::kafka::topic_options o;
    o.bootstrap_servers = bootstrap;
    o.partitions = partitions;
    o.topic_configs = {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}};
    o.require_compaction = false;
    for (const auto& t : topics)
        if (strata::kafka::ensure_topic(t, o) != strata::kafka::topic_status::created)
            throw std::runtime_error("topic " + t + " already exists: every run wants fresh topics");
}

/// Deletes the run's topics: `exact` ones (input, output) and every topic
/// whose name starts with `prefix` (`<application id>-`: the changelog and
/// whatever else the system made for the application), so the broker keeps
/// only what the next run needs.
void delete_topics(const std::string& bootstrap, const std::set<std::string>& exact, const std::string& prefix) {
    try {
        const strata::kafka::client admin(RD_KAFKA_PRODUCER, base_conf(bootstrap));
        const rd_kafka_metadata_t* md = nullptr;
        if (rd_kafka_metadata(admin.get(), 1, nullptr, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
        std::vector<rd_kafka_DeleteTopic_t*> dt;
        for (int i = 0; i < md->topic_cnt; ++i)
            if (const std::string t = md->topics[i].topic; exact.contains(t) || t.rfind(prefix, 0) == 0)
                dt.push_back(rd_kafka_DeleteTopic_new(md->topics[i].topic));
        rd_kafka_metadata_destroy(md);
        if (dt.empty()) return;
        rd_kafka_queue_t* q = rd_kafka_queue_new(admin.get());
        rd_kafka_DeleteTopics(admin.get(), dt.data(), dt.size(), nullptr, q);
        rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
        if (ev != nullptr) rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_DeleteTopic_destroy_array(dt.data(), dt.size());
    } catch (const std::exception& e) {
        say(std::string("deleting topics: ") + e.what());
    }
}

/// Writes the input: record i has key "k<i % keys>", value (i % 13) + 1 as
/// int64 big-endian, partition murmur2(key) % partitions. Idempotent and
/// ordered, so the n-th record written to a partition has offset n; `written`
/// keeps record i's index at its offset, for checking the output.
class input_writer {
public:
    input_writer(const std::string& bootstrap, const std::string& topic, std::uint64_t keys)
        : keys_(keys), written_(partitions) {
        strata::kafka::conf c = base_conf(bootstrap);
        c.set("enable.idempotence", "true");
        c.set("acks", "all");
        c.set("linger.ms", "5");
        c.set("batch.size", "1000000");
        c.set("message.timeout.ms", "120000");
        rd_kafka_conf_set_dr_msg_cb(c.get(), [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
            auto* self = static_cast<input_writer*>(opaque);
            if (m->err) self->failed_.fetch_add(1);
            else self->acked_.fetch_add(1);
        });
        rd_kafka_conf_set_opaque(c.get(), this);
        producer_.emplace(RD_KAFKA_PRODUCER, std::move(c));
        rkt_ = rd_kafka_topic_new(producer_->get(), topic.c_str(), nullptr);
        const rd_kafka_metadata_t* md = nullptr;
        if (rd_kafka_metadata(producer_->get(), 0, rkt_, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR)
            rd_kafka_metadata_destroy(md);
        names_.reserve(keys);
        for (std::uint64_t k = 0; k < keys; ++k) {
            names_.push_back(key_name(k));
            part_.push_back(strata::kafka::default_partition(
                std::as_bytes(std::span(names_.back().data(), names_.back().size())), partitions));
        }
    }
    input_writer(const input_writer&) = delete;
    ~input_writer() {
        if (rkt_ != nullptr) rd_kafka_topic_destroy(rkt_);
    }

    void write(std::uint64_t i) {
        const std::uint64_t k = i % keys_;
        const std::string& key = names_[k];
        const std::int64_t amount = static_cast<std::int64_t>(i % 13) + 1;
        unsigned char value[8];
        for (int b = 0; b < 8; ++b) value[b] = static_cast<unsigned char>(static_cast<std::uint64_t>(amount) >> (56 - 8 * b));
        const std::int32_t p = part_[k];
        while (rd_kafka_produce(rkt_, p, RD_KAFKA_MSG_F_COPY, value, sizeof value, key.data(), key.size(), nullptr) !=
               0) {
            if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(rd_kafka_last_error()));
            rd_kafka_poll(producer_->get(), 10);
        }
        written_[static_cast<std::size_t>(p)].push_back(static_cast<std::uint32_t>(i));
        ++count_;
        if ((count_ & 1023) == 0) rd_kafka_poll(producer_->get(), 0);
    }

    void poll() { rd_kafka_poll(producer_->get(), 0); }

    void flush() {
        while (acked_.load() + failed_.load() < count_) rd_kafka_flush(producer_->get(), 100);
        if (failed_.load() != 0) throw std::runtime_error(std::to_string(failed_.load()) + " input records failed");
    }

    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    [[nodiscard]] std::uint64_t keys() const noexcept { return keys_; }
    /// Record indexes by partition, in offset order.
    [[nodiscard]] const std::vector<std::vector<std::uint32_t>>& written() const noexcept { return written_; }
    [[nodiscard]] std::vector<std::int64_t> ends() const {
        std::vector<std::int64_t> e;
        for (const auto& w : written_) e.push_back(static_cast<std::int64_t>(w.size()));
        return e;
    }

private:
    std::uint64_t keys_;
    std::vector<std::string> names_;
    std::vector<std::int32_t> part_;
    std::optional<strata::kafka::client> producer_;
    rd_kafka_topic_t* rkt_ = nullptr;
    std::vector<std::vector<std::uint32_t>> written_;
    std::uint64_t count_ = 0;
    std::atomic<std::uint64_t> acked_{0}, failed_{0};
};

/// Reads the committed offsets of the application's group (a consumer with
/// its group.id that never joins).
class committed_reader {
public:
    committed_reader(const std::string& bootstrap, const std::string& group, std::string topic)
        : topic_(std::move(topic)), consumer_([&] {
              strata::kafka::conf c = base_conf(bootstrap);
              c.set("group.id", group);
              c.set("isolation.level", "read_committed");
              c.set("enable.auto.commit", "false");
              return strata::kafka::client(RD_KAFKA_CONSUMER, std::move(c));
          }()) {}

    /// Committed offset per partition (0 where none); empty on an error.
    std::vector<std::int64_t> read() {
        const strata::kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(partitions));
        for (std::int32_t p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(l.get(), topic_.c_str(), p);
        if (rd_kafka_committed(consumer_.get(), l.get(), 10'000) != RD_KAFKA_RESP_ERR_NO_ERROR) return {};
        std::vector<std::int64_t> out;
        for (int i = 0; i < l->cnt; ++i) out.push_back(l->elems[i].offset < 0 ? 0 : l->elems[i].offset);
        return out;
    }

    bool reached(const std::vector<std::int64_t>& ends) {
        const auto c = read();
        if (c.size() != ends.size()) return false;
        for (std::size_t p = 0; p < ends.size(); ++p)
            if (c[p] < ends[p]) return false;
        return true;
    }

private:
    std::string topic_;
    strata::kafka::client consumer_;
};

/// The high watermarks of a topic's partitions.
std::vector<std::int64_t> high_watermarks(const std::string& bootstrap, const std::string& topic, bool committed) {
    strata::kafka::conf c = base_conf(bootstrap);
    c.set("isolation.level", committed ? "read_committed" : "read_uncommitted");
    const strata::kafka::client rk(RD_KAFKA_CONSUMER, std::move(c));
    std::vector<std::int64_t> out;
    for (std::int32_t p = 0; p < partitions; ++p)
        out.push_back(strata::kafka::list_end_offset(rk.get(), topic, p, 30s));
    return out;
}

/// The sum of a topic's end offsets, through one client kept open: how many
/// records were written to it, committed or not (under exactly-once, the
/// transaction markers too: one per partition and commit).
class end_offsets_reader {
public:
    end_offsets_reader(const std::string& bootstrap, std::string topic)
        : topic_(std::move(topic)), rk_(RD_KAFKA_CONSUMER, base_conf(bootstrap)) {}

    std::int64_t total() {
        std::vector<std::pair<std::string, std::int32_t>> all;
        for (std::int32_t p = 0; p < partitions; ++p) all.emplace_back(topic_, p);
        std::int64_t sum = 0;
        for (const std::int64_t end : strata::kafka::list_end_offsets(rk_.get(), all, 10s)) sum += end;
        return sum;
    }

private:
    std::string topic_;
    strata::kafka::client rk_;
};

/// What the output holds, against the input written.
struct output_check {
    std::uint64_t records = 0;       // read committed
    std::uint64_t distinct = 0;      // distinct (input partition, input offset)
    std::uint64_t missing = 0;       // input offsets with no output record
    std::uint64_t duplicates = 0;    // records - distinct
    std::uint64_t foreign = 0;       // offsets beyond the input, or a key that is not the input's at that offset
    std::uint64_t bad_values = 0;    // values that are not 24 bytes
    std::uint64_t wrong_values = 0;  // (count, sum) differing from an uninterrupted run's
    bool stable = true;              // no open transaction was left on the output

    void describe(json& j) const {
        j.put("output_records", records)
            .put("output_distinct", distinct)
            .put("output_missing", missing)
            .put("output_duplicates", duplicates)
            .put("output_foreign", foreign)
            .put("output_bad_values", bad_values)
            .put("output_wrong_values", wrong_values)
            .put("output_stable", stable);
    }
};

std::int64_t be64(const unsigned char* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
    return static_cast<std::int64_t>(v);
}

/// Reads the whole output (read committed, once no transaction is open on
/// it) and checks it against the input.
output_check check_output(const std::string& bootstrap, const std::string& topic, const input_writer& in) {
    output_check r;
    // A killed instance's open transaction holds read-committed readers back
    // until the broker aborts it.
    const auto deadline = steady::now() + 120s;
    for (;;) {
        if (high_watermarks(bootstrap, topic, true) == high_watermarks(bootstrap, topic, false)) break;
        if (steady::now() > deadline) {
            r.stable = false;
            break;
        }
        std::this_thread::sleep_for(500ms);
    }

    const auto& written = in.written();
    const std::uint64_t keys = in.keys();
    // What an uninterrupted run writes for each input offset.
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> expected(partitions);
    {
        std::vector<std::pair<std::int64_t, std::int64_t>> totals(keys);
        for (std::int32_t p = 0; p < partitions; ++p) {
            expected[p].reserve(written[p].size());
            for (const std::uint32_t i : written[p]) {
                auto& t = totals[i % keys];
                t.first += 1;
                t.second += static_cast<std::int64_t>(i % 13) + 1;
                expected[p].push_back(t);
            }
        }
    }
    std::vector<std::vector<std::uint8_t>> seen(partitions);
    for (std::int32_t p = 0; p < partitions; ++p) seen[p].assign(written[p].size(), 0);

    strata::kafka::conf c = base_conf(bootstrap);
    c.set("group.id", "runtime-bench-check-" + std::to_string(::getpid()));
    c.set("enable.auto.commit", "false");
    c.set("isolation.level", "read_committed");
    c.set("enable.partition.eof", "true");
    c.set("auto.offset.reset", "earliest");
    const strata::kafka::client rk(RD_KAFKA_CONSUMER, std::move(c));
    const strata::kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(partitions));
    for (std::int32_t p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    strata::kafka::check(rd_kafka_assign(rk.get(), l.get()), "assign the output");
    std::set<std::int32_t> done;
    const auto read_deadline = steady::now() + 300s;
    while (done.size() < static_cast<std::size_t>(partitions)) {
        if (steady::now() > read_deadline) throw std::runtime_error("reading the output took over 300 s");
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 500);
        if (m == nullptr) continue;
        const std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> owned(m, rd_kafka_message_destroy);
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            done.insert(m->partition);
            continue;
        }
        if (m->err) throw std::runtime_error(std::string("reading the output: ") + rd_kafka_message_errstr(m));
        ++r.records;
        const std::string key(static_cast<const char*>(m->key), m->key_len);
        if (m->len != 24) {
            ++r.bad_values;
            continue;
        }
        const auto* v = static_cast<const unsigned char*>(m->payload);
        const std::int64_t offset = be64(v), count = be64(v + 8), sum = be64(v + 16);
        const std::int32_t p = strata::kafka::default_partition(std::as_bytes(std::span(key.data(), key.size())),
                                                                partitions);
        if (offset < 0 || offset >= static_cast<std::int64_t>(written[p].size()) ||
            key != key_name(written[p][offset] % keys)) {
            ++r.foreign;
            continue;
        }
        auto& s = seen[p][offset];
        if (s < 255) ++s;
        if (expected[p][offset] != std::make_pair(count, sum)) ++r.wrong_values;
    }
    for (std::int32_t p = 0; p < partitions; ++p)
        for (const std::uint8_t s : seen[p]) {
            if (s == 0) ++r.missing;
            else ++r.distinct;
        }
    r.duplicates = r.records - r.distinct - r.foreign - r.bad_values;
    return r;
}

/// A run's topics and folders: made fresh, removed at the end.
struct run_space {
    const system_options& o;
    fs::path work, logs;
    bool keep_topics;

    run_space(const system_options& opts, const args& a)
        : o(opts), work(fs::path(a.need("work")) / opts.application_id), logs(a.str("logs", "")),
          keep_topics(a.num("keep-topics", 0) != 0) {
        fs::remove_all(work);
        fs::create_directories(work);
        if (logs.empty()) logs = work / "logs";
        fs::create_directories(logs);
        create_topics(o.bootstrap, {o.input, o.output});
        if (o.system == "ceiling" && o.ceiling_changelog) {
            strata::kafka::topic_options t;
            t.bootstrap_servers = o.bootstrap;
            t.partitions = partitions;
            t.topic_configs = {{"cleanup.policy", "compact"}};
            (void)strata::kafka::ensure_topic(o.ceiling_changelog_topic(), t);
        }
    }
    ~run_space() {
        std::error_code ec;
        fs::remove_all(work / "state", ec);
        if (!keep_topics) delete_topics(o.bootstrap, {o.input, o.output}, o.application_id + "-");
    }

    /// `run`: a tag for the logs of a second start of the same instance;
    /// `net`: the network namespace it runs in, if any.
    std::unique_ptr<child> start(const std::string& instance, const std::string& run = "",
                                 const test_support::own_network* net = nullptr) {
        const fs::path state = work / "state" / instance;
        fs::create_directories(state);
        const std::string base = o.application_id + "-" + instance + run;
        std::vector<std::string> argv = o.argv(instance, state);
        if (net != nullptr) argv = net->wrap(std::move(argv));
        return std::make_unique<child>(instance, std::move(argv), logs / (base + ".out"), logs / (base + ".err"));
    }
};

/// Ends an instance with SIGTERM; whether it printed `stopped` and exited 0.
bool stop(child& c, std::chrono::seconds timeout = 90s) {
    c.signal(SIGTERM);
    (void)c.wait(timeout);
    const auto ls = c.lines();
    return c.exited_ok() && std::find(ls.begin(), ls.end(), "stopped") != ls.end();
}

// ------------------------------------------------------------ throughput --

void cmd_throughput(const args& a) {
    const system_options o(a);
    const std::uint64_t records = a.num("records", 1'000'000), keys = a.num("keys", 100'000);
    const double timeout_s = a.real("timeout-s", 900);
    json j;
    j.put("command", "throughput");
    o.describe(j);
    j.put("records", records).put("keys", keys).put("partitions", partitions);

    run_space space(o, a);
    input_writer in(o.bootstrap, o.input, keys);
    const auto w0 = steady::now();
    for (std::uint64_t i = 0; i < records; ++i) in.write(i);
    in.flush();
    j.put("prefill_s", since(w0));
    if (high_watermarks(o.bootstrap, o.input, false) != in.ends())
        throw std::runtime_error("the input's end offsets differ from the records written");
    const auto ends = in.ends();
    committed_reader committed(o.bootstrap, o.application_id, o.input);
    (void)committed.read();  // connected and the coordinator known before the clock starts

    // Processed: every input's output record written (the output's end
    // offsets). Committed: every input offset committed, which waits for the
    // next commit after that (up to a commit interval: at 1 s, a quarter of
    // a run of 1M records at 250k/s, so the committed rate of a short run is
    // quantized by it).
    end_offsets_reader outputs(o.bootstrap, o.output);
    auto inst = space.start("solo");
    bool reached = false;
    double processed_s = -1;
    std::int64_t processed_ms = 0;
    while (!(reached = committed.reached(ends))) {
        if (processed_s < 0 && outputs.total() >= static_cast<std::int64_t>(records)) {
            processed_s = since(inst->start());
            processed_ms = wall_ms();
        }
        if (!inst->running()) throw std::runtime_error("the instance ended early: " + inst->how_it_ended());
        if (since(inst->start()) > timeout_s) break;
        std::this_thread::sleep_for(50ms);
    }
    const double elapsed = since(inst->start());
    const std::int64_t end_ms = wall_ms();
    if (processed_s < 0) {  // committed in the same poll
        processed_s = elapsed;
        processed_ms = end_ms;
    }
    const double cpu = inst->cpu_seconds();  // before SIGTERM: the shutdown is not timed
    const double rss = inst->peak_rss_mib();
    const bool stopped = stop(*inst);
    if (!reached) throw std::runtime_error("not every input offset committed within " + std::to_string(timeout_s) + " s");

    // First record processed, from the `started` lines.
    std::int64_t first = -1;
    for (const auto& e : events_of(inst->lines()))
        if (e.kind == "started" && e.num("first_record_ms") > 0)
            first = first < 0 ? e.num("first_record_ms") : std::min(first, e.num("first_record_ms"));
    const double n = static_cast<double>(records);
    j.put("elapsed_s", elapsed)
        .put("records_per_s", n / elapsed)
        .put("cpu_s", cpu)
        .put("cpu_s_per_million", cpu / (n / 1e6))
        .put("peak_rss_mib", rss);
    j.put("processed_s", processed_s).put("processed_records_per_s", n / processed_s);
    if (first > 0) {
        const double startup = static_cast<double>(first - inst->start_ms()) / 1e3;
        j.put("startup_s", startup)
            .put("steady_records_per_s", n / (static_cast<double>(end_ms - first) / 1e3))
            .put("processed_steady_records_per_s", n / (static_cast<double>(processed_ms - first) / 1e3));
    }
    j.put("stopped_cleanly", stopped).put("exit", inst->how_it_ended());
    check_output(o.bootstrap, o.output, in).describe(j);
    j.print();
}

// ------------------------------------------------------------------ scale --

/// One instance (or --instances N, with --standbys) over an input of
/// --partitions P: the time from its start until every task runs, and what
/// each instance holds then (threads, Kafka clients, sockets, memory), so
/// that a run at several P shows how those grow with the partitions.
void cmd_scale(const args& a) {
    const system_options o(a);
    if (!o.strata()) throw std::invalid_argument("scale: --system strata only");
    const std::uint64_t instances = a.num("instances", 1);
    const double timeout_s = a.real("timeout-s", 120), settle_s = a.real("settle-s", 3);
    json j;
    j.put("command", "scale");
    o.describe(j);
    j.put("partitions", partitions).put("instances", instances);

    run_space space(o, a);
    // Records until every partition has a few: a task says it started when
    // it processed its first record.
    input_writer in(o.bootstrap, o.input, 100 * static_cast<std::uint64_t>(partitions));
    const auto fewest = [&] {
        std::size_t n = SIZE_MAX;
        for (const auto& w : in.written()) n = std::min(n, w.size());
        return n;
    };
    for (std::uint64_t i = 0; fewest() < 3; ++i) in.write(i);
    in.flush();

    // Starts the instances and waits until every task processed a record.
    std::vector<std::unique_ptr<child>> cs;
    const auto start_all = [&](const std::string& run) {
        cs.clear();
        for (std::uint64_t i = 0; i < instances; ++i) cs.push_back(space.start("i" + std::to_string(i), run));
        std::set<std::string> tasks;  // that said they started
        const auto started = [&] {
            for (const auto& c : cs)
                for (const auto& e : events_of(c->new_lines()))
                    if (e.kind == "started") tasks.insert(e.text("task"));
            return tasks.size();
        };
        bool all = false;
        while (!(all = started() >= static_cast<std::size_t>(partitions))) {
            for (const auto& c : cs)
                if (!c->running()) throw std::runtime_error("instance " + c->name() + " ended early: " + c->how_it_ended());
            if (since(cs.front()->start()) > timeout_s) break;
            std::this_thread::sleep_for(50ms);
        }
        if (!all)
            throw std::runtime_error(std::to_string(started()) + " of " + std::to_string(partitions) +
                                     " tasks running after " + std::to_string(timeout_s) + " s");
        return since(cs.front()->start());
    };
    double all_running_s = start_all("");
    if (a.num("again", 0) != 0) {
        // The first start made the changelog topics (the broker creates the
        // logs of 1,000 partitions in about 3.5 s on this machine). Start
        // again on them, with no local state, as a new instance would: a
        // record more per partition, so that each task says it started.
        j.put("first_start_s", all_running_s);
        for (const auto& c : cs)
            if (!stop(*c)) throw std::runtime_error("instance " + c->name() + " did not stop cleanly");
        cs.clear();
        std::error_code ec;
        fs::remove_all(space.work / "state", ec);
        const std::size_t had = fewest();
        for (std::uint64_t i = 1'000'000'000; fewest() < had + 3; ++i) in.write(i);
        in.flush();
        all_running_s = start_all("-again");
    }
    j.put("all_running_s", all_running_s);
    // Standbys and restores settle; then what each instance holds.
    std::this_thread::sleep_for(std::chrono::duration<double>(settle_s));
    int max_threads = 0, max_clients = 0, max_sockets = 0;
    double max_rss = 0;
    for (const auto& c : cs) {
        const child::resources r = c->holds();
        max_threads = std::max(max_threads, r.threads);
        max_clients = std::max(max_clients, r.kafka_clients);
        max_sockets = std::max(max_sockets, r.sockets);
        max_rss = std::max(max_rss, r.rss_mib);
    }
    j.put("threads", max_threads).put("kafka_clients", max_clients).put("sockets", max_sockets).put("rss_mib", max_rss);
    bool stopped = true;
    for (const auto& c : cs) stopped = stop(*c) && stopped;
    j.put("stopped_cleanly", stopped);
    j.print();
}

// --------------------------------------------------------------- failover --

/// Writes the input at a steady rate on a thread of its own: record i is due
/// i / rate seconds after the start.
class paced_input {
public:
    paced_input(input_writer& in, double rate) : t0_(steady::now()) {
        thread_ = std::thread([this, &in, rate] {
            try {
                std::uint64_t next = 0;
                while (!stop_.load()) {
                    const auto due = static_cast<std::uint64_t>(since(t0_) * rate);
                    while (next < due) in.write(next++);
                    in.poll();
                    std::this_thread::sleep_for(5ms);
                }
                in.flush();
            } catch (...) {
                error_ = std::current_exception();
            }
        });
    }
    paced_input(const paced_input&) = delete;
    paced_input& operator=(const paced_input&) = delete;
    ~paced_input() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

    [[nodiscard]] steady::time_point started() const noexcept { return t0_; }
    /// What stopped the writing, if anything did.
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }
    /// Stops writing and flushes what was written.
    void finish() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        rethrow();
    }

private:
    steady::time_point t0_;
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;
    std::thread thread_;
};

/// The breakdown of one task's move to a survivor.
struct moved_task {
    std::string task, to;
    std::int64_t noticed_ms = -1, assigned_ms = -1, restored_ms = -1, first_record_ms = -1;
    std::int64_t restored_records = 0;
    std::string noticed_from, assigned_from, restored_from;
    bool from_victim = false;  // the killed instance owned it (else a survivor's task that moved or restarted)

    [[nodiscard]] json to_json(std::int64_t kill_ms) const {
        auto d = [](std::int64_t a, std::int64_t b) { return std::max<std::int64_t>(0, b - a); };
        json j;
        j.put("task", task)
            .put("to", to)
            .put("detection_ms", d(kill_ms, noticed_ms))
            .put("assignment_ms", d(noticed_ms, assigned_ms))
            .put("restore_ms", d(assigned_ms, restored_ms))
            .put("first_record_ms", d(restored_ms, first_record_ms))
            .put("total_ms", d(kill_ms, first_record_ms))
            .put("restored_records", restored_records)
            .put("from_victim", from_victim)
            .put("noticed_from", noticed_from)
            .put("assigned_from", assigned_from)
            .put("restored_from", restored_from)
            .put("at", json()
                           .put("noticed", noticed_ms)
                           .put("assigned", assigned_ms)
                           .put("restored", restored_ms)
                           .put("first_record", first_record_ms));
        return j;
    }
};

/// Who owns each task, from the `started` lines: the instance whose latest
/// started line for the task came last (by first_record_ms).
std::map<std::string, std::string> owners(const std::vector<std::unique_ptr<child>>& cs) {
    std::map<std::string, std::pair<std::int64_t, std::string>> latest;
    for (const auto& c : cs)
        for (const auto& e : events_of(c->lines()))
            if (e.kind == "started") {
                auto& l = latest[e.text("task")];
                if (e.num("first_record_ms") >= l.first) l = {e.num("first_record_ms"), c->name()};
            }
    std::map<std::string, std::string> out;
    for (const auto& [t, l] : latest) out[t] = l.second;
    return out;
}

/// The phases of `task`'s first start on survivor `c` after the kill, from
/// what `c` printed. nullopt if it did not start there. A start counts
/// when it was assigned after the kill, or with `first_record_after`, when
/// its first record came after it: a task the victim had handed over just
/// before the signal (assigned there before it, processing after it) is
/// then measured to that first record, not to a later restart of it.
std::optional<moved_task> phases(const system_options& o, const child& c, const std::string& task,
                                 std::int64_t kill_ms, std::int64_t strata_noticed, bool first_record_after = false) {
    const auto es = events_of(c.lines());
    const event* started = nullptr;
    for (const auto& e : es)
        if (e.kind == "started" && e.text("task") == task &&
            e.num(first_record_after ? "first_record_ms" : "assigned_ms") >= kill_ms) {
            started = &e;
            break;
        }
    if (started == nullptr) return std::nullopt;
    moved_task m;
    m.task = task;
    m.to = c.name();
    m.first_record_ms = started->num("first_record_ms");
    if (o.strata()) {
        // assigned_ms: this instance took the task (it read the leader's
        // assignment); restored_ms: every store caught up with its changelog.
        m.assigned_ms = started->num("assigned_ms");
        m.assigned_from = "started.assigned_ms";
        m.restored_ms = started->num("restored_ms");
        m.restored_from = "started.restored_ms";
        m.restored_records = std::max<std::int64_t>(0, started->num("restored", 0));
        // Noticed: when the leader saw the membership change behind the
        // assignment (the started line's noticed_ms), else the group's first
        // `rebalance` line after the kill (the leader prints it), else the
        // assignment.
        if (const std::int64_t n = started->num("noticed_ms", -1); n >= kill_ms && n <= m.assigned_ms) {
            m.noticed_ms = n;
            m.noticed_from = "started.noticed_ms";
        } else if (strata_noticed >= kill_ms && strata_noticed <= m.assigned_ms) {
            m.noticed_ms = strata_noticed;
            m.noticed_from = "rebalance.at_ms";
        } else {
            m.noticed_ms = m.assigned_ms;
            m.noticed_from = "assigned_ms (no rebalance line)";
        }
        return m;
    }
    // Kafka Streams: the processor's init() (the peer's assigned_ms) comes
    // after the task's restore, so the assignment is taken from the restore
    // listener: onRestoreStart (start_ms) is when the task, created on
    // assignment, has its changelog offsets and begins to restore; onRestoreEnd
    // (end_ms) is when it caught up. Without a restore line for the task (a
    // standby with nothing to catch up may have none), assignment runs until
    // init() and the restore is zero.
    const event* restored = nullptr;
    for (const auto& e : es)
        if (e.kind == "restored" && e.text("task") == task && e.num("start_ms") >= kill_ms &&
            e.num("end_ms") <= m.first_record_ms) {
            restored = &e;
            break;
        }
    if (restored != nullptr) {
        m.assigned_ms = restored->num("start_ms");
        m.assigned_from = "restored.start_ms";
        m.restored_ms = restored->num("end_ms");
        m.restored_from = "restored.end_ms";
        m.restored_records = std::max<std::int64_t>(0, restored->num("records", 0));
    } else {
        m.assigned_ms = m.restored_ms = started->num("assigned_ms");
        m.assigned_from = m.restored_from = "started.assigned_ms (init, no restore line)";
    }
    m.noticed_ms = m.assigned_ms;
    m.noticed_from = "assignment (no state line)";
    for (const auto& e : es)
        if (e.kind == "state" && e.text("to") == "REBALANCING" && e.num("at_ms") >= kill_ms) {
            m.noticed_ms = std::min(e.num("at_ms"), m.assigned_ms);
            m.noticed_from = "state.to=REBALANCING";
            break;
        }
    return m;
}

void cmd_failover(const args& a) {
    const system_options o(a);
    const std::uint64_t keys = a.num("keys", 100'000);
    const double rate = static_cast<double>(a.num("rate", 5000));
    const double duration_s = a.real("duration-s", 40);
    const double kill_after_s = a.real("kill-after-s", 15);
    const double settle_s = a.real("settle-s", 2);
    const double max_wait_s = a.real("max-kill-wait-s", 60);
    const double drain_timeout_s = a.real("drain-timeout-s", 180);
    const int n_instances = static_cast<int>(a.num("instances", 3));
    json j;
    j.put("command", "failover");
    o.describe(j);
    j.put("keys", keys)
        .put("rate", rate)
        .put("duration_s", duration_s)
        .put("kill_after_s", kill_after_s)
        .put("instances", n_instances)
        .put("partitions", partitions);

    run_space space(o, a);
    input_writer in(o.bootstrap, o.input, keys);
    committed_reader committed(o.bootstrap, o.application_id, o.input);
    (void)committed.read();

    paced_input writer(in, rate);
    const auto t0 = writer.started();
    std::vector<std::unique_ptr<child>> cs;
    for (int i = 0; i < n_instances; ++i) cs.push_back(space.start(std::string(1, static_cast<char>('a' + i))));
    auto all_running = [&] {
        for (auto& c : cs)
            if (!c->running()) throw std::runtime_error("instance " + c->name() + " ended: " + c->how_it_ended());
    };

    // Kill after kill_after_s, once every task has started somewhere and no
    // task has started for settle_s (the group is at rest), at most max_wait_s
    // more.
    bool settled = false;
    for (;;) {
        all_running();
        const double t = since(t0);
        if (t >= kill_after_s) {
            std::int64_t last_start = 0;
            for (const auto& c : cs)
                for (const auto& e : events_of(c->lines()))
                    if (e.kind == "started") last_start = std::max(last_start, e.num("first_record_ms"));
            settled = owners(cs).size() == static_cast<std::size_t>(partitions) &&
                      static_cast<double>(wall_ms() - last_start) >= settle_s * 1e3;
            if (settled || t >= kill_after_s + max_wait_s) break;
        }
        std::this_thread::sleep_for(100ms);
    }
    const auto own = owners(cs);
    std::map<std::string, int> per_instance;
    for (const auto& [task, inst] : own) ++per_instance[inst];
    // The victim: the instance owning the most tasks (the first of a, b, c on a tie).
    std::size_t victim = 0;
    for (std::size_t i = 0; i < cs.size(); ++i)
        if (per_instance[cs[i]->name()] > per_instance[cs[victim]->name()]) victim = i;
    std::vector<std::string> victim_tasks;
    for (const auto& [task, inst] : own)
        if (inst == cs[victim]->name()) victim_tasks.push_back(task);
    if (victim_tasks.empty()) throw std::runtime_error("no instance owns a task at the kill");
    const double killed_at_s = since(t0);
    const std::int64_t kill_ms = wall_ms();
    ::kill(cs[victim]->pid(), SIGKILL);
    (void)cs[victim]->wait(30s);
    {
        json owned;
        for (const auto& c : cs) owned.put(c->name(), per_instance[c->name()]);
        j.put("settled", settled).put("killed_at_s", killed_at_s).put("victim", cs[victim]->name()).put("owned", owned);
    }

    // Input until duration_s, then until the group committed all of it.
    while (since(t0) < duration_s) {
        for (std::size_t i = 0; i < cs.size(); ++i)
            if (i != victim && !cs[i]->running())
                throw std::runtime_error("instance " + cs[i]->name() + " ended: " + cs[i]->how_it_ended());
        writer.rethrow();
        std::this_thread::sleep_for(100ms);
    }
    writer.finish();
    const double wrote_s = since(t0);
    j.put("input_records", in.count()).put("input_rate", static_cast<double>(in.count()) / wrote_s);
    const auto ends = in.ends();
    const auto d0 = steady::now();
    bool drained = false;
    while (!(drained = committed.reached(ends)) && since(d0) < drain_timeout_s) {
        for (std::size_t i = 0; i < cs.size(); ++i)
            if (i != victim && !cs[i]->running())
                throw std::runtime_error("instance " + cs[i]->name() + " ended: " + cs[i]->how_it_ended());
        std::this_thread::sleep_for(100ms);
    }
    j.put("drained", drained).put("drain_s", since(d0));
    bool stopped = true;
    for (std::size_t i = 0; i < cs.size(); ++i)
        if (i != victim) stopped = stop(*cs[i]) && stopped;
    j.put("stopped_cleanly", stopped);
    if (!drained) throw std::runtime_error("not every input offset committed within the drain timeout");

    // Every task that started on a survivor after the kill, at its first
    // start there: the victim's, and any other the group moved or restarted.
    std::map<std::string, moved_task> first;
    std::int64_t strata_noticed = -1;  // strata: the first `rebalance` line of any survivor (the leader prints it)
    for (std::size_t i = 0; i < cs.size(); ++i) {
        if (i == victim) continue;
        for (const auto& e : events_of(cs[i]->lines()))
            if (e.kind == "rebalance" && e.num("at_ms") >= kill_ms &&
                (strata_noticed < 0 || e.num("at_ms") < strata_noticed))
                strata_noticed = e.num("at_ms");
    }
    for (std::size_t i = 0; i < cs.size(); ++i) {
        if (i == victim) continue;
        std::set<std::string> tasks;
        for (const auto& e : events_of(cs[i]->lines()))
            if (e.kind == "started" && e.num("assigned_ms") >= kill_ms) tasks.insert(e.text("task"));
        for (const auto& task : tasks) {
            auto m = phases(o, *cs[i], task, kill_ms, strata_noticed);
            if (!m) continue;
            const auto it = first.find(task);
            if (it == first.end() || m->first_record_ms < it->second.first_record_ms) first[task] = *m;
        }
    }
    std::vector<json> moved;
    int others = 0;
    for (auto& [task, m] : first) {
        m.from_victim = std::find(victim_tasks.begin(), victim_tasks.end(), task) != victim_tasks.end();
        if (!m.from_victim) ++others;
        moved.push_back(m.to_json(kill_ms));
    }
    std::vector<std::string> not_restarted;
    for (const auto& t : victim_tasks)
        if (!first.contains(t)) not_restarted.push_back(t);
    std::string nr;
    for (const auto& t : not_restarted) nr += (nr.empty() ? "" : ",") + t;
    j.put("kill_ms", kill_ms).put("moved", moved).put("not_restarted", nr).put("other_starts_after_kill", others);
    check_output(o.bootstrap, o.output, in).describe(j);
    j.print();
}

// ----------------------------------------------------------------- kills --

/// The value at quantile q (0..1) of `v`, nearest rank.
std::int64_t quantile(std::vector<std::int64_t> v, double q) {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

/// Many failovers in one run: n instances over an input written at a steady
/// rate; again and again, once the group is at rest, one instance (a, b, c,
/// a, ... in turn, one with no task skipped) is killed (SIGKILL), stopped
/// (SIGTERM) or cut off from the cluster (partition: every instance runs in
/// a network namespace of its own, see own_network), the driver waits until
/// every task it owned processed a record on another instance, and starts it
/// again (or, cut off, heals its network and lets it rejoin). Per failover:
/// the time from the signal (or the cut) to the last of its tasks processing
/// again, and the phases of that last task. At the end the output is checked
/// as in `failover`.
void cmd_kills(const args& a) {
    const system_options o(a);
    const std::uint64_t keys = a.num("keys", 100'000);
    const double rate = static_cast<double>(a.num("rate", 2000));
    const int kills = static_cast<int>(a.num("kills", 20));
    const std::string how = a.str("how", "kill");
    const double settle_s = a.real("settle-s", 2);
    const double max_wait_s = a.real("max-wait-s", 60);
    const double drain_timeout_s = a.real("drain-timeout-s", 180);
    const int n_instances = static_cast<int>(a.num("instances", 3));
    if (how != "kill" && how != "stop" && how != "partition")
        throw std::runtime_error("--how is kill, stop or partition");
    const std::string proxy = a.str("proxy", RUNTIME_BENCH_PROXY);
    json j;
    j.put("command", "kills");
    o.describe(j);
    j.put("keys", keys).put("rate", rate).put("instances", n_instances).put("partitions", partitions).put("how", how);

    run_space space(o, a);
    input_writer in(o.bootstrap, o.input, keys);
    committed_reader committed(o.bootstrap, o.application_id, o.input);
    (void)committed.read();
    paced_input writer(in, rate);

    std::map<std::string, std::unique_ptr<test_support::own_network>> nets;  // partition: each instance's
    std::vector<std::unique_ptr<child>> cs;
    for (int i = 0; i < n_instances; ++i) {
        const std::string name(1, static_cast<char>('a' + i));
        const test_support::own_network* net = nullptr;
        if (how == "partition")
            net = (nets[name] = std::make_unique<test_support::own_network>(
                       "strata-" + std::to_string(::getpid()) + "-" + name, o.bootstrap, proxy,
                       space.logs / (o.application_id + "-" + name + ".proxy.log")))
                      .get();
        cs.push_back(space.start(name, "", net));
    }
    std::vector<std::unique_ptr<child>> gone;  // the ones killed, kept for their logs
    auto check_running = [&] {
        writer.rethrow();
        for (auto& c : cs)
            if (!c->running()) throw std::runtime_error("instance " + c->name() + " ended: " + c->how_it_ended());
    };
    // At rest: every task runs somewhere and none started for settle_s.
    auto wait_for_rest = [&] {
        const auto w0 = steady::now();
        for (;;) {
            check_running();
            std::int64_t last_start = 0;
            for (const auto& c : cs)
                for (const auto& e : events_of(c->lines()))
                    if (e.kind == "started") last_start = std::max(last_start, e.num("first_record_ms"));
            if (owners(cs).size() == static_cast<std::size_t>(partitions) &&
                static_cast<double>(wall_ms() - last_start) >= settle_s * 1e3)
                return;
            if (since(w0) > 3 * max_wait_s) throw std::runtime_error("the group did not come to rest");
            std::this_thread::sleep_for(100ms);
        }
    };

    std::vector<json> failovers;
    std::vector<std::int64_t> totals, detections;
    int unfinished = 0;
    std::size_t turn = 0;
    for (int k = 0; k < kills; ++k) {
        wait_for_rest();
        const auto own = owners(cs);
        std::size_t victim = turn % cs.size();
        for (std::size_t tries = 0; tries < cs.size(); ++tries, victim = (victim + 1) % cs.size()) {
            const bool owns = std::any_of(own.begin(), own.end(), [&](const auto& e) { return e.second == cs[victim]->name(); });
            if (owns) break;
        }
        turn = victim + 1;
        std::vector<std::string> tasks;
        for (const auto& [task, inst] : own)
            if (inst == cs[victim]->name()) tasks.push_back(task);
        const std::string name = cs[victim]->name();
        const std::int64_t kill_ms = wall_ms();
        if (how == "kill") {
            ::kill(cs[victim]->pid(), SIGKILL);
        } else if (how == "stop") {
            cs[victim]->signal(SIGTERM);
        } else {
            nets.at(name)->cut();
        }
        if (how != "partition") {
            (void)cs[victim]->wait(90s);
            gone.push_back(std::move(cs[victim]));
        }
        std::vector<child*> survivors;
        for (std::size_t i = 0; i < cs.size(); ++i)
            if (i != victim) survivors.push_back(cs[i].get());

        // Until each of its tasks processed a record on a survivor.
        std::map<std::string, moved_task> moved;
        const auto w0 = steady::now();
        while (moved.size() < tasks.size() && since(w0) < max_wait_s) {
            writer.rethrow();
            std::this_thread::sleep_for(20ms);
            for (const std::string& task : tasks) {
                if (moved.contains(task)) continue;
                for (child* c : survivors)
                    if (auto m = phases(o, *c, task, kill_ms, -1, true); m && m->first_record_ms > 0) {
                        const auto it = moved.find(task);
                        if (it == moved.end() || m->first_record_ms < it->second.first_record_ms) moved[task] = *m;
                    }
            }
        }
        json f;
        f.put("victim", name).put("kill_ms", kill_ms).put("tasks", static_cast<int>(tasks.size()));
        if (moved.size() < tasks.size()) {
            ++unfinished;
            f.put("finished", false);
        } else {
            const moved_task* last = nullptr;
            for (const auto& [task, m] : moved)
                if (last == nullptr || m.first_record_ms > last->first_record_ms) last = &m;
            const std::int64_t total = last->first_record_ms - kill_ms;
            totals.push_back(total);
            detections.push_back(std::max<std::int64_t>(0, last->noticed_ms - kill_ms));
            f.put("finished", true).put("total_ms", total).put("last", last->to_json(kill_ms));
        }
        failovers.push_back(f);
        if (how == "partition") nets.at(name)->heal();  // it rejoins with what it kept
        // The same instance id and state directory again; its logs apart
        // (<app>-<instance>-after<k>.out), so every incarnation's are kept.
        else cs[victim] = space.start(name, "-after" + std::to_string(k));
    }

    writer.finish();
    j.put("input_records", in.count());
    const auto ends = in.ends();
    const auto d0 = steady::now();
    bool drained = false;
    while (!(drained = committed.reached(ends)) && since(d0) < drain_timeout_s) {
        check_running();
        std::this_thread::sleep_for(100ms);
    }
    j.put("drained", drained).put("drain_s", since(d0));
    bool stopped = true;
    for (auto& c : cs) stopped = stop(*c) && stopped;
    j.put("stopped_cleanly", stopped);
    j.put("failovers", failovers)
        .put("unfinished", unfinished)
        .put("total_median_ms", quantile(totals, 0.5))
        .put("total_p99_ms", quantile(totals, 0.99))
        .put("total_max_ms", quantile(totals, 1.0))
        .put("detection_median_ms", quantile(detections, 0.5));
    if (!drained) throw std::runtime_error("not every input offset committed within the drain timeout");
    check_output(o.bootstrap, o.output, in).describe(j);
    j.print();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: runtime_bench throughput|failover|kills|scale --system strata|kafka-streams --bootstrap B\n"
                     "         --name PREFIX --work DIR [--logs DIR] [--app PATH] [--peer PATH] [--keep-topics 1]\n"
                     "         [--guarantee at_least_once|exactly_once] [--commit-ms 1000|100]\n"
                     "         [--session-ms 6000] [--transaction-ms 10000] [--cache-bytes 10MiB (Kafka Streams)]\n"
                     "         [--liveness-ms 600 (strata)] [--standby-fetch-ms N (strata: standby_fetch_interval)] [--standby-pacing-from N (strata: standby_pacing_from_partitions)]\n"
                     "         [--threads 1 (processing threads of each instance)]\n"
                     "         [--ceiling-changelog 1 (the ceiling writes the changed keys to a changelog at each commit)]\n"
                     "  throughput [--records 1M] [--keys 100k] [--timeout-s 900]\n"
                     "  failover   [--rate 5000] [--keys 100k] [--duration-s 40] [--kill-after-s 15]\n"
                     "             [--standbys 0] [--instances 3] [--settle-s 2] [--max-kill-wait-s 60]\n"
                     "             [--drain-timeout-s 180]\n"
                     "  kills      [--kills 20] [--how kill|stop|partition] [--rate 2000] [--keys 100k] [--standbys 0]\n"
                     "             [--instances 3] [--settle-s 2] [--max-wait-s 60] [--drain-timeout-s 180]\n"
                     "  scale      [--partitions 6] [--instances 1] [--standbys 0] [--stores 1|10] [--settle-s 3] [--timeout-s 120]\n"
                     "             [--again 1: then stop, wipe the local state and start again on the topics made]\n"
                     "Topics <PREFIX>-input and <PREFIX>-output (6 partitions, or --partitions) are created fresh, application\n"
                     "id <PREFIX>-app; one JSON line on stdout.\n");
        return 2;
    }
    ::signal(SIGPIPE, SIG_IGN);
    try {
        const std::string cmd = argv[1];
        const args a(argc, argv);
        if (cmd == "throughput") cmd_throughput(a);
        else if (cmd == "failover") cmd_failover(a);
        else if (cmd == "kills") cmd_kills(a);
        else if (cmd == "scale") {
            partitions = static_cast<std::int32_t>(a.num("partitions", 6));
            cmd_scale(a);
        }
        else throw std::invalid_argument("unknown command " + cmd);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runtime_bench: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
