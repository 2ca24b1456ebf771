// What an instance holds does not grow with its tasks x stores: two
// instances in this process, each task with four logged stores and a standby
// on the other instance, hold as many Kafka clients (librdkafka handles,
// one "rdk:main" thread each) and as many threads over 256 partitions as
// over 4. Before the instance's changelog reader, every store of every task
// and standby had a consumer of its own (docs/benchmarks-runtime.md,
// "Scale": 1,031 clients at 1,024 partitions with one store a task).

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

using namespace runtime_test;

namespace {

/// The threads of this process, and those that are a librdkafka handle's main thread.
struct holdings {
    int threads = 0;
    int kafka_clients = 0;
};

holdings held_now() {
    holdings h;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        ++h.threads;
        std::ifstream comm(e.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name == "rdk:main") ++h.kafka_clients;
    }
    return h;
}

strata::runtime::application_options config(const std::string& app, const std::string& input, const std::string& id,
                                           const test_support::temp_dir& dir) {
    strata::runtime::application_options c;
    c.application_id = app;
    c.bootstrap_servers = kafka_test::bootstrap();
    c.input_topics = {input};
    c.state_dir = dir / ("state-" + id);
    c.instance_id = id;
    c.commit_interval = std::chrono::milliseconds(200);
    c.session_timeout = std::chrono::milliseconds(6000);
    c.standby_replicas = 1;
    return c;
}

/// Two instances over `partitions`, four logged stores a task, each task
/// with a standby; what the process holds once every task ran a record and
/// every standby caught up, less what it held before they started.
holdings held_by_two_instances(std::int32_t partitions) {
    test_support::temp_dir dir;
    const std::string app_id = kafka_test::unique_name("footprint");
    const std::string input = kafka_test::make_topic("footprint-in", partitions, {{"cleanup.policy", "delete"}});
    input_writer in(input, partitions);
    for (std::int64_t i = 0; i < 20 * partitions; ++i) in.write(i, 10 * partitions);
    in.flush();

    auto seen = std::make_shared<std::vector<std::atomic<int>>>(static_cast<std::size_t>(partitions));
    const auto factory = [](strata::runtime::task_context& t) {
        using kv = strata::hash_map_store<std::string, std::int64_t>;
        return std::make_tuple(kv("first") | t.logged(), kv("second") | t.logged(), kv("third") | t.logged(),
                               kv("fourth") | t.logged());
    };
    const auto processor = [seen](auto& ctx, const auto& r) {
        auto& [first, second, third, fourth] = ctx.stores();
        const std::int64_t v = r.value.value_or(0);
        first.put(r.key, v);
        second.put(r.key, v + 1);
        third.put(r.key, v + 2);
        fourth.put(r.key, v + 3);
        (*seen)[static_cast<std::size_t>(ctx.partition())].fetch_add(1);
    };
    const holdings before = held_now();
    auto a = strata::runtime::make_application<std::string, std::int64_t>(config(app_id, input, "a", dir), factory,
                                                                          processor);
    auto b = strata::runtime::make_application<std::string, std::int64_t>(config(app_id, input, "b", dir), factory,
                                                                          processor);
    auto ran_a = std::async(std::launch::async, [&] { a.run(); });
    auto ran_b = std::async(std::launch::async, [&] { b.run(); });
    const auto settled = [&] {
        for (const auto& n : *seen)
            if (n.load() == 0) return false;
        int standbys = 0;
        for (const auto* app : {&a, &b})
            for (const strata::runtime::task_info& t : app->local_tasks()) {
                if (t.state != strata::runtime::task_state::standby) continue;
                if (t.standby_lag != 0) return false;
                ++standbys;
            }
        return standbys == partitions;
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (!settled() && std::chrono::steady_clock::now() < until) {
        REQUIRE(ran_a.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
        REQUIRE(ran_b.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(settled());
    std::this_thread::sleep_for(std::chrono::seconds(1));  // restores and standbys settle
    const holdings during = held_now();
    a.stop();
    b.stop();
    ran_a.get();
    ran_b.get();
    const holdings h{during.threads - before.threads, during.kafka_clients - before.kafka_clients};
    std::printf("footprint: %d partitions x 4 stores, two instances with a standby of each task: %d threads, "
                "%d Kafka clients\n",
                partitions, h.threads, h.kafka_clients);
    return h;
}

}  // namespace

TEST_CASE("runtime: an instance's Kafka clients and threads do not grow with its tasks and stores",
          "[kafka][runtime][scale]") {
    const holdings few = held_by_two_instances(4);
    const holdings many = held_by_two_instances(256);
    CHECK(few.kafka_clients > 0);
    CHECK(many.kafka_clients == few.kafka_clients);
    CHECK(many.threads == few.threads);
}
