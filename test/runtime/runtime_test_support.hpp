#pragma once
// What the runtime tests share: instances of test/runtime/app as child
// processes, input written key by key into the partition Kafka's Java
// producer would pick, output and committed offsets read back, and the
// output a single uninterrupted run would produce, to compare against.

#include "app/aggregate.hpp"
#include "kafka/kafka_test_support.hpp"

#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/serde/encode.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace runtime_test {

using namespace std::chrono_literals;

/// One input record as the test wrote it.
struct input {
    std::string key;
    std::int64_t amount;
};

/// Input records by partition, in offset order.
using partitioned_input = std::vector<std::vector<input>>;

inline std::string key_of(std::int64_t i, int keys) { return "k" + std::to_string(i % keys); }
inline std::int64_t amount_of(std::int64_t i) { return i % 13 + 1; }

inline std::int32_t partition_of(const std::string& key, std::int32_t partitions) {
    return strata::kafka::default_partition(strata::as_bytes(key), partitions);
}

/// Writes input records to a topic, each to the partition of its key.
class input_writer {
public:
    input_writer(std::string topic, std::int32_t partitions)
        : topic_(std::move(topic)), partitions_(partitions),
          producer_(strata::kafka::producer_options{kafka_test::bootstrap(), std::nullopt,
                                                     // Idempotent: a retry after a broker fault neither
                                                     // repeats nor reorders an input (the tests know
                                                     // each input by its offset).
                                                     {{"linger.ms", "2"}, {"enable.idempotence", "true"}}}),
          tracker_(&producer_.new_tracker()), rkt_(rd_kafka_topic_new(producer_.get(), topic_.c_str(), nullptr)),
          written_(static_cast<std::size_t>(partitions)) {}

    /// Writes record i (key k<i % keys>, amount amount_of(i)), or `raw_value` as its value bytes.
    void write(std::int64_t i, int keys, std::optional<std::string> raw_value = std::nullopt) {
        const std::string key = key_of(i, keys);
        const std::int32_t p = partition_of(key, partitions_);
        const strata::byte_buffer value = raw_value ? strata::byte_buffer(strata::as_bytes(*raw_value).begin(),
                                                                          strata::as_bytes(*raw_value).end())
                                                    : strata::encode(amount_of(i));
        producer_.produce(rkt_.get(), p, strata::as_bytes(key), strata::bytes_view(value), *tracker_);
        written_[static_cast<std::size_t>(p)].push_back({key, raw_value ? -1 : amount_of(i)});
    }

    void flush() {
        producer_.wait(*tracker_);
        REQUIRE_FALSE(tracker_->has_failed());
    }

    [[nodiscard]] const partitioned_input& written() const noexcept { return written_; }

private:
    std::string topic_;
    std::int32_t partitions_;
    strata::kafka::producer producer_;
    strata::kafka::delivery_tracker* tracker_;
    strata::kafka::unique_topic rkt_;
    partitioned_input written_;
};

/// What the output of partition p must be after a run without failures:
/// one update per input (skipping inputs whose amount is -1, the poison ones).
inline std::vector<std::pair<std::string, update>> expected_output(const std::vector<input>& in) {
    std::map<std::string, totals> t;
    std::vector<std::pair<std::string, update>> out;
    for (std::size_t offset = 0; offset < in.size(); ++offset) {
        if (in[offset].amount < 0) continue;
        totals& now = t[in[offset].key];
        now.count += 1;
        now.sum += in[offset].amount;
        out.emplace_back(in[offset].key, update{static_cast<std::int64_t>(offset), now.count, now.sum});
    }
    return out;
}

/// Whether a transaction is open on a partition: its last stable offset
/// (what a read-committed reader sees) is below its high watermark.
class open_transactions {
public:
    open_transactions() : committed_(handle(true)), uncommitted_(handle(false)) {}

    [[nodiscard]] bool any(const std::string& topic, std::int32_t partition) const {
        return strata::kafka::list_end_offset(committed_.get(), topic, partition, 10s) !=
               strata::kafka::list_end_offset(uncommitted_.get(), topic, partition, 10s);
    }

private:
    static strata::kafka::client handle(bool committed) {
        strata::kafka::conf c;
        c.set("bootstrap.servers", kafka_test::bootstrap());
        c.set("isolation.level", committed ? "read_committed" : "read_uncommitted");
        return strata::kafka::client(RD_KAFKA_CONSUMER, std::move(c));
    }

    strata::kafka::client committed_, uncommitted_;
};

/// Waits until no transaction is open on a partition: a killed instance
/// leaves its last transaction open until the broker aborts it, and a
/// read-committed reader stops before it until then.
inline void await_stable(const std::string& topic, std::int32_t partition, std::chrono::seconds timeout = 60s) {
    const open_transactions open;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (open.any(topic, partition)) {
        if (std::chrono::steady_clock::now() > deadline)
            FAIL(topic << "[" << partition << "] still has an open transaction after " << timeout.count() << " s");
        std::this_thread::sleep_for(200ms);
    }
}

/// Every record of one partition of a topic, read committed, once no
/// transaction is open on it.
inline std::vector<std::pair<std::string, strata::byte_buffer>> read_partition(const std::string& topic,
                                                                              std::int32_t partition) {
    await_stable(topic, partition);
    strata::kafka::changelog log(kafka_test::log_options(topic, partition));
    std::vector<std::pair<std::string, strata::byte_buffer>> out;
    for (const strata::record_view r : log.replay(0))
        out.emplace_back(std::string(strata::as_chars(r.key)),
                         r.value ? strata::byte_buffer(r.value->begin(), r.value->end()) : strata::byte_buffer{});
    return out;
}

inline std::vector<std::pair<std::string, update>> read_output(const std::string& topic, std::int32_t partition) {
    std::vector<std::pair<std::string, update>> out;
    for (const auto& [k, v] : read_partition(topic, partition)) out.emplace_back(k, strata::decode<update>(v));
    return out;
}

/// Exactly-once: every partition's output equals, record for record, what
/// one uninterrupted run over the input produces.
inline void require_output_of_an_uninterrupted_run(const std::string& output, const partitioned_input& written) {
    for (std::size_t p = 0; p < written.size(); ++p) {
        INFO("partition " << p);
        const auto expected = expected_output(written[p]);
        const auto actual = read_output(output, static_cast<std::int32_t>(p));
        REQUIRE(actual.size() == expected.size());
        for (std::size_t k = 0; k < expected.size(); ++k) {
            INFO("output record " << k);
            REQUIRE(actual[k].first == expected[k].first);
            REQUIRE(actual[k].second == expected[k].second);
        }
    }
}

/// At-least-once: every input record has an output record (an output names
/// the offset of its input, which must hold the same key); duplicates are
/// allowed. Returns how many outputs there were.
inline std::size_t require_every_input_has_output(const std::string& output, const partitioned_input& written) {
    std::size_t outputs = 0;
    for (std::size_t p = 0; p < written.size(); ++p) {
        INFO("partition " << p);
        const auto& in = written[p];
        std::vector<int> seen(in.size(), 0);
        for (const auto& [key, u] : read_output(output, static_cast<std::int32_t>(p))) {
            REQUIRE(u.input_offset >= 0);
            REQUIRE(static_cast<std::size_t>(u.input_offset) < in.size());
            REQUIRE(key == in[static_cast<std::size_t>(u.input_offset)].key);
            ++seen[static_cast<std::size_t>(u.input_offset)];
            ++outputs;
        }
        for (std::size_t offset = 0; offset < in.size(); ++offset) {
            INFO("input offset " << offset);
            if (in[offset].amount >= 0) REQUIRE(seen[offset] >= 1);  // a poison record (-1) has none
        }
    }
    return outputs;
}

/// At-least-once: a key's count only grows in the totals changelog
/// (processed again after a failover, it grows twice); a lower count after
/// a higher one is a write of an instance that should no longer write (a
/// zombie), interleaved with its successor's. Each is a failed check.
struct changelog_counts {
    std::size_t records = 0;    ///< read
    std::size_t went_back = 0;  ///< counts lower than the key's count before
};
inline changelog_counts check_changelog_counts_never_go_back(const std::string& app, std::int32_t partitions) {
    changelog_counts c;
    for (std::int32_t p = 0; p < partitions; ++p) {
        std::map<std::string, std::int64_t> last;
        for (const auto& [key, value] : read_partition(app + "-totals-changelog", p)) {
            const auto t = strata::decode<totals>(strata::bytes_view(value));
            INFO("changelog partition " << p << ", key " << key << ": count " << t.count << " after " << last[key]);
            CHECK(t.count >= last[key]);
            if (t.count < last[key]) ++c.went_back;
            last[key] = t.count;
            ++c.records;
        }
    }
    return c;
}

/// The group's committed offset of each partition of `topic` (0 where none).
inline std::vector<std::int64_t> committed(const std::string& group, const std::string& topic,
                                           std::int32_t partitions) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", kafka_test::bootstrap());
    c.set("group.id", group);
    c.set("isolation.level", "read_committed");
    const strata::kafka::client consumer(RD_KAFKA_CONSUMER, std::move(c));
    const strata::kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(partitions));
    for (std::int32_t p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), p);
    // The group's coordinator may be moving (a broker of the test's cluster
    // just started or died): asked again then, as librdkafka does not.
    strata::kafka::detail::retry_while_transient(std::chrono::steady_clock::now() + 30s, [&] {
        strata::kafka::check(rd_kafka_committed(consumer.get(), l.get(), 30'000), "read committed offsets");
    });
    std::vector<std::int64_t> out;
    for (int i = 0; i < l->cnt; ++i) out.push_back(l->elems[i].offset < 0 ? 0 : l->elems[i].offset);
    return out;
}

/// Waits until the group has committed every input record written, or
/// `alive()` says the instances that should commit are gone.
inline bool await_committed(const std::string& group, const std::string& topic, const partitioned_input& written,
                            std::chrono::seconds timeout, const std::function<bool()>& alive = [] { return true; }) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const auto partitions = static_cast<std::int32_t>(written.size());
    for (;;) {
        const std::vector<std::int64_t> c = committed(group, topic, partitions);
        bool all = true;
        for (std::size_t p = 0; p < written.size(); ++p) all = all && c[p] >= static_cast<std::int64_t>(written[p].size());
        if (all) return true;
        if (std::chrono::steady_clock::now() > deadline || !alive()) return false;
        std::this_thread::sleep_for(200ms);
    }
}

/// Waits until `app` knows `instances` members, each with an endpoint, that
/// together run every partition, each running one at least when there are
/// enough partitions. A member that has joined but holds nothing yet is
/// listed too: until the next assignment the others still run everything.
template <class App>
bool await_metadata(const App& app, std::size_t instances, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (const auto md = app.metadata(); md && md->instances().size() == instances) {
            const bool each_runs_one = static_cast<std::size_t>(md->partitions()) >= instances;
            std::size_t active = 0;
            bool endpoints = true, balanced = true;
            for (const auto& i : md->instances()) {
                active += i.active.size();
                endpoints = endpoints && !i.endpoint.empty();
                balanced = balanced && (!each_runs_one || !i.active.empty());
            }
            if (active == static_cast<std::size_t>(md->partitions()) && endpoints && balanced) return true;
        }
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

/// Runs app.run() on a thread; `stop` stops it and hands back what it threw.
template <class App>
class running {
public:
    explicit running(App& app) : app_(&app), done_(std::async(std::launch::async, [&app] { app.run(); })) {}
    ~running() {
        app_->stop();
        if (done_.valid()) done_.wait();
    }
    void stop() {
        app_->stop();
        done_.get();  // rethrows what run() threw
    }
    /// Waits for run() to end by itself (it failed); what it threw.
    std::exception_ptr failure(std::chrono::seconds timeout) {
        if (done_.wait_for(timeout) != std::future_status::ready) return nullptr;
        try {
            done_.get();
        } catch (...) {
            return std::current_exception();
        }
        return nullptr;
    }

private:
    App* app_;
    std::future<void> done_;
};

/// The test application: STRATA_AGGREGATE_APP in the environment, or the
/// one built with the tests. scripts/chaos-runtime.sh runs copies of both, so
/// that the tree can be rebuilt during its hours.
inline std::string aggregate_app() {
    const char* path = std::getenv("STRATA_AGGREGATE_APP");
    return path != nullptr && *path != '\0' ? path : STRATA_AGGREGATE_APP;
}

/// One instance of the test application, as a child process whose stdout
/// goes to a file.
class instance_process {
public:
    instance_process(std::vector<std::string> args, std::filesystem::path log)
        : instance_process(aggregate_app(), std::move(args), std::move(log)) {}

    /// Runs `program` with `args`.
    instance_process(const std::string& program, std::vector<std::string> args, std::filesystem::path log)
        : log_(std::move(log)) {
        args.insert(args.begin(), program);
        // Everything the child needs is made before fork: other threads of
        // this process (librdkafka's) may hold the allocator's lock.
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const std::string path = log_.string();
        // STRATA_TEST_CORES=1: a child that crashes leaves a core (where
        // kernel.core_pattern says), for a crash the log does not explain.
        const bool cores = std::getenv("STRATA_TEST_CORES") != nullptr;
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0) ::_exit(127);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            if (cores) {
                const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
                (void)::setrlimit(RLIMIT_CORE, &unlimited);
            }
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
    }
    instance_process(const instance_process&) = delete;
    instance_process& operator=(const instance_process&) = delete;
    ~instance_process() {
        if (running()) {
            ::kill(pid_, SIGKILL);
            (void)wait();
        }
    }

    /// Whether the process has not ended (reaps it if it has).
    [[nodiscard]] bool running() {
        if (pid_ <= 0 || status_) return false;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) != pid_) return true;
        status_ = status;
        return false;
    }

    void kill(int signal) { REQUIRE(::kill(pid_, signal) == 0); }

    /// "running", or how it ended: its exit code or the signal that ended it.
    [[nodiscard]] std::string how_it_ended() {
        if (running()) return "running";
        if (!status_) return "not started";
        if (WIFSIGNALED(*status_))
            return std::string("ended by signal ") + std::to_string(WTERMSIG(*status_)) + " (" +
                   ::strsignal(WTERMSIG(*status_)) + ")" + (WCOREDUMP(*status_) ? ", core dumped" : "");
        return "exited with " + std::to_string(WEXITSTATUS(*status_));
    }

    /// Waits for the process to end; its wait status.
    int wait(std::chrono::seconds timeout = 60s) {
        if (status_) return *status_;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int status = 0;
        for (;;) {
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) break;
            if (std::chrono::steady_clock::now() > deadline) {
                dump_stacks();
                if (status_) return *status_;  // it ended meanwhile
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(20ms);
        }
        status_ = status;
        return status;
    }

    /// The lines it printed so far.
    [[nodiscard]] std::vector<std::string> lines() const {
        std::ifstream in(log_);
        std::vector<std::string> out;
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
    [[nodiscard]] std::string output() const {
        std::ostringstream s;
        for (const auto& l : lines()) s << l << "\n";
        return s.str();
    }

    /// Appends every thread's stack to the log (when gdb is there and the
    /// process runs), so that a process that did not end, or did not get
    /// on, in time says where it was.
    void dump_stacks() {
        if (!running()) return;
        const std::string cmd = "command -v gdb >/dev/null && { echo '--- stacks of a process that did not end in time "
                                "---'; gdb -batch -p " +
                                std::to_string(pid_) + " -ex 'thread apply all bt' 2>&1; } >> '" + log_.string() +
                                "' 2>&1";
        (void)std::system(cmd.c_str());
    }

private:
    std::filesystem::path log_;
    pid_t pid_ = -1;
    std::optional<int> status_;
};

/// The text after `name=` in a line like "restored task=3 records=10", up to the next space.
inline std::string text_field(const std::string& line, const std::string& name) {
    const auto at = line.find(" " + name + "=");
    if (at == std::string::npos) return {};
    const auto from = at + name.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
}

/// The number after `name=`, -1 when there is none.
inline std::int64_t field(const std::string& line, const std::string& name) {
    const std::string t = text_field(line, name);
    return t.empty() || t == "-" ? -1 : std::stoll(t);
}

/// One `restored task=...` line of the test app.
struct restore_line {
    std::int64_t task, records, from, to;
};

/// The restores an instance reported so far.
inline std::vector<restore_line> restores(const instance_process& p) {
    std::vector<restore_line> out;
    for (const auto& l : p.lines())
        if (l.rfind("restored task=", 0) == 0)
            out.push_back({field(l, "task"), field(l, "records"), field(l, "from"), field(l, "to")});
    return out;
}

}  // namespace runtime_test
