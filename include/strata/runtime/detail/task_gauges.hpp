#pragma once
/// @file
/// @brief The gauges an instance sets for its running tasks: each task's
/// consumer lag, and the phases of its last takeover.

#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace strata::runtime::detail {

/// Sets each running task's consumer lag: records between its position and
/// the end of each input partition, as of the consumer's last fetch (no
/// request is made).
inline void publish_consumer_lag(metrics::registry& reg, rd_kafka_t* consumer, const application_options& c,
                                 const std::vector<task*>& running) {
    for (task* t : running) {
        const std::int32_t p = t->partition();
        if (t->lag_gauges.empty())
            for (const std::string& topic : c.input_topics)
                t->lag_gauges.push_back(&reg.gauge_for("strata_task_consumer_lag_records",
                                                       "Input records a task has yet to process, as of the last fetch",
                                                       {{"task", t->id()}, {"topic", topic}}));
        for (std::size_t i = 0; i < c.input_topics.size(); ++i) {
            std::int64_t low = 0, high = 0;
            if (rd_kafka_get_watermark_offsets(consumer, c.input_topics[i].c_str(), p, &low, &high) !=
                    RD_KAFKA_RESP_ERR_NO_ERROR ||
                high < 0)
                continue;
            const std::int64_t at = t->next_offsets[i] >= 0 ? t->next_offsets[i] : t->committed_offsets[i];
            t->lag_gauges[i]->set(static_cast<double>(std::max<std::int64_t>(high - std::max<std::int64_t>(at, low), 0)));
        }
    }
}

/// Marks the task's first record processed and sets the gauges of its
/// takeover's phases (those whose both ends are known).
inline void record_first_record(metrics::registry& reg, task& t) {
    t.timeline.first_record_ms = wall_clock_ms();
    const takeover_timeline& tl = t.timeline;
    const auto phase = [&](const char* name, std::int64_t from, std::int64_t to) {
        if (from == 0 || to == 0) return;
        reg.gauge_for("strata_task_takeover_seconds",
                      "The last takeover of a task, phase by phase: the previous owner's last commit to "
                      "the leader noticing (detection), to this instance taking the task (assignment), "
                      "to its stores restored (restore), to its first record processed (first_record)",
                      {{"task", t.id()}, {"phase", name}})
            .set(static_cast<double>(to - from) / 1000.0);
    };
    phase("detection", tl.previous_commit_ms, tl.noticed_ms);
    phase("assignment", tl.noticed_ms, tl.assigned_ms);
    phase("restore", tl.assigned_ms, tl.restored_ms);
    phase("first_record", tl.restored_ms, tl.first_record_ms);
    phase("total", tl.previous_commit_ms, tl.first_record_ms);
}

}  // namespace strata::runtime::detail
