#pragma once
/// @file
/// @brief `store_port`: one store of a task as the runtime handles it,
/// whatever the store's type (restore, flush, checkpoint, close); a task
/// (task.hpp) holds one per store its factory returned.

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/decorators/logged.hpp>
#include <strata/kafka/changelog.hpp>

#include <exception>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace strata::runtime::detail {

/// @brief One store of a task, as the runtime handles it whatever its type:
/// restore it record by record, flush it, checkpoint it, close it.
class store_port {
public:
    virtual ~store_port() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    /// The store's Kafka changelog, or null for a store without a logged layer
    /// (it is then local only: not restored, not fault tolerant).
    [[nodiscard]] virtual kafka::changelog* changelog() = 0;
    [[nodiscard]] virtual bool persistent() const = 0;
    /// Re-creates the unit of state that a changelog record carries.
    virtual void restore(const record_view& r) = 0;
    /// Flushes the whole stack (cache, changelog, store, and under
    /// at-least-once the checkpoint).
    virtual void flush() = 0;
    /// Records that the store and its changelog hold everything below `offset`.
    virtual void save_checkpoint(offset_t offset) = 0;
    /// Whether the store keeps its committed changelog offset in its own
    /// data (self_checkpointing_store): its uncommitted updates never reach
    /// its durable data, so a crash needs no wipe, and under exactly-once it
    /// is committed after each transaction.
    [[nodiscard]] virtual bool commits_itself() const = 0;
    /// The offset such a store committed last; none for other stores.
    [[nodiscard]] virtual std::optional<offset_t> committed_offset() const = 0;
    /// After a batch of restored records: a store that buffers writes
    /// empties its buffer (restore_from does the same).
    virtual void end_restore_batch() = 0;
    virtual void close() = 0;
};

/// @brief The store_port of a store stack of type Stack.
template <class Stack>
class store_port_of final : public store_port {
    static constexpr bool logged = has_layer_v<Stack, layer_kind::logged>;

public:
    explicit store_port_of(Stack& s) : s_(&s) {}

    [[nodiscard]] std::string_view name() const override { return s_->name(); }

    [[nodiscard]] kafka::changelog* changelog() override {
        if constexpr (logged) {
            auto& log = layer<logged_store>(*s_).changelog();
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(log)>, kafka::changelog>) return &log;
            else return nullptr;
        } else {
            return nullptr;
        }
    }

    [[nodiscard]] bool persistent() const override { return is_persistent(*s_); }

    void restore(const record_view& r) override {
        if constexpr (logged) {
            auto& lg = layer<logged_store>(*s_);
            try {
                lg.codec().restore(lg.base(), r);
            } catch (const std::exception& e) {
                std::throw_with_nested(restore_error(s_->name(), r.offset, e.what()));
            }
        }
    }

    void flush() override {
        if constexpr (strata::detail::has_flush<Stack>) (void)s_->flush();
    }

    void save_checkpoint(offset_t offset) override {
        if constexpr (logged) layer<logged_store>(*s_).save_checkpoint(offset);
    }

    [[nodiscard]] bool commits_itself() const override { return self_checkpointing<Stack>(); }

    [[nodiscard]] std::optional<offset_t> committed_offset() const override {
        if constexpr (self_checkpointing<Stack>()) return layer<logged_store>(*s_).base().committed_offset();
        else return std::nullopt;
    }

    void end_restore_batch() override {
        if constexpr (logged) {
            auto& inner = layer<logged_store>(*s_).base();
            if constexpr (requires { inner.end_restore_batch(); }) inner.end_restore_batch();
        }
    }

    void close() override {
        if constexpr (strata::detail::has_close<Stack>) s_->close();
    }

private:
    /// Whether the store under the logged layer is a self_checkpointing_store.
    template <class S>
    static constexpr bool self_checkpointing() {
        if constexpr (logged)
            return self_checkpointing_store<std::remove_cvref_t<decltype(layer<logged_store>(std::declval<S&>()).base())>>;
        else return false;
    }

    Stack* s_;
};

}  // namespace strata::runtime::detail
