#pragma once
/// @file
/// @brief The options of the logged layer.

#include <cstdint>
#include <filesystem>
#include <optional>

namespace strata {

/// @brief Options of the logged layer.
struct logged_options {
    /// Where flush() records the durable changelog offset. A persistent store
    /// restores from there; without it, restore always starts at offset 0.
    /// A store that is not persistent starts at 0 anyway, so it neither reads
    /// nor writes the checkpoint (a damaged file cannot stop its flushes).
    /// A self_checkpointing_store keeps the offset in its own data and
    /// needs no file.
    std::optional<std::filesystem::path> checkpoint = {};
    /// The changelog partition this store instance owns (its key in the checkpoint).
    std::int32_t partition = 0;
    /// Records between two restore progress reports.
    std::uint64_t restore_progress_every = 10'000;
    /// Whether flush() writes the checkpoint itself. Turn it off when the
    /// changelog's durable offset only counts once something else succeeds
    /// (a Kafka transaction's commit), and call save_checkpoint() after that.
    /// A self_checkpointing_store then keeps its updates out of its durable
    /// data until save_checkpoint() commits them.
    bool checkpoint_on_flush = true;
};

}  // namespace strata
