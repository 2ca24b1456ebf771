#pragma once
// Agents' reports for the shared-state service, generated reproducibly: each
// object has a true state, and each report is an agent's view of one object,
// right most of the time. Report i has time start_ms + i, so later reports
// are newer.

#include "model.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace shared_state {

struct load_options {
    std::int64_t agents = 20;
    std::int64_t objects = 10'000;
    std::vector<std::string> states{"ok", "degraded", "down", "under_attack"};
    double accuracy = 0.7;      // the share of reports that give the object's true state
    std::uint64_t seed = 42;
    std::int64_t start_ms = 0;  // the time of report 0
};

/// Report i of the stream: the object it is about, and the report.
class report_stream {
public:
    explicit report_stream(load_options o) : o_(std::move(o)), rng_(o_.seed) {}

    struct item {
        std::string object;
        report r;
    };

    item next() {
        std::uniform_int_distribution<std::int64_t> object(0, o_.objects - 1), agent(0, o_.agents - 1);
        std::uniform_int_distribution<std::size_t> state(0, o_.states.size() - 1);
        std::uniform_real_distribution<double> coin(0, 1);
        const std::int64_t obj = object(rng_);
        item it;
        it.object = "obj-" + std::to_string(obj);
        it.r.agent = "agent-" + std::to_string(agent(rng_));
        const std::string& truth = o_.states[static_cast<std::size_t>(obj) % o_.states.size()];
        it.r.state = coin(rng_) < o_.accuracy ? truth : o_.states[state(rng_)];
        it.r.time_ms = o_.start_ms + i_++;
        return it;
    }

private:
    load_options o_;
    std::mt19937_64 rng_;
    std::int64_t i_ = 0;
};

}  // namespace shared_state
