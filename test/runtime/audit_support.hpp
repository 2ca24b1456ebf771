#pragma once
// The audit topic of the runtime tests' application (aggregate_app --audit):
// each input also writes a record to partition p (its task), keyed by the copy
// of the task that processed it (`<instance>/<pid>/<build>`), valued with the
// input's offset and when it was processed (wall clock, µs). Read back in
// order, it says which copy ran each task over which inputs, and whether two
// copies ever wrote in one interval.

#include "runtime_test_support.hpp"

#include <strata/serde/encode.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace runtime_test {

/// One unbroken run of audit records by one copy of a task.
struct writer_run {
    std::string writer;
    std::int64_t first_input, last_input, records;
    std::int64_t first_processed_us, last_processed_us;
};

/// What the audit of one task shows.
struct task_audit {
    std::string history;                  ///< " writer[first..last, records]" for each run, in order
    std::vector<std::string> late;      ///< runs sent after another copy's, processed before it began
    std::vector<std::string> overlaps;  ///< runs of a copy at work while another was
};

/// The runs of one partition of the audit topic, in the order they were written.
inline std::vector<writer_run> writer_runs(const std::string& audit, std::int32_t p) {
    std::vector<writer_run> runs;
    for (const auto& [writer, value] : read_partition(audit, p)) {
        const auto v = strata::decode<std::vector<std::int64_t>>(strata::bytes_view(value));
        if (v.size() != 2) throw std::runtime_error("an audit record of " + writer + " that the test app did not write");
        const std::int64_t input = v[0], processed = v[1];
        if (runs.empty() || runs.back().writer != writer) runs.push_back({writer, input, input, 0, processed, processed});
        writer_run& r = runs.back();
        r.last_input = input;
        r.first_processed_us = std::min(r.first_processed_us, processed);
        r.last_processed_us = std::max(r.last_processed_us, processed);
        ++r.records;
    }
    return runs;
}

/// Which copies ran task `p`, and whether one wrote again after another had
/// written: under either guarantee a broken invariant. Under exactly-once
/// (read committed) a fenced zombie's writes are aborted. Under
/// at-least-once the lease stops a zombie's writes, and its producer lands
/// or fails what it held within the lease's margin (docs/runtime.md, "What
/// the producer holds when the lease ends"). The two ways it can break are
/// told apart: a run processed before any copy in between began was held
/// by the producer and sent late (`late`); one processed after that is a
/// second copy at work (`overlaps`).
inline task_audit audit_task(const std::string& audit, std::int32_t p) {
    const std::vector<writer_run> runs = writer_runs(audit, p);
    task_audit out;
    for (const writer_run& r : runs)
        out.history += " " + r.writer + "[" + std::to_string(r.first_input) + ".." + std::to_string(r.last_input) +
                       ", " + std::to_string(r.records) + "]";
    // The runs in effect: a run sent late is taken out, so that the copy it
    // interrupted goes on in the same run.
    std::vector<const writer_run*> in_effect;
    for (const writer_run& r : runs) {
        if (!in_effect.empty() && in_effect.back()->writer == r.writer) continue;
        const auto earlier = std::find_if(in_effect.rbegin(), in_effect.rend(),
                                          [&](const writer_run* e) { return e->writer == r.writer; });
        if (earlier == in_effect.rend()) {
            in_effect.push_back(&r);
            continue;
        }
        std::int64_t others_began = std::numeric_limits<std::int64_t>::max();
        for (auto i = in_effect.rbegin(); i != earlier; ++i) others_began = std::min(others_began, (*i)->first_processed_us);
        const std::string what = r.writer + "'s inputs " + std::to_string(r.first_input) + ".." +
                                 std::to_string(r.last_input) + " after " + in_effect.back()->writer + "'s";
        if (r.last_processed_us < others_began) {
            out.late.push_back(what + " (processed before it began): sent late");
            continue;  // the copy it interrupted goes on in the same run
        }
        out.overlaps.push_back(what + ", processed " + std::to_string((r.last_processed_us - others_began) / 1000) +
                               " ms after another copy began: two copies of the task ran at once");
        in_effect.push_back(&r);
    }
    return out;
}

}  // namespace runtime_test
