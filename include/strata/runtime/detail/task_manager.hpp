#pragma once
/// @file
/// @brief The task manager, with no Kafka in it: an instance's active and
/// standby tasks, by partition, and the order in which one is created,
/// restored, promoted, released, rebuilt and closed. What each step does to
/// stores, inputs and the restore thread is the host's (task_host; the
/// instance is one).
///
/// - An active task comes from the standby of its partition when there is
///   one and the restore thread takes it over (it restores only its lag);
///   otherwise the standby is closed and a new task restores from scratch.
/// - Only a running task is released or closed clean (after a commit, with
///   a checkpoint); a restoring one is closed as it is.
/// - Released tasks give their inputs back; every task that goes is handed
///   to the host's disposal (its stores close off the processing thread).
/// - After an aborted transaction, every running task is replaced by a new
///   one that restores from its changelogs.
/// - The state gauges follow each move: per task (1 for its state) and per
///   instance (tasks in each state).

#include <strata/metrics/registry.hpp>
#include <strata/runtime/task_state.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

/// @brief What the task manager reads and changes of a task (runtime::task).
template <class T>
concept managed_task = requires(T& t, const T& ct, task_state s) {
    { ct.partition() } -> std::convertible_to<std::int32_t>;
    { ct.id() } -> std::convertible_to<std::string>;
    { ct.state() } -> std::same_as<task_state>;
    t.set_state(s);
};

/// @brief What a task's moves do outside the manager.
template <class Task>
class task_host {
public:
    virtual ~task_host() = default;
    /// A new task of partition p, not built yet.
    virtual std::shared_ptr<Task> make_task(std::int32_t p) = 0;
    /// Hands a task to the restore thread, to restore and then run.
    virtual void restore(std::shared_ptr<Task> t) = 0;
    /// Hands a standby to the restore thread, to keep current.
    virtual void keep_current(std::shared_ptr<Task> t) = 0;
    /// The restore thread takes a standby over as an active task, if it can.
    virtual bool promote(Task& standby) = 0;
    /// Stops its restore and closes its stores: with `clean`, after a commit,
    /// with a checkpoint of what they hold.
    virtual void close_stores(Task& t, bool clean) = 0;
    /// Gives the task's input partitions back, if it had them.
    virtual void unassign_inputs(Task& t) = 0;
    /// Destroys the task off the processing thread.
    virtual void dispose(std::shared_ptr<Task> t) = 0;
};

template <managed_task Task>
class task_manager {
public:
    using task_map = std::map<std::int32_t, std::shared_ptr<Task>>;
    /// Sets what the restore thread reads of a task before it may see it.
    using prepare_fn = std::function<void(Task&)>;

    task_manager(task_host<Task>& host, metrics::registry& reg, std::string instance)
        : host_(&host), registry_(&reg), instance_(std::move(instance)) {}

    [[nodiscard]] const task_map& active() const noexcept { return active_; }
    [[nodiscard]] const task_map& standbys() const noexcept { return standbys_; }
    [[nodiscard]] std::set<std::int32_t> active_partitions() const { return keys(active_); }
    [[nodiscard]] std::set<std::int32_t> standby_partitions() const { return keys(standbys_); }

    /// @brief The active task of partition p, if it is `t` (not released since).
    [[nodiscard]] bool holds(const std::shared_ptr<Task>& t) const {
        const auto it = active_.find(t->partition());
        return it != active_.end() && it->second == t;
    }

    [[nodiscard]] std::vector<Task*> running() const {
        std::vector<Task*> out;
        for (const auto& [p, t] : active_)
            if (t->state() == task_state::running) out.push_back(t.get());
        return out;
    }
    [[nodiscard]] bool has_running() const {
        for (const auto& [p, t] : active_)
            if (t->state() == task_state::running) return true;
        return false;
    }

    /// @brief Whether the set of tasks or standbys changed since the last call.
    [[nodiscard]] bool take_set_changed() noexcept { return std::exchange(set_changed_, false); }
    /// @brief Whether any task changed state since the last call.
    [[nodiscard]] bool take_state_changed() noexcept { return std::exchange(state_changed_, false); }

    /// @brief Takes task p here (see the file comment).
    void start(std::int32_t p, const prepare_fn& prepare) {
        std::shared_ptr<Task> t;
        if (const auto s = standbys_.find(p); s != standbys_.end()) {
            std::shared_ptr<Task> standby = std::move(s->second);
            standbys_.erase(s);
            prepare(*standby);  // a standby's restore touches neither
            if (host_->promote(*standby)) {
                t = std::move(standby);  // a warm copy: only its lag is restored
            } else {
                close(*standby, false);
                host_->dispose(std::move(standby));
            }
        }
        const bool promoted = t != nullptr;
        if (!promoted) {
            t = host_->make_task(p);
            prepare(*t);
        }
        active_.emplace(p, t);
        transition(*t, task_state::restoring);
        if (!promoted) host_->restore(std::move(t));
        set_changed_ = true;
    }

    /// @brief The restore thread is done with `t`: it runs from now on.
    void started(Task& t) { transition(t, task_state::running); }

    void start_standby(std::int32_t p) {
        std::shared_ptr<Task> t = host_->make_task(p);
        standbys_.emplace(p, t);
        transition(*t, task_state::standby);
        host_->keep_current(std::move(t));
        set_changed_ = true;
    }

    void drop_standby(std::int32_t p) {
        const auto it = standbys_.find(p);
        if (it == standbys_.end()) return;
        close(*it->second, false);
        host_->dispose(std::move(it->second));
        standbys_.erase(it);
        set_changed_ = true;
    }

    /// @brief Lets go of task p: clean (after a commit) only if it runs.
    void release(std::int32_t p, bool clean) {
        const auto it = active_.find(p);
        if (it == active_.end()) return;
        close(*it->second, clean && it->second->state() == task_state::running);
        host_->unassign_inputs(*it->second);
        host_->dispose(std::move(it->second));
        active_.erase(it);
        set_changed_ = true;
    }

    /// @brief Lets go of every active task, as they are.
    void release_all() {
        for (std::int32_t p : active_partitions()) release(p, false);
    }

    void drop_standbys() {
        for (std::int32_t p : standby_partitions()) drop_standby(p);
    }

    /// @brief Closes everything (the instance stops): running tasks clean
    /// if `clean`. The inputs stay: the consumer closes with them.
    void close_all(bool clean) {
        for (auto& [p, t] : active_) {
            close(*t, clean && t->state() == task_state::running);
            host_->dispose(std::move(t));
        }
        active_.clear();
        drop_standbys();
        set_changed_ = true;
    }

    /// @brief After an aborted transaction: every running task (or those
    /// `which` names by partition) is replaced by a new one that restores
    /// from its changelogs and resumes from the committed offsets.
    void rebuild_running(const prepare_fn& prepare, const std::function<bool(std::int32_t)>& which = {}) {
        for (auto& [p, t] : active_) {
            if (t->state() != task_state::running || (which && !which(p))) continue;
            close(*t, false);
            host_->unassign_inputs(*t);  // assigned again, at the committed offsets, once rebuilt
            host_->dispose(std::move(t));
            std::shared_ptr<Task> fresh = host_->make_task(p);
            prepare(*fresh);
            t = fresh;
            transition(*fresh, task_state::restoring);
            host_->restore(std::move(fresh));
        }
    }

private:
    static std::set<std::int32_t> keys(const task_map& m) {
        std::set<std::int32_t> out;
        for (const auto& [p, t] : m) out.insert(p);
        return out;
    }

    void close(Task& t, bool clean) {
        host_->close_stores(t, clean);
        transition(t, task_state::closed);
    }

    void transition(Task& t, task_state s) {
        t.set_state(s);
        state_changed_ = true;
        for (task_state each : {task_state::restoring, task_state::running, task_state::standby}) {
            registry_->gauge_for("strata_task_state", "1 for the state a task is in, 0 for the others",
                                 {{"task", std::string(t.id())}, {"state", to_string(each)}})
                .set(each == s ? 1 : 0);
            double n = 0;
            for (const auto& [p, other] : active_) n += other && other->state() == each ? 1 : 0;
            for (const auto& [p, other] : standbys_) n += other && other->state() == each ? 1 : 0;
            registry_->gauge_for("strata_instance_tasks", "Tasks of this instance, by state",
                                 {{"instance", instance_}, {"state", to_string(each)}})
                .set(n);
        }
    }

    task_host<Task>* host_;
    metrics::registry* registry_;
    std::string instance_;
    task_map active_;
    task_map standbys_;
    bool set_changed_ = false;
    bool state_changed_ = false;
};

}  // namespace strata::runtime::detail
