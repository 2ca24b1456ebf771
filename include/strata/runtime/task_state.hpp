#pragma once
/// @file
/// @brief The states of a task (see task.hpp), apart from the task: the
/// parts that only move tasks between states need nothing else of it.

namespace strata::runtime {

/// @brief Where a task is in its life. Created -> restoring -> running ->
/// closed; a task that restores is not processing yet, and its input
/// partitions are paused meanwhile. A standby task (created -> standby)
/// keeps a copy of another instance's task current; when its partition
/// comes here it is promoted (standby -> restoring -> running) and restores
/// only what it is behind.
enum class task_state : int { created, restoring, running, standby, closed };

[[nodiscard]] constexpr const char* to_string(task_state s) noexcept {
    switch (s) {
        case task_state::created: return "created";
        case task_state::restoring: return "restoring";
        case task_state::running: return "running";
        case task_state::standby: return "standby";
        case task_state::closed: return "closed";
    }
    return "unknown";
}

}  // namespace strata::runtime
