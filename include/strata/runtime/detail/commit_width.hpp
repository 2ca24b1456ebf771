#pragma once
/// @file
/// @brief How many partitions the work since the last commit wrote to, so
/// that a commit comes early instead of covering more than a limit.
///
/// Why: librdkafka (2.0) sends one produce request per partition, at most
/// five in flight, so a flush or a transaction's commit takes time in
/// proportion to the partitions it covers (about 0.3 ms each under
/// idempotence, 0.55 ms in a transaction, on an idle machine:
/// docs/benchmarks-runtime.md, fanout_flush). An instance whose hundreds of
/// tasks all start at once wrote to every changelog and output partition
/// of all of them before its first commit: at 500 tasks of ten stores,
/// 5,500 partitions, so records waited past their delivery bound, the
/// commit failed, every task was rebuilt and did the same again. With a
/// limit, a record of a task that would bring the work past it waits for a
/// commit first; the records of tasks already in it do not.
///
/// A task counts once per commit, with the partitions it may write: its
/// changelogs and one for its output (records go to an output partition by
/// key; one is what a task keyed like its input writes).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::runtime::detail {

/// @brief application_options::max_partitions_per_commit when it is zero:
/// 1,000 under exactly-once (a transaction over 1,100 partitions commits
/// in 0.7 s on an idle machine, well within transaction_timeout); under
/// at-least-once one partition per millisecond of a record's delivery
/// bound (a flush of 1,100 partitions takes 0.3 s idle: a third of the
/// bound or so, to leave room for a loaded broker), at least 50.
[[nodiscard]] inline std::size_t default_commit_width(bool exactly_once, std::chrono::milliseconds delivery_bound) {
    if (exactly_once) return 1000;
    return static_cast<std::size_t>(std::max<std::chrono::milliseconds::rep>(50, delivery_bound.count()));
}

class commit_width {
public:
    /// @param limit partitions a commit may cover (0: no limit)
    explicit commit_width(std::size_t limit) : limit_(limit) {}

    /// @brief Whether a record of task `task` (which writes `partitions`
    /// partitions) may be processed before the next commit; if so, the task
    /// is in the work from now on. The first task of a commit is always let
    /// in, whatever it writes.
    [[nodiscard]] bool admits(std::int32_t task, std::size_t partitions) {
        if (in_work(task)) return true;
        const auto i = static_cast<std::size_t>(task);
        if (limit_ != 0 && width_ != 0 && width_ + partitions > limit_) {
            full_ = true;
            return false;
        }
        if (i >= in_.size()) in_.resize(i + 1, false);
        in_[i] = true;
        width_ += partitions;
        return true;
    }

    /// @brief Whether task `task` is in the work since the last commit (its
    /// records are admitted without counting its partitions again).
    [[nodiscard]] bool in_work(std::int32_t task) const noexcept {
        const auto i = static_cast<std::size_t>(task);
        return i < in_.size() && in_[i];
    }

    /// @brief Whether a record was turned away since the last commit: the
    /// next commit is due now.
    [[nodiscard]] bool full() const noexcept { return full_; }
    /// @brief The partitions the work since the last commit covers.
    [[nodiscard]] std::size_t width() const noexcept { return width_; }
    [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

    /// @brief After a commit (or a flush that acknowledged every record):
    /// nothing is in the work any more.
    void committed() {
        in_.assign(in_.size(), false);
        width_ = 0;
        full_ = false;
    }

private:
    std::size_t limit_;
    std::size_t width_ = 0;
    bool full_ = false;
    std::vector<bool> in_;  // by task: in the work since the last commit
};

}  // namespace strata::runtime::detail
