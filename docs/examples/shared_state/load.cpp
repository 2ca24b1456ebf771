// Writes agents' reports to the shared-state service's reports topic.
//
//   shared_state_load --bootstrap 127.0.0.1:9092 --count 100000 --agents 20 --objects 10000 [--rate 5000]
//
// --rate caps reports per second (0: as fast as the producer goes); --seed
// makes another stream. Prints how many it wrote and how long it took.

#include "load.hpp"

#include <strata/kafka/admin.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    std::string bootstrap = "127.0.0.1:9092", topic = "reports";
    std::int64_t count = 100'000, rate = 0;
    std::int32_t partitions = 6;
    shared_state::load_options o;
    o.start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            const std::string v = argv[++i];
            if (a == "--bootstrap") bootstrap = v;
            else if (a == "--reports") topic = v;
            else if (a == "--partitions") partitions = std::stoi(v);
            else if (a == "--count") count = std::stoll(v);
            else if (a == "--rate") rate = std::stoll(v);
            else if (a == "--agents") o.agents = std::stoll(v);
            else if (a == "--objects") o.objects = std::stoll(v);
            else if (a == "--seed") o.seed = std::stoull(v);
            else throw std::invalid_argument("unknown option " + a);
        }
        strata::kafka::topic_options t;
        t.bootstrap_servers = bootstrap;
        t.partitions = partitions;
        t.topic_configs = {{"cleanup.policy", "delete"}};
        t.require_compaction = false;
        (void)strata::kafka::ensure_topic(topic, t);

        strata::kafka::producer p(strata::kafka::producer_options{bootstrap, std::nullopt, {{"linger.ms", "5"}}});
        strata::kafka::delivery_tracker& tracker = p.new_tracker();
        const strata::kafka::unique_topic rkt(rd_kafka_topic_new(p.get(), topic.c_str(), nullptr));
        shared_state::report_stream reports(o);
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < count; ++i) {
            if (rate > 0) std::this_thread::sleep_until(start + std::chrono::microseconds(i * 1'000'000 / rate));
            const auto [object, r] = reports.next();
            const std::string value = r.to_json_text();
            const std::int32_t partition = strata::kafka::default_partition(strata::as_bytes(object), partitions);
            p.produce(rkt.get(), partition, strata::as_bytes(object), strata::as_bytes(value), tracker);
        }
        p.wait(tracker);
        if (tracker.has_failed()) throw std::runtime_error(std::to_string(tracker.failed) + " reports were not written: " +
                                                           tracker.first_error_text);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cout << "wrote reports=" << count << " seconds=" << s << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "shared_state_load: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
