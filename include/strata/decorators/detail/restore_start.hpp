#pragma once
/// @file
/// @brief Where a logged store's restore starts, and the cases in which it
/// must not start at all.

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/decorators/logged_options.hpp>
#include <strata/restore/checkpoint.hpp>

#include <string>
#include <string_view>

namespace strata::detail {

/// @brief The offset a restore of `inner` from `log` starts at: the offset a
/// self_checkpointing_store committed, the checkpoint of a persistent store
/// when one is configured, else 0.
/// @throws restore_error the store holds data and nothing names the offset
///         it holds (see holds_state()); the offset is past the log's end
template <class Inner, class Log>
offset_t restore_start(const Inner& inner, Log& log, std::string_view name, const logged_options& opts) {
    offset_t from = 0;
    std::string where;  // what said the store holds offsets below `from`
    if constexpr (self_checkpointing_store<Inner>) {
        from = inner.committed_offset().value_or(0);
        where = "the store's own committed offset";
    } else if (opts.checkpoint && is_persistent(inner)) {
        from = checkpoint_file(*opts.checkpoint).load(name, opts.partition).value_or(0);
        where = "the checkpoint " + opts.checkpoint->string();
    }
    if (from == 0 && holds_state(inner).value_or(false)) {
        // Replaying offset 0 over state the changelog does not describe
        // would mix the two, and a later flush would report the mix durable.
        throw restore_error(name, 0,
                            "the store already holds data, and " +
                                (where.empty() ? std::string("it keeps no checkpoint (it is not persistent, or "
                                                             "no checkpoint file is configured)")
                                               : where + " names no offset") +
                                ", so nothing says which changelog records that data came from. Restore into "
                                "an empty store (a new one, or one you cleared), or keep a checkpoint for a "
                                "persistent store. Nothing was restored");
    }
    // A checkpoint past the changelog's end means records the store was
    // told were durable are gone (or the checkpoint belongs to another
    // log): restoring nothing would hide it, and the next flush would
    // move the checkpoint back over the loss.
    if (from > 0) {
        if (const offset_t end = log.end_offset(); from > end)
            throw restore_error(name, from,
                                where + " says the store holds offsets below " + std::to_string(from) +
                                    ", but its changelog ends at " + std::to_string(end) +
                                    ": the changelog lost records it had made durable, or the store belongs "
                                    "to another changelog. Nothing was restored");
    }
    return from;
}

}  // namespace strata::detail
