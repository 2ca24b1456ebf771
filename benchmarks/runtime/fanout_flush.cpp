// How long librdkafka takes to get one record to each of many partitions
// acknowledged: the floor under a commit of an instance whose tasks all
// start together (each task's first commit writes its changelogs and its
// output partition). No strata runtime: one producer set up as strata's
// (idempotent, acks=all, linger.ms 5), one record of 100 bytes to each
// partition of --topics topics of --partitions partitions, then flush() (or,
// with --transactional, commit_transaction()), --rounds times.
//
//   fanout_flush --bootstrap 127.0.0.1:9092 --topics 11 --partitions 500 --rounds 5
//
// Prints one JSON line: the partitions written per round and the median and
// largest time from the first record's produce() to the flush's return; and
// how long each topic took to be made (CreateTopics, then every partition
// answering ListOffsets, as strata's ensure_topic waits), the floor under a
// new application's first start, whose changelogs are made this way.

#include <strata/kafka/admin.hpp>
#include <strata/kafka/error.hpp>
#include <strata/kafka/handles.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace {

namespace kafka = strata::kafka;
using clock_type = std::chrono::steady_clock;

struct options {
    std::string bootstrap = "127.0.0.1:9092";
    std::string prefix = "fanout";
    int topics = 11;
    int partitions = 500;
    int rounds = 5;
    bool transactional = false;
};

[[noreturn]] void usage(const std::string& why) {
    std::cerr << "fanout_flush: " << why
              << "\nusage: fanout_flush [--bootstrap B] [--prefix P] [--topics T] [--partitions N] [--rounds R] "
                 "[--transactional]\n";
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--bootstrap") o.bootstrap = value();
        else if (a == "--prefix") o.prefix = value();
        else if (a == "--topics") o.topics = std::stoi(value());
        else if (a == "--partitions") o.partitions = std::stoi(value());
        else if (a == "--rounds") o.rounds = std::stoi(value());
        else if (a == "--transactional") o.transactional = true;
        else usage("unknown option " + std::string(a));
    }
    if (o.topics < 1 || o.partitions < 1 || o.rounds < 1) usage("--topics, --partitions and --rounds must be >= 1");
    return o;
}

}  // namespace

int main(int argc, char** argv) try {
    const options o = parse(argc, argv);
    std::vector<std::string> topics;
    std::vector<double> create_ms;
    for (int t = 0; t < o.topics; ++t) {
        const auto made = clock_type::now();
        topics.push_back(o.prefix + "-" + std::to_string(t));
        kafka::topic_options to;
        to.bootstrap_servers = o.bootstrap;
        to.partitions = o.partitions;
        to.timeout = std::chrono::minutes(2);
        if (kafka::ensure_topic(topics.back(), to) == kafka::topic_status::created)
            create_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - made).count());
    }
    std::sort(create_ms.begin(), create_ms.end());
    const double create_median = create_ms.empty() ? 0.0 : create_ms[create_ms.size() / 2];

    kafka::conf c;
    c.set("bootstrap.servers", o.bootstrap)
        .set("linger.ms", "5")
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("message.timeout.ms", "60000");
    if (o.transactional) c.set("transactional.id", o.prefix + "-txn").set("transaction.timeout.ms", "60000");
    const kafka::client producer(RD_KAFKA_PRODUCER, std::move(c));
    rd_kafka_t* rk = producer.get();
    if (o.transactional) kafka::check(rd_kafka_init_transactions(rk, 60'000), "init_transactions");

    const std::string payload(100, 'x');
    std::vector<double> ms;
    // Round 0 warms up: metadata of every partition, connections.
    for (int round = 0; round <= o.rounds; ++round) {
        if (o.transactional) kafka::check(rd_kafka_begin_transaction(rk), "begin_transaction");
        const auto start = clock_type::now();
        for (const std::string& topic : topics)
            for (int p = 0; p < o.partitions; ++p) {
                const std::string key = "k" + std::to_string(p);
                for (;;) {
                    const rd_kafka_resp_err_t e = rd_kafka_producev(
                        rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p),
                        RD_KAFKA_V_KEY(key.data(), key.size()),
                        RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
                    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) throw kafka::error("produce", e);
                    rd_kafka_poll(rk, 10);
                }
            }
        if (o.transactional) kafka::check(rd_kafka_commit_transaction(rk, 120'000), "commit_transaction");
        else kafka::check(rd_kafka_flush(rk, 120'000), "flush");
        const double took = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
        if (round > 0) ms.push_back(took);
    }

    std::sort(ms.begin(), ms.end());
    std::printf("{\"command\":\"fanout_flush\",\"topics\":%d,\"partitions_per_topic\":%d,\"partitions\":%d,"
                "\"transactional\":%s,\"rounds\":%d,\"median_ms\":%.1f,\"max_ms\":%.1f,\"min_ms\":%.1f,"
                "\"topics_created\":%zu,\"create_topic_median_ms\":%.1f,\"create_ms_per_partition\":%.2f}\n",
                o.topics, o.partitions, o.topics * o.partitions, o.transactional ? "true" : "false", o.rounds,
                ms[ms.size() / 2], ms.back(), ms.front(), create_ms.size(), create_median,
                create_median / o.partitions);
    return 0;
} catch (const std::exception& e) {
    std::cerr << "fanout_flush: " << e.what() << "\n";
    return 1;
}
