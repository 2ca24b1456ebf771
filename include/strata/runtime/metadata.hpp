#pragma once
/// @file
/// @brief `application_metadata`: where every partition of an application
/// runs, as any instance knows it, and which partition a key belongs to.
///
/// Each instance builds it from the coordination topic (detail/coordination.hpp):
/// the leader's newest assignment says which instance runs each partition
/// and which keep standbys; each instance's newest status gives its endpoint
/// (`application_options::endpoint`) and how far behind its standbys are.
/// Nothing new travels for it: the instances already publish both to agree
/// on who runs what, and every instance already reads the topic to its end.
///
/// How stale it can be: an instance reads the coordination topic on every
/// turn of its processing loop (every 10-50 ms), so a new assignment is
/// known everywhere within that, plus the broker's delivery. It is a
/// decision, not a fact: the instance it names may still be restoring the
/// partition or waiting for the previous owner to let go, and answers so
/// (query_status::restoring, ::rebalancing) until it runs it. An instance
/// that died is still named until the group notices (the session timeout)
/// and the leader decides again.

#include <strata/core/bytes.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/runtime/detail/coordination.hpp>
#include <strata/runtime/standby_lag.hpp>
#include <strata/serde/encode.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace strata::runtime {

/// @brief The partition a key belongs to among `partitions`: the key encoded
/// as a whole record key (`strata::encode`), then Kafka's murmur2, exactly as
/// Kafka's Java producer partitions it. A record produced with this key by
/// any Kafka client with the default partitioner lands in this partition.
template <class K>
[[nodiscard]] std::int32_t partition_for(const K& key, std::int32_t partitions) {
    if constexpr (std::is_convertible_v<const K&, std::string_view>) {
        const std::string_view s(key);
        return kafka::default_partition(std::as_bytes(std::span(s.data(), s.size())), partitions);
    } else if constexpr (std::is_same_v<K, byte_buffer>) {
        return kafka::default_partition(bytes_view(key), partitions);
    } else {
        const byte_buffer bytes = encode(key);
        return kafka::default_partition(bytes_view(bytes), partitions);
    }
}

/// @brief One live instance of the application.
struct instance_metadata {
    std::string instance;                ///< its instance id
    std::string endpoint;                ///< host:port of its queries ("" if it announced none, or no status yet)
    std::vector<std::int32_t> active;    ///< partitions the assignment gives it
    std::vector<std::int32_t> standbys;  ///< partitions it keeps a standby of, by the assignment
    std::vector<standby_lag> standby_lags;  ///< the lags it last reported
    std::int64_t published_ms = 0;       ///< when it last reported (wall clock; 0: never)
};

/// @brief Where one partition runs.
struct partition_metadata {
    std::int32_t partition = -1;
    std::string active;                   ///< the instance that runs it ("" while nobody does)
    std::string active_endpoint;          ///< that instance's endpoint ("" if unknown)
    std::vector<std::string> standbys;    ///< instances that keep a copy
    std::vector<std::string> standby_endpoints;  ///< their endpoints, in the same order
};

/// @brief A snapshot of where an application's partitions run; see the file comment.
class application_metadata {
public:
    application_metadata() = default;

    /// @param a the leader's newest assignment
    /// @param statuses every instance's newest status
    application_metadata(std::int32_t partitions, const detail::assignment& a,
                         const std::map<std::string, detail::instance_status, std::less<>>& statuses)
        : partitions_(partitions), version_(a.version), leader_(a.leader), decided_ms_(a.decided_ms), tasks_(a.tasks) {
        for (const std::string& m : a.members) {
            instance_metadata i;
            i.instance = m;
            if (const auto it = statuses.find(m); it != statuses.end()) {
                i.endpoint = it->second.endpoint;
                i.standby_lags = it->second.standbys;
                i.published_ms = it->second.published_ms;
            }
            for (const detail::task_placement& t : a.tasks) {
                if (t.active == m) i.active.push_back(t.task);
                if (std::find(t.standbys.begin(), t.standbys.end(), m) != t.standbys.end()) i.standbys.push_back(t.task);
            }
            instances_.push_back(std::move(i));
        }
    }

    /// @brief The application's partition count (the input topics').
    [[nodiscard]] std::int32_t partitions() const noexcept { return partitions_; }
    /// @brief The assignment's version: grows with every decision of the leader.
    [[nodiscard]] std::int64_t version() const noexcept { return version_; }
    [[nodiscard]] const std::string& leader() const noexcept { return leader_; }
    /// @brief When the leader decided (wall-clock ms).
    [[nodiscard]] std::int64_t decided_ms() const noexcept { return decided_ms_; }

    /// @brief Every live instance, ordered by instance id.
    [[nodiscard]] const std::vector<instance_metadata>& instances() const noexcept { return instances_; }

    /// @brief The instance with this id, or null if it is not a live member.
    [[nodiscard]] const instance_metadata* find_instance(std::string_view id) const noexcept {
        for (const instance_metadata& i : instances_)
            if (i.instance == id) return &i;
        return nullptr;
    }

    /// @brief The endpoint of an instance ("" if unknown).
    [[nodiscard]] std::string endpoint_of(std::string_view id) const {
        const instance_metadata* i = find_instance(id);
        return i == nullptr ? std::string() : i->endpoint;
    }

    /// @brief Where partition p runs.
    [[nodiscard]] partition_metadata partition(std::int32_t p) const {
        partition_metadata m;
        m.partition = p;
        for (const detail::task_placement& t : tasks_) {
            if (t.task != p) continue;
            m.active = t.active;
            m.active_endpoint = endpoint_of(t.active);
            m.standbys = t.standbys;
            for (const std::string& s : t.standbys) m.standby_endpoints.push_back(endpoint_of(s));
        }
        return m;
    }

    /// @brief Where the partition of `key` runs (see partition_for).
    template <class K>
    [[nodiscard]] partition_metadata for_key(const K& key) const {
        return partition(partition_for(key, partitions_));
    }

private:
    std::int32_t partitions_ = 0;
    std::int64_t version_ = 0;
    std::string leader_;
    std::int64_t decided_ms_ = 0;
    std::vector<detail::task_placement> tasks_;
    std::vector<instance_metadata> instances_;
};

}  // namespace strata::runtime
