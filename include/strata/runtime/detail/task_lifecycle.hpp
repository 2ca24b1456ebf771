#pragma once
/// @file
/// @brief What happens to an instance's tasks between the task manager's
/// steps (task_manager.hpp): the host that makes them with the user's
/// factory, builds their stores on the restore thread, hands them to the
/// restorer, assigns their inputs once restored, closes their stores with a
/// checkpoint, and replaces the standbys the restorer found stale. It works
/// on the parts of one run() (instance_session.hpp).

#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>
#include <strata/runtime/detail/instance_session.hpp>
#include <strata/runtime/detail/output.hpp>
#include <strata/runtime/detail/restorer.hpp>
#include <strata/runtime/detail/task_manager.hpp>
#include <strata/runtime/task.hpp>
#include <strata/runtime/task_context.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>

namespace strata::runtime::detail {

/// @brief Makes the typed task of a partition (see application.hpp).
using task_maker = std::function<std::shared_ptr<task>(std::int32_t partition, output& out)>;

/// @brief The task manager's host over one run()'s session; see the file comment.
class task_lifecycle final : public task_host<task> {
public:
    /// @param c the instance's configuration (it must outlive this)
    task_lifecycle(const application_options& c, task_maker make, metrics::registry& reg)
        : config_(&c), make_(std::move(make)), registry_(&reg) {}

    /// @brief The session of the run() in progress (nullptr after it).
    void attach(instance_session* s) noexcept { s_ = s; }

    /// @brief Builds a task's stores (on the restore thread). Local data
    /// without a checkpoint cannot be trusted: it starts clean.
    void build(task& t) {
        const std::int32_t p = t.partition();
        t.checkpoint_path = s_->dir.checkpoint(p);
        if (!std::filesystem::exists(t.checkpoint_path)) s_->dir.wipe_task(p);
        task_context ctx(s_->env, p, s_->dir.task_dir(p), t.checkpoint_path, t.id());
        t.build(ctx);
    }

    /// @brief Starts the tasks the restore thread has finished with.
    void start_restored(task_manager<task>& tasks) {
        for (std::shared_ptr<task>& t : s_->restore.take_ready()) {
            if (!tasks.holds(t)) continue;  // released meanwhile
            if (config_->guarantee == processing_guarantee::exactly_once && t->may_run_ahead_of_commits()) {
                // From now on the local state runs ahead of what is committed:
                // without a checkpoint, a crash wipes it (see build()). Stores
                // that keep uncommitted updates out of their durable data
                // (self_checkpointing_store) never run ahead, and are not wiped.
                std::error_code ec;
                std::filesystem::remove(t->checkpoint_path, ec);
            }
            // Assigned only now, at the committed offsets: assigning earlier
            // and seeking later left librdkafka with an outdated offset lookup
            // and a task's first records 500 ms late.
            s_->consumer.assign_inputs(t->partition(), t->committed_offsets);
            t->next_offsets.assign(config_->input_topics.size(), -1);
            t->partition_times.resize(config_->input_topics.size(), -1);
            // Stream time goes on from where the previous owner (strata or
            // Kafka Streams) left it, as its commits say.
            if (const std::int64_t resumed = *std::max_element(t->partition_times.begin(), t->partition_times.end());
                resumed >= 0)
                t->resume_stream_time(resumed);
            tasks.started(*t);
            t->start();
        }
    }

    /// @brief Replaces the standbys the restore thread found stale
    /// (restorer::lost_standby): each goes, with its checkpoint, so that
    /// the decision's standby starts again from an empty folder. One
    /// promoted in the meantime is released the same way.
    /// @returns whether any went (the caller acts on its decision again)
    bool replace_lost_standbys(task_manager<task>& tasks) {
        bool replaced = false;
        for (restorer::lost_standby& lost : s_->restore.take_lost()) {
            registry_
                ->counter_for("strata_standby_rebuilt_total",
                              "Standby tasks rebuilt because their changelog no longer held what they were built from",
                              {{"instance", config_->instance_id}})
                .inc();
            config_->warn(lost.why);
            const std::int32_t p = lost.t->partition();
            const auto holds = [&](const auto& ts) {
                const auto it = ts.find(p);
                return it != ts.end() && it->second == lost.t;
            };
            if (holds(tasks.standbys())) tasks.drop_standby(p);
            else if (holds(tasks.active())) tasks.release(p, false);
            else continue;  // replaced already
            std::error_code ec;
            std::filesystem::remove(s_->dir.checkpoint(p), ec);  // in case closing wrote it again
            replaced = true;
        }
        return replaced;
    }

    // The task manager's host:

    std::shared_ptr<task> make_task(std::int32_t p) override { return make_(p, s_->out); }
    void restore(std::shared_ptr<task> t) override { s_->restore.add(std::move(t)); }
    void keep_current(std::shared_ptr<task> t) override { s_->restore.add_standby(std::move(t)); }
    bool promote(task& standby) override { return s_->restore.promote(standby); }
    void dispose(std::shared_ptr<task> t) override { s_->reaper.dispose(std::move(t)); }
    void unassign_inputs(task& t) override { s_->consumer.unassign_inputs(t.partition()); }

    /// With `clean`, after a commit, the checkpoint records what the stores
    /// hold (under at-least-once their flush wrote it already).
    void close_stores(task& t, bool clean) override {
        s_->restore.cancel(t);
        if (clean && config_->guarantee == processing_guarantee::exactly_once) {
            const std::lock_guard lock(t.mutex());
            for (const auto& st : t.stores())
                if (auto* log = st->changelog(); log != nullptr && st->persistent()) st->save_checkpoint(log->flush());
        }
        t.close_stores();
    }

private:
    const application_options* config_;
    task_maker make_;
    metrics::registry* registry_;
    instance_session* s_ = nullptr;
};

}  // namespace strata::runtime::detail
