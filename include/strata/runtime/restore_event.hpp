#pragma once
/// @file
/// @brief What an application reports of its tasks' restores
/// (`application::on_restore`): a start, each batch, and the end, for each
/// store of each task, from the restore thread.

#include <strata/restore/restore.hpp>

#include <functional>
#include <string>

namespace strata::runtime {

/// @brief One report of a task's restore, for a `restore_callback`.
struct restore_event {
    enum class phase { start, batch, end };
    phase what;
    const std::string& task;  ///< the task's id
    const restore_progress& progress;  ///< progress.store names the store
};

/// @brief Receives restore progress from the restore thread; it must not block for long.
using restore_callback = std::function<void(const restore_event&)>;

}  // namespace strata::runtime
