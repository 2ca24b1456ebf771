#pragma once
/// @file
/// @brief `task_context`: what a store factory gets when the runtime builds
/// a task's stores. It supplies each store's changelog (a partition of the
/// topic `<application id>-<store name>-changelog`), the logged layer that
/// writes to it with the task's checkpoint, a metered layer labelled with the
/// task, and a folder for the data of persistent stores.
///
///     [](strata::runtime::task_context& t) {
///         return strata::hash_map_store<std::string, std::int64_t>("counts")
///              | t.logged() | strata::cached() | t.metered();
///     }

#include <strata/decorators/closure.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/decorators/logged.hpp>
#include <strata/decorators/metered.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/application_options.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace strata::runtime {

/// @brief What the instance lends every task_context.
struct task_environment {
    const application_options* options = nullptr;
    std::shared_ptr<kafka::producer> producer;  ///< the instance's producer (transactional under exactly-once)
    metrics::registry* registry = nullptr;
    /// Makes sure the changelog topic of a store exists (one partition per
    /// input partition; compacted, or with the configs given, which add to
    /// application_options::changelog_topic_configs) and returns its name.
    std::function<std::string(std::string_view store, const kafka::settings& configs)> ensure_changelog;
    /// The readers every changelog of the instance reads through, one for
    /// restores and offset lookups, one for standbys following their
    /// changelogs (each with a consumer of its own for lookups): the same
    /// clients whatever the instance's tasks.
    std::shared_ptr<kafka::changelog_reader> changelog_reader;
    std::shared_ptr<kafka::changelog_reader> standby_reader;
    /// The partitions of every input topic, which ensure_changelog gives
    /// every changelog topic (or refuses the topic).
    std::int32_t partitions = 0;
};

template <class CodecArg>
class task_logged_closure;

namespace detail {
/// The changelog topic configs a store's kind needs, as Kafka Streams
/// sets them: a window or session store's changelog is compacted and
/// deleted by time (its retention plus a day), a versioned store's keeps
/// records from compaction for its history plus a day; any other store's
/// is the application's (compacted).
template <class S>
[[nodiscard]] kafka::settings changelog_configs_of(const S& s) {
    const auto& store = innermost(s);
    if constexpr (requires { { store.history_retention_ms() } -> std::convertible_to<std::int64_t>; })
        return kafka::versioned_changelog_configs(std::chrono::milliseconds(store.history_retention_ms()));
    else if constexpr (requires { { store.retention_ms() } -> std::convertible_to<std::int64_t>; })
        return kafka::windowed_changelog_configs(std::chrono::milliseconds(store.retention_ms()));
    else
        return {};
}
}  // namespace detail

/// @brief The factory's view of the task it builds stores for.
class task_context {
public:
    /// @param id the task's id (task::id(): within a topology, with the sub-topology's name)
    task_context(const task_environment& env, std::int32_t partition, std::filesystem::path directory,
                 std::filesystem::path checkpoint, std::string id = {})
        : env_(&env), partition_(partition), id_(id.empty() ? std::to_string(partition) : std::move(id)),
          dir_(std::move(directory)), checkpoint_(std::move(checkpoint)) {}

    /// @brief The partition number of the input this task owns.
    [[nodiscard]] std::int32_t partition() const noexcept { return partition_; }
    [[nodiscard]] const std::string& task_id() const noexcept { return id_; }
    /// @brief A folder of this task's own, for the files of persistent stores.
    /// The runtime empties it when no checkpoint vouches for its contents.
    [[nodiscard]] const std::filesystem::path& directory() const noexcept { return dir_; }
    [[nodiscard]] metrics::registry& metrics() const noexcept { return *env_->registry; }
    [[nodiscard]] const application_options& options() const noexcept { return *env_->options; }

    /// @brief The changelog of store `store` for this task: its partition of
    /// `<application id>-<store>-changelog` (created when missing, with
    /// `configs` on top of the application's changelog_topic_configs),
    /// written by the instance's producer, read committed.
    [[nodiscard]] kafka::changelog changelog(std::string_view store, const kafka::settings& configs = {}) const {
        const application_options& c = *env_->options;
        kafka::changelog_options o;
        o.bootstrap_servers = c.bootstrap_servers;
        o.topic = env_->ensure_changelog(store, configs);
        o.partition = partition_;
        o.consumer_settings = c.consumer_settings;
        o.connect_timeout = c.broker_timeout;
        o.request_timeout = c.broker_timeout;
        o.read_committed = true;
        o.replay_batch = 4096;
        o.checked_partitions = env_->partitions;  // ensure_changelog checked the count
        o.reader = env_->changelog_reader;
        o.follower = env_->standby_reader;
        return kafka::changelog(std::move(o), env_->producer);
    }

    /// @brief Options of the logged layer of a store of this task: the task's
    /// checkpoint (for a persistent store), its partition, and under
    /// exactly-once no checkpoint at flush (the runtime writes it after the
    /// transaction commits).
    [[nodiscard]] logged_options log_options(bool persistent) const {
        logged_options o;
        if (persistent) o.checkpoint = checkpoint_;
        o.partition = partition_;
        o.checkpoint_on_flush = env_->options->guarantee == processing_guarantee::at_least_once;
        return o;
    }

    /// @brief `store | t.logged()`: logs the store, with its default codec, to
    /// the changelog the runtime supplies for it (named after `store.name()`).
    [[nodiscard]] task_logged_closure<strata::detail::use_default_codec> logged() const;
    /// @brief `store | t.logged(codec)`: the same with an explicit codec.
    template <class Codec>
    [[nodiscard]] task_logged_closure<Codec> logged(Codec codec) const;

    /// @brief `store | t.metered()`: metered into the application's registry,
    /// with a `task` label beside `store`.
    [[nodiscard]] metered_closure metered(metered_options o = {}) const {
        o.labels.emplace_back("task", id_);
        return strata::metered(*env_->registry, std::move(o));
    }

private:
    const task_environment* env_;
    std::int32_t partition_;
    std::string id_;
    std::filesystem::path dir_;
    std::filesystem::path checkpoint_;
};

/// @brief The closure `task_context::logged()` returns: the logged layer,
/// with the changelog and options the runtime supplies for the store it wraps.
template <class CodecArg>
class task_logged_closure : public layer_closure<task_logged_closure<CodecArg>> {
public:
    static constexpr layer_kind kind = layer_kind::logged;

    task_logged_closure(const task_context& t, CodecArg codec) : t_(&t), codec_(std::move(codec)) {}

    template <class S>
    auto wrap(S&& s) const {
        kafka::changelog log = t_->changelog(s.name(), detail::changelog_configs_of(s));
        logged_options opts = t_->log_options(is_persistent(s));
        if constexpr (std::is_same_v<CodecArg, strata::detail::use_default_codec>)
            return std::forward<S>(s) | strata::logged(std::move(log), std::move(opts));
        else
            return std::forward<S>(s) | strata::logged(std::move(log), codec_, std::move(opts));
    }

private:
    const task_context* t_;
    CodecArg codec_;
};

inline task_logged_closure<strata::detail::use_default_codec> task_context::logged() const {
    return task_logged_closure<strata::detail::use_default_codec>(*this, {});
}

template <class Codec>
task_logged_closure<Codec> task_context::logged(Codec codec) const {
    return task_logged_closure<Codec>(*this, std::move(codec));
}

}  // namespace strata::runtime
