#pragma once
/// @file
/// @brief `basic_file_log`'s compaction: the map of each key's latest offset over
/// the dirty tail, and the rewrite of sealed segments through it.
/// Part of `basic_file_log` (changelog/file_log.hpp, which includes it):
/// the definitions of its members that do this one job.

#include <strata/changelog/file_log.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata {

namespace detail {
/// Hashes std::string keys and the string_views that look them up alike.
struct string_view_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
};
}  // namespace detail

template <file_system Fs>
compaction_stats basic_file_log<Fs>::compact_pass(bool everything) {
    compaction_stats stats;
    const std::size_t sealed = segments_.size() - 1;
    if (sealed == 0) return stats;

    // The clean head: segments a compaction already went through, in which
    // each key appears at most once. The dirty tail after it is what the key
    // map is built from; `compact()` builds it from every sealed segment.
    std::size_t clean = 0;
    if (!everything)
        while (clean < sealed && segments_[clean].cleaned) ++clean;
    std::uint64_t dirty_bytes = 0, sealed_bytes = 0;
    for (std::size_t i = 0; i < sealed; ++i) {
        sealed_bytes += segments_[i].bytes;
        if (i >= clean) dirty_bytes += segments_[i].bytes;
    }
    if (!everything && (dirty_bytes == 0 ||
                        static_cast<double>(dirty_bytes) < options_.min_dirty_ratio * static_cast<double>(sealed_bytes)))
        return stats;
    std::size_t stop = clean + 1;  // the pass covers segments [0, stop)
    for (std::uint64_t taken = segments_[clean].bytes;
         stop < sealed && (everything || taken + segments_[stop].bytes <= options_.max_compaction_bytes); ++stop)
        taken += segments_[stop].bytes;
    stats.passes = 1;

    using kind = detail::segment_item::kind;
    // Calls fn(item) for each record and commit frame of a segment.
    auto for_each_frame = [this, &stats](const segment& s, auto&& fn) {
        const auto f = fs_.open_read(s.path);
        detail::segment_reader<Fs> reader(fs_, f, s.path, s.bytes);
        stats.bytes_read += s.bytes;
        for (;;) {
            const detail::segment_item it = reader.next();
            if (it.what == kind::end) return;
            if (it.what == kind::bad) throw corruption_error(s.path.string(), it.pos, it.problem);
            fn(it);
        }
    };

    // The latest offset of each key of the dirty part taken, and, for
    // `compact()`, of the active segment's flushed records (they supersede,
    // but are never rewritten). Automatic compaction leaves the active
    // segment out, as Kafka's cleaner does: reading up to `segment_bytes` at
    // every pass would cost more than the records it lets go a seal earlier.
    // Looked up by string_view: no key is copied to be looked up.
    std::unordered_map<std::string, offset_t, detail::string_view_hash, std::equal_to<>> latest;
    auto note_latest = [&](const detail::segment_item& it) {
        if (it.what != kind::record) return;
        const std::string_view key = as_chars(it.rec.key);
        if (const auto m = latest.find(key); m != latest.end()) m->second = it.rec.offset;
        else latest.emplace(std::string(key), it.rec.offset);
    };
    for (std::size_t i = clean; i < stop; ++i) for_each_frame(segments_[i], note_latest);
    if (everything && segments_.back().bytes > 0) for_each_frame(segments_.back(), note_latest);

    const std::int64_t now = now_ms();
    enum class verdict { keep, superseded, expired_tombstone };
    auto judge = [&](const segment& s, const detail::segment_item& it) {
        const auto m = latest.find(as_chars(it.rec.key));
        if (m != latest.end() && m->second > it.rec.offset) return verdict::superseded;
        // The latest record of its key in segments [0, stop), all of which
        // this pass rewrites oldest first: every older value of the key goes
        // before the tombstone does.
        if (!it.rec.value && s.sealed_at_ms + options_.delete_retention.count() <= now)
            return verdict::expired_tombstone;
        return verdict::keep;
    };

    // Segments leave `segments_` only once the manifest no longer lists
    // them, and a size changes only once the rename is done, so an exception
    // at any point leaves the log describing what is on disk.
    for (std::size_t i = 0; i < stop;) {
        segment& s = segments_[i];
        std::uint64_t keep = 0, drop = 0, tombstones = 0;
        detail::sparse_index_builder unchanged_entries(options_.index_interval_bytes);
        std::vector<std::uint64_t> dropped_at;  // where the frames to drop start, for the rewrite
        for_each_frame(s, [&](const detail::segment_item& it) {
            if (it.what != kind::record) return;
            unchanged_entries.add(it.rec.offset, it.pos);
            const verdict v = judge(s, it);
            if (v == verdict::keep) {
                ++keep;
                return;
            }
            ++drop;
            dropped_at.push_back(it.pos);
            if (v == verdict::expired_tombstone) ++tombstones;
        });
        if (drop == 0) {
            if (!s.cleaned || !s.indexed) {
                // Nothing to drop: only its index changes, to say it is clean.
                segment cleaned = s;
                cleaned.cleaned = true;
                detail::write_index_temp(fs_, dir_, cleaned.summary(), unchanged_entries.entries());
                detail::publish_index(fs_, dir_, s.base);
                fs_.sync_directory(dir_);
                s.cleaned = s.indexed = true;
            }
            ++i;
            continue;
        }
        stats.records_dropped += drop;
        stats.tombstones_dropped += tombstones;
        stats.bytes_before += s.bytes;
        if (keep == 0) {
            // Out of the manifest first: a crash before the files are gone
            // leaves files the next open recognizes as leftovers.
            std::vector<detail::manifest_entry> entries = manifest_entries();
            entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
            detail::write_manifest(fs_, dir_, entries);
            const auto path = s.path;
            const auto index_path = dir_ / detail::index_file_name(s.base);
            segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i));
            --stop;
            fs_.remove(path);
            if (fs_.exists(index_path)) fs_.remove(index_path);
            fs_.sync_directory(dir_);
            ++stats.segments_removed;
            continue;
        }
        auto temp = s.path;
        temp += temp_suffix;
        segment after = s;
        after.records = 0;
        after.cleaned = true;
        detail::sparse_index_builder entries(options_.index_interval_bytes);
        {
            const auto out = fs_.create_truncated(temp);
            byte_buffer buf;
            std::uint64_t written = 0;
            auto drain = [&] {
                fs_.append(out, buf, temp);
                written += buf.size();
                buf.clear();
            };
            // The records kept, then the segment's last commit frame, which
            // says where its flushes end.
            byte_buffer last_commit;
            std::size_t next_drop = 0;
            for_each_frame(s, [&](const detail::segment_item& it) {
                if (it.what == kind::commit) last_commit.assign(it.raw.begin(), it.raw.end());
                if (it.what != kind::record) return;
                if (next_drop < dropped_at.size() && dropped_at[next_drop] == it.pos) {
                    ++next_drop;
                    return;
                }
                entries.add(it.rec.offset, written + buf.size());
                if (after.records++ == 0) after.first = it.rec.offset;
                after.last = it.rec.offset;
                append_bytes(buf, it.raw);
                if (buf.size() >= (std::size_t{1} << 20)) drain();
            });
            append_bytes(buf, last_commit);
            drain();
            fs_.sync_data(out, temp);
            after.bytes = written;
        }
        detail::write_index_temp(fs_, dir_, after.summary(), entries.entries());
        // The segment, then its index: a crash between them leaves an index
        // of the old size, which opening sees does not fit, and reads the
        // segment instead.
        fs_.rename(temp, s.path);
        detail::publish_index(fs_, dir_, s.base);
        fs_.sync_directory(dir_);
        after.indexed = true;
        s = std::move(after);
        stats.bytes_after += s.bytes;
        ++stats.segments_rewritten;
        ++i;
    }
    return stats;
}


}  // namespace strata
