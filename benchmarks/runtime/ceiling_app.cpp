// The ceiling of the runtime benchmark's topology on this machine and
// broker: the same input, the same per-key totals and the same output
// records, done by a plain librdkafka program with the totals in a
// std::unordered_map: no changelog, no cache, no coordination, no restore.
// What strata's runtime costs is the distance between this and strata.
//
// Usage: ceiling_app --bootstrap B --app ID --input T --output T [--commit-ms N] [--threads N]
//                    [--changelog TOPIC]
// (other options of aggregate_app are accepted and ignored). Runs until
// SIGTERM; commits like at-least-once: outputs acknowledged, then offsets.
// With --threads N, N such loops run side by side, each with a consumer (in
// the same group, so they split the partitions) and a producer of its own,
// as strata's processing threads do. With --changelog, each commit also
// writes every key changed since the last one (its count and sum) to
// partition p of TOPIC, p the input partition, before the outputs are waited
// for: what a logged store behind a cache writes, and nothing else of
// strata's (no store, no coordination, no restore).

#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace {

std::atomic<bool> stop{false};
extern "C" void on_signal(int) { stop = true; }

std::int64_t read_be64(const void* p) {
    std::uint64_t v = 0;
    const auto* b = static_cast<const unsigned char*>(p);
    for (int i = 0; i < 8; ++i) v = (v << 8) | b[i];
    return static_cast<std::int64_t>(v);
}
void write_be64(unsigned char* out, std::int64_t x) {
    auto v = static_cast<std::uint64_t>(x);
    for (int i = 7; i >= 0; --i) {
        out[i] = static_cast<unsigned char>(v & 0xff);
        v >>= 8;
    }
}

std::atomic<bool> started{false};

/// One consume-process-produce loop, with its own consumer and producer, until SIGTERM.
void run_loop(const std::string& bootstrap, const std::string& app, const std::string& input, const std::string& output,
              const std::string& changelog, std::chrono::milliseconds commit_every) {
    strata::kafka::conf cc;
    cc.set("bootstrap.servers", bootstrap);
    cc.set("group.id", app);
    cc.set("enable.auto.commit", "false");
    cc.set("auto.offset.reset", "earliest");
    strata::kafka::client consumer(RD_KAFKA_CONSUMER, std::move(cc));
    consumer.close_consumer_on_destroy();
    rd_kafka_poll_set_consumer(consumer.get());
    const strata::kafka::unique_partition_list topics = strata::kafka::one_partition(input, RD_KAFKA_PARTITION_UA);
    strata::kafka::check(rd_kafka_subscribe(consumer.get(), topics.get()), "subscribe");

    strata::kafka::conf pc;
    pc.set("bootstrap.servers", bootstrap);
    pc.set("enable.idempotence", "true");
    pc.set("linger.ms", "5");
    strata::kafka::client producer(RD_KAFKA_PRODUCER, std::move(pc));
    rd_kafka_topic_conf_t* tc = rd_kafka_topic_conf_new();
    std::array<char, 256> err{};
    rd_kafka_topic_conf_set(tc, "partitioner", "murmur2_random", err.data(), err.size());
    const strata::kafka::unique_topic out(rd_kafka_topic_new(producer.get(), output.c_str(), tc));
    const strata::kafka::unique_topic log(changelog.empty() ? nullptr
                                                            : rd_kafka_topic_new(producer.get(), changelog.c_str(), nullptr));
    std::unordered_map<std::string, std::int32_t> dirty;  // key -> its input partition, since the last commit

    std::unordered_map<std::string, std::array<std::int64_t, 2>> totals;
    std::map<std::int32_t, std::int64_t> next;  // partition -> next offset
    auto next_commit = std::chrono::steady_clock::now() + commit_every;
    const auto commit = [&] {
        if (next.empty()) return;
        for (const auto& [key, p] : dirty) {
            const auto& t = totals[key];
            unsigned char value[16];
            write_be64(value, t[0]);
            write_be64(value + 8, t[1]);
            while (rd_kafka_produce(log.get(), p, RD_KAFKA_MSG_F_COPY, value, sizeof value, key.data(), key.size(),
                                    nullptr) != 0)
                rd_kafka_poll(producer.get(), 10);
        }
        dirty.clear();
        while (rd_kafka_outq_len(producer.get()) > 0) rd_kafka_flush(producer.get(), 100);
        const strata::kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(static_cast<int>(next.size())));
        for (const auto& [p, o] : next) rd_kafka_topic_partition_list_add(l.get(), input.c_str(), p)->offset = o;
        (void)rd_kafka_commit(consumer.get(), l.get(), 0);
    };
    while (!stop) {
        for (int n = 0; n < 1000; ++n) {
            const strata::kafka::unique_message m(rd_kafka_consumer_poll(consumer.get(), n == 0 ? 10 : 0));
            if (!m) break;
            if (m->err) continue;
            if (!started.exchange(true)) {  // the driver's start-up measure
                std::printf("started task=%d first_record_ms=%lld\n", m->partition,
                            static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                       std::chrono::system_clock::now().time_since_epoch())
                                                       .count()));
                std::fflush(stdout);
            }
            auto& t = totals[std::string(static_cast<const char*>(m->key), m->key_len)];
            t[0] += 1;
            t[1] += m->len == 8 ? read_be64(m->payload) : 0;
            unsigned char value[24];
            write_be64(value, m->offset);
            write_be64(value + 8, t[0]);
            write_be64(value + 16, t[1]);
            while (rd_kafka_produce(out.get(), RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, value, sizeof value, m->key,
                                    m->key_len, nullptr) != 0)
                rd_kafka_poll(producer.get(), 10);
            next[m->partition] = m->offset + 1;
            if (log) dirty.emplace(std::string(static_cast<const char*>(m->key), m->key_len), m->partition);
        }
        rd_kafka_poll(producer.get(), 0);
        if (std::chrono::steady_clock::now() >= next_commit) {
            commit();
            next_commit = std::chrono::steady_clock::now() + commit_every;
        }
    }
    commit();
}

}  // namespace

int main(int argc, char** argv) {
    std::map<std::string, std::string> opt;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strncmp(argv[i], "--", 2) != 0 || std::strncmp(argv[i + 1], "--", 2) == 0) continue;
        const std::string name = argv[i] + 2;
        opt[name] = argv[++i];
    }
    const std::string bootstrap = opt["bootstrap"], app = opt["app"], input = opt["input"], output = opt["output"];
    const auto commit_every = std::chrono::milliseconds(std::stoll(opt.count("commit-ms") ? opt["commit-ms"] : "1000"));
    const int threads = std::stoi(opt.count("threads") ? opt["threads"] : "1");
    const std::string changelog = opt.count("changelog") ? opt["changelog"] : "";
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    std::atomic<int> failed{0};
    const auto loop = [&] {
        try {
            run_loop(bootstrap, app, input, output, changelog, commit_every);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "ceiling_app failed: %s\n", e.what());
            ++failed;
            stop = true;
        }
    };
    std::vector<std::thread> others;
    for (int k = 1; k < threads; ++k) others.emplace_back(loop);
    loop();
    for (std::thread& t : others) t.join();
    if (failed.load() > 0) return 2;
    std::printf("stopped\n");
    return 0;
}
