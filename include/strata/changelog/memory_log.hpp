#pragma once
/// @file
/// @brief `strata::memory_log`: a changelog held in memory, for tests. It
/// counts what it is asked to do and can forget its unflushed tail, so a
/// test can check how many records a decorator wrote and what a crash would
/// leave behind.

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata {

/// @brief An in-memory changelog; satisfies `changelog`. Copyable, so a test
/// can snapshot it. Replay sees every record appended, flushed or not.
class memory_log {
public:
    /// @brief Stores a copy of `r` under the next offset (`r.offset` is ignored).
    /// @returns the offset the record got
    offset_t append(const record_view& r) {
        record& stored = records_.emplace_back(r);
        stored.offset = next_offset_++;
        ++append_count_;
        return stored.offset;
    }

    /// @brief Marks everything appended as durable.
    /// @returns one past the last record (the durable end)
    /// @throws changelog_error if a failure was armed with `fail_next_flush`
    offset_t flush() {
        ++flush_count_;
        if (fail_next_flush_) {
            fail_next_flush_ = false;
            throw changelog_error("strata: memory_log flush failed (injected)");
        }
        durable_end_ = next_offset_;
        return durable_end_;
    }

    /// @brief One past the last record appended.
    [[nodiscard]] offset_t end_offset() const noexcept { return next_offset_; }

    /// @brief One past the last record covered by a successful flush.
    [[nodiscard]] offset_t durable_offset() const noexcept { return durable_end_; }

    class replay_range;

    /// @brief The records with offset >= from, in order, as `record_view`s
    /// into this log (valid until it is next modified).
    [[nodiscard]] replay_range replay(offset_t from = 0) const;

    /// @brief Every record held, in offset order.
    [[nodiscard]] std::span<const record> records() const noexcept { return records_; }
    [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }

    /// @brief How many records were appended in total (compaction does not
    /// lower it): what a test checks to see how much a layer wrote.
    [[nodiscard]] std::uint64_t append_count() const noexcept { return append_count_; }
    [[nodiscard]] std::uint64_t flush_count() const noexcept { return flush_count_; }

    /// @brief Makes the next `flush` throw `changelog_error` without making
    /// anything durable, to test how callers handle a failing changelog.
    void fail_next_flush() noexcept { fail_next_flush_ = true; }

    /// @brief Forgets the records appended since the last successful flush,
    /// as a crash would; offsets continue from the durable end.
    void drop_unflushed() {
        std::erase_if(records_, [&](const record& r) { return r.offset >= durable_end_; });
        next_offset_ = durable_end_;
    }

    /// @brief Keeps only the latest record of each key, as a compacted topic
    /// does. Offsets are kept, so gaps appear; tombstones are kept.
    /// @returns how many records were dropped
    std::size_t compact() {
        std::unordered_map<std::string, offset_t> latest;
        for (const record& r : records_) latest[key_string(r)] = r.offset;
        return std::erase_if(records_,
                             [&](const record& r) { return latest[key_string(r)] != r.offset; });
    }

private:
    static std::string key_string(const record& r) { return std::string(as_chars(r.key)); }

    std::vector<record> records_;
    offset_t next_offset_ = 0;
    offset_t durable_end_ = 0;
    std::uint64_t append_count_ = 0;
    std::uint64_t flush_count_ = 0;
    bool fail_next_flush_ = false;
};

/// @brief What `memory_log::replay` returns: a forward view of `record_view`s
/// over the log's records. Written out rather than `std::views::transform`
/// over a subrange, which clang 15 cannot compile with libstdc++ 12.
class memory_log::replay_range : public std::ranges::view_base {
public:
    class iterator {
    public:
        using iterator_concept = std::forward_iterator_tag;
        using iterator_category = std::input_iterator_tag;  // yields values, not references
        using value_type = record_view;
        using difference_type = std::ptrdiff_t;

        iterator() = default;
        explicit iterator(const record* at) noexcept : at_(at) {}
        [[nodiscard]] record_view operator*() const noexcept { return at_->view(); }
        iterator& operator++() noexcept {
            ++at_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator before = *this;
            ++at_;
            return before;
        }
        friend bool operator==(const iterator&, const iterator&) = default;

    private:
        const record* at_ = nullptr;
    };

    replay_range() = default;
    explicit replay_range(std::span<const record> records) noexcept : records_(records) {}
    [[nodiscard]] iterator begin() const noexcept { return iterator(records_.data()); }
    [[nodiscard]] iterator end() const noexcept { return iterator(records_.data() + records_.size()); }
    [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
    [[nodiscard]] bool empty() const noexcept { return records_.empty(); }

private:
    std::span<const record> records_;
};

inline memory_log::replay_range memory_log::replay(offset_t from) const {
    const auto first = std::ranges::lower_bound(records_, from, {}, &record::offset);
    return replay_range(std::span<const record>(first, records_.end()));
}

}  // namespace strata
