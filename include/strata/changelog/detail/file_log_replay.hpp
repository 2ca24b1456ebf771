#pragma once
/// @file
/// @brief `basic_file_log::replay`: the snapshot of flushed bytes and unflushed
/// records it takes, and the range that reads it segment by segment.
/// Part of `basic_file_log` (changelog/file_log.hpp, which includes it):
/// the definitions of its members that do this one job.

#include <strata/changelog/file_log.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <vector>

namespace strata {

/// @brief The range `file_log::replay` returns: an input view whose elements
/// are `record_view`s. Copies share one read position. A view by
/// `std::ranges::view_base`, not `view_interface` (whose members it would not
/// use, and which clang 15 cannot instantiate with libstdc++ 12).
template <file_system Fs>
class basic_file_log<Fs>::replay_range : public std::ranges::view_base {
    struct source {
        std::filesystem::path path;
        std::uint64_t limit = 0;  ///< bytes of returned flushes when replay began
        /// The first source of a replay from inside it: where to start
        /// reading. Taken from the sealed segment's index file when the
        /// segment is opened (a compaction may have rewritten it since), or,
        /// for the active segment, from its entries when replay began.
        std::optional<detail::index_entry> seek;
        std::optional<offset_t> look_up_index;  ///< the base whose index file to ask
    };

    struct state {
        Fs fs;
        std::filesystem::path dir;
        std::vector<source> sources;
        byte_buffer pending;  ///< unflushed frames, copied when replay began
        offset_t from = 0;

        std::size_t index = 0;
        std::optional<typename Fs::file> file;
        std::optional<detail::segment_reader<Fs>> reader;
        std::size_t pending_pos = 0;
        std::optional<offset_t> last;
        record_view current;
        bool done = false;
        /// Enough records per batch for a restore to look ahead, few enough
        /// to stay in the processor's cache.
        static constexpr std::size_t max_batch = 256;
        std::vector<record_view> batch;
        bool batching = false;  ///< read with next_batch() since the last begin()
        std::exception_ptr deferred;  ///< met while filling a batch; thrown by the next call

        void restart() {
            rewind();
            batching = false;
            advance();
        }

        void rewind() {
            index = 0;
            reader.reset();
            file.reset();
            pending_pos = 0;
            last.reset();
            done = false;
            batch.clear();
            deferred = nullptr;
        }

        void advance() {
            while (step(true, current) == stepped::skipped) {
            }
        }

        /// The records read so far that the reader can hand out without a
        /// read (those in its buffer), at least one unless at the end; empty
        /// at the end. Valid until the next call.
        std::span<const record_view> next_batch() {
            batch.clear();
            if (deferred) std::rethrow_exception(deferred);
            if (done) return {};
            batch.reserve(max_batch);  // slots stay put while they are filled
            for (;;) {
                // Decoded in place (see frame::decode_body_into).
                record_view& slot = batch.emplace_back();
                stepped st;
                if (batch.size() == 1) {
                    st = step(true, slot);
                } else {
                    // Damage met after some records is reported with the
                    // next call: the records before it are handed out first,
                    // as iteration would.
                    try {
                        st = step(false, slot);
                    } catch (...) {
                        batch.pop_back();
                        deferred = std::current_exception();
                        break;
                    }
                }
                if (st == stepped::record) {
                    if (batch.size() == max_batch) break;
                    continue;
                }
                batch.pop_back();
                if (st != stepped::skipped) break;
            }
            return batch;
        }

        enum class stepped { record, skipped, would_read, end };

        /// One step of the replay: `record` fills `out`. Without
        /// `may_read` it stops (`would_read`) before anything that would
        /// move or free the bytes that views returned before point into: a
        /// refill of the reader's buffer, closing or opening a segment.
        stepped step(bool may_read, record_view& out) {
            if (done) return stepped::end;
            if (reader) {
                if (!may_read && !reader->next_is_buffered()) return stepped::would_read;
                const detail::segment_item it = reader->next(out);
                using kind = detail::segment_item::kind;
                if (it.what == kind::end) {
                    reader.reset();
                    file.reset();
                    ++index;
                    return stepped::skipped;
                }
                if (it.what == kind::bad) throw corruption_error(reader->path().string(), it.pos, it.problem);
                if (it.what == kind::commit) return stepped::skipped;
                if (last && out.offset <= *last)
                    throw corruption_error(reader->path().string(), it.pos, "record offset out of order");
                last = out.offset;
                return out.offset < from ? stepped::skipped : stepped::record;
            }
            if (index < sources.size()) {
                if (!may_read) return stepped::would_read;
                open_source(sources[index]);
                return stepped::skipped;
            }
            if (pending_pos >= pending.size()) {
                done = true;
                return stepped::end;
            }
            // The unflushed frames were copied when the replay began: views
            // into them stay valid.
            next_pending(out);
            return out.offset >= from ? stepped::record : stepped::skipped;
        }

        /// Opens one segment at a time, so a log of any number of segments
        /// replays within the limit on open files. A closed segment that a
        /// compaction rewrote since replay began is read whole (it holds a
        /// subset of the same records); one it removed is skipped (a later
        /// record supersedes each of its records).
        void open_source(const source& s) {
            if (!fs.exists(s.path)) {
                ++index;
                return;
            }
            file.emplace(fs.open_read(s.path));
            const std::uint64_t limit = std::min(fs.size(*file, s.path), s.limit);
            std::optional<detail::index_entry> seek = s.seek;
            if (s.look_up_index)
                if (const auto idx = detail::read_index(fs, dir, *s.look_up_index); idx && idx->first.bytes == limit)
                    seek = detail::seek_entry(idx->second, from);
            // An entry is a hint, checked before it is trusted: the record it
            // names must start where it says, else the segment is read whole.
            if (seek && seek->pos < limit) {
                reader.emplace(fs, *file, s.path, limit, seek->pos);
                const detail::segment_item first = reader->peek();
                if (first.what == detail::segment_item::kind::record && first.rec.offset == seek->offset) return;
            }
            reader.emplace(fs, *file, s.path, limit);
        }

        /// The buffer holds frames this process encoded itself; a bad one is a bug.
        void next_pending(record_view& out) {
            const char* problem = "";
            const std::byte* p = pending.data() + pending_pos;
            const auto info = detail::frame::check_prefix(p, problem);
            if (!info) throw usage_error(std::string("strata: file_log buffer damaged: ") + problem);
            std::uint64_t flush_bytes = 0;
            const auto kind = detail::frame::decode_body_into(
                *info, bytes_view(p + detail::frame::prefix_size, info->body_len), out, flush_bytes, problem);
            if (kind != detail::frame::body_kind::record)
                throw usage_error(std::string("strata: file_log buffer damaged: ") +
                                  (kind == detail::frame::body_kind::commit ? "a commit frame among records" : problem));
            pending_pos += info->frame_size();
        }
    };

public:
    /// @brief Input iterator over the records; `*it` is a `record_view`.
    class iterator {
    public:
        using value_type = record_view;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;
        explicit iterator(state* s) noexcept : s_(s) {}

        [[nodiscard]] record_view operator*() const noexcept { return s_->current; }
        iterator& operator++() {
            s_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
            return it.s_ == nullptr || it.s_->done;
        }

    private:
        state* s_ = nullptr;
    };

    replay_range() = default;

    /// @brief Starts (or restarts) reading at the first record >= from.
    [[nodiscard]] iterator begin() {
        if (!state_) return iterator{};
        state_->restart();
        return iterator{state_.get()};
    }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

    /// @brief The next records, as many as the replay has read already (up
    /// to 256, at least one until the end), so that a restore can look at
    /// the keys to come before it applies the first. Empty at the end.
    /// The views are valid until the next call. The first call starts at
    /// the first record >= from; a range is read either this way or with
    /// begin(), not both.
    [[nodiscard]] std::span<const record_view> next_batch() {
        if (!state_) return {};
        if (!state_->batching) {
            state_->rewind();
            state_->batching = true;
        }
        return state_->next_batch();
    }

private:
    friend class basic_file_log;
    std::shared_ptr<state> state_;
};

template <file_system Fs>
typename basic_file_log<Fs>::replay_range basic_file_log<Fs>::replay(offset_t from) const {
    replay_range out;
    out.state_ = std::make_shared<typename replay_range::state>();
    auto& st = *out.state_;
    st.fs = fs_;
    st.dir = dir_;
    st.from = from;
    if (from < durable_end_) {
        // Skip whole segments that end before `from`: segment i holds only
        // offsets below the base of segment i + 1. Then start the first one
        // near `from`, by its sparse index.
        std::size_t first = 0;
        while (first + 1 < segments_.size() && segments_[first + 1].base <= from) ++first;
        for (std::size_t i = first; i < segments_.size(); ++i)
            if (segments_[i].bytes > 0) st.sources.push_back({segments_[i].path, segments_[i].bytes, {}, {}});
        if (!st.sources.empty() && from > segments_[first].base && segments_[first].bytes > 0) {
            if (first + 1 == segments_.size())
                st.sources.front().seek = detail::seek_entry(active_index_.entries(), from);
            else
                st.sources.front().look_up_index = segments_[first].base;
        }
    }
    st.pending = pending_;
    return out;
}

}  // namespace strata
