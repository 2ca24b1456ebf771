// One instance of the topology tests' application, run as a process so
// that a test can kill it: agents' reports (key: agent, value: amount) are
// re-keyed by the object voted on (`object-<amount % 5>`) through the
// repartition topic `<app>-by-object-repartition`, and counted per object;
// each new count goes to the output topic. Exactly-once.
//
// Usage: topology_app --bootstrap B --app ID --input T --output T --state DIR --instance NAME
//          [--purge-ms N]
// It prints "stopped" after a clean stop (SIGTERM).

#include <strata/decorators/all.hpp>
#include <strata/runtime/topology.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

namespace {

std::function<void()> stop_topology;
volatile std::sig_atomic_t stop_before_run = 0;
void on_signal(int) {
    if (stop_topology) stop_topology();
    else stop_before_run = 1;
}

std::map<std::string, std::string> parse(int argc, char** argv) {
    std::map<std::string, std::string> o;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strncmp(argv[i], "--", 2) != 0) continue;
        o[argv[i] + 2] = argv[i + 1];
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    auto args = parse(argc, argv);
    strata::runtime::application_options o;
    o.application_id = args["app"];
    o.bootstrap_servers = args["bootstrap"];
    o.state_dir = args["state"];
    o.instance_id = args["instance"];
    o.guarantee = strata::runtime::processing_guarantee::exactly_once;
    o.commit_interval = std::chrono::milliseconds(100);
    o.session_timeout = std::chrono::milliseconds(6000);
    o.liveness_timeout = std::chrono::milliseconds(600);
    o.transaction_timeout = std::chrono::milliseconds(10000);
    o.repartition_purge_interval = std::chrono::milliseconds(args.contains("purge-ms") ? std::stoll(args["purge-ms"]) : 500);
    const std::string output = args["output"];
    try {
        auto topo = strata::runtime::make_topology(
            o,
            strata::runtime::sub_topology<std::string, std::int64_t>(
                {.name = "reports", .topics = {args["input"]}},
                [](strata::runtime::task_context& t) {
                    return strata::hash_map_store<std::string, std::int64_t>("reports-seen") | t.logged();
                },
                [](auto& ctx, const auto& r) {
                    auto& seen = ctx.stores();
                    seen.put(r.key, seen.get(r.key).value_or(0) + 1);
                    ctx.repartition("by-object", "object-" + std::to_string(*r.value % 5), r.key);
                }),
            strata::runtime::sub_topology<std::string, std::string>(
                {.name = "counts", .repartitions = {"by-object"}},
                [](strata::runtime::task_context& t) {
                    return strata::hash_map_store<std::string, std::int64_t>("votes") | t.logged();
                },
                [output](auto& ctx, const auto& r) {
                    auto& votes = ctx.stores();
                    const std::int64_t n = votes.get(r.key).value_or(0) + 1;
                    votes.put(r.key, n);
                    ctx.emit(output, r.key, n);
                }));
        stop_topology = [&topo] { topo.stop(); };
        if (stop_before_run != 0) topo.stop();
        topo.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "topology_app failed: %s\n", e.what());
        return 2;
    }
    std::printf("stopped\n");
    std::fflush(stdout);
    return 0;
}
