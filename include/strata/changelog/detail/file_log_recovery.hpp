#pragma once
/// @file
/// @brief What opening a `file_log` reads and trusts, and `verify` and `repair`:
/// the scan of the manifest, the witness and each segment (through its
/// index where it fits), the cut of an unfinished flush, the writing of
/// missing indexes, and the cut of a damaged log to its last intact flush.
/// Part of `basic_file_log` (changelog/file_log.hpp, which includes it):
/// the definitions of its members that do this one job.

#include <strata/changelog/file_log.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata {

template <file_system Fs>
typename basic_file_log<Fs>::scan_result basic_file_log<Fs>::scan(const Fs& fs, const std::filesystem::path& dir,
                                                                   scan_mode mode, std::uint64_t index_interval) {
    scan_result r;
    file_log_check& c = r.check;

    std::map<offset_t, std::filesystem::path> files;
    if (fs.exists(dir))
        for (const auto& name : fs.list(dir))
            if (const auto base = detail::parse_segment_file_name(name)) files.emplace(*base, dir / name);

    const auto manifest_path = dir / detail::manifest_name;
    if (const auto bytes = detail::read_small_file(fs, manifest_path)) {
        const char* problem = "";
        r.manifest = detail::decode_manifest(*bytes, problem);
        if (!r.manifest) {
            c.found_damage(manifest_path, 0, problem);
            return r;
        }
    } else if (!files.empty()) {
        // Creating a log writes its first, empty segment before the
        // manifest: a crash in between leaves only empty segment files.
        bool all_empty = true;
        for (const auto& [base, path] : files) {
            const auto f = fs.open_read(path);
            all_empty = all_empty && fs.size(f, path) == 0;
        }
        if (all_empty) {
            for (const auto& [base, path] : files) c.stray_files.push_back(path);
            return r;
        }
        c.found_damage(manifest_path, 0,
               "the manifest is missing, but the directory holds segments (or it was written by an older "
               "strata, whose logs had no manifest)");
        return r;
    } else {
        return r;  // a new log
    }
    if (const auto w = detail::read_small_file(fs, dir / detail::witness_name)) r.witness = detail::decode_witness(*w);

    // Segments the manifest lists; the first one missing ends the intact log.
    std::optional<std::size_t> missing;
    for (const auto& e : *r.manifest) {
        const auto path = dir / detail::segment_file_name(e.base);
        if (const auto it = files.find(e.base); it != files.end())
            files.erase(it);
        else if (!missing)
            missing = r.segments.size();
        r.segments.push_back(segment::make(e.base, path, e.end));
    }
    const std::size_t active = r.segments.size() - 1;
    scan_segments(fs, dir, r, missing.value_or(r.segments.size()), active, mode, index_interval);
    // Then, in the order a reader meets them: a missing segment; a file the
    // manifest does not list (left by a roll, empty, or by a compaction, a
    // closed segment whose records are all superseded; a newer file holding
    // data comes from neither); a witness of a segment the log never rolled to.
    if (c.intact && missing) {
        const segment& gone = r.segments[*missing];
        c.found_damage(gone.path, 0, "segment listed in the manifest is missing (offsets from " + std::to_string(gone.base) + " on)");
    }
    for (const auto& [base, path] : files) {
        c.stray_files.push_back(path);
        if (base > r.segments[active].base && c.intact) {
            const auto f = fs.open_read(path);
            if (fs.size(f, path) > 0) c.found_damage(path, 0, "segment file holds data but the manifest does not list it");
        }
    }
    if (c.intact && r.witness && r.witness->base > r.segments[active].base)
        c.found_damage(dir / detail::witness_name, 0,
               "the witness speaks of segment " + std::to_string(r.witness->base) +
                   ", newer than the active segment the manifest lists");
    return r;
}

template <file_system Fs>
bool basic_file_log<Fs>::index_fits(const Fs& fs, const typename Fs::file& f, const segment& s, std::uint64_t size,
                                    const detail::segment_summary& idx, std::optional<offset_t> last_before) {
    if (idx.base != s.base || idx.end != s.end || idx.bytes != size || size < detail::frame::commit_size) return false;
    if (idx.records > 0 && (idx.first < s.base || idx.first > idx.last || idx.last >= idx.end ||
                            (last_before && idx.first <= *last_before)))
        return false;
    std::array<std::byte, detail::frame::commit_size> tail{};
    if (fs.read_at(f, tail, size - tail.size(), s.path) != tail.size()) return false;
    const auto commit = detail::frame::valid_frame_at(tail.data(), tail.size());
    return commit && commit->commit && commit->rec.offset == idx.end;
}

template <file_system Fs>
void basic_file_log<Fs>::scan_segments(const Fs& fs, const std::filesystem::path& dir, scan_result& r,
                                       std::size_t count, std::size_t active, scan_mode mode,
                                       std::uint64_t index_interval) {
    file_log_check& c = r.check;
    std::optional<offset_t> last;  // offset of the last record seen
    c.intact_end = r.segments.empty() ? 0 : r.segments.front().base;
    for (std::size_t i = 0; i < count; ++i) {
        segment& s = r.segments[i];
        const bool is_active = i == active;
        r.intact_segments = i + 1;
        r.intact_bytes = 0;
        if (s.base < c.intact_end) {
            c.found_damage(s.path, 0, "segment starts at offset " + std::to_string(s.base) +
                                  ", below the end of the segment before it (" + std::to_string(c.intact_end) + ")");
            // None of it is intact: the log ends with the whole segment before it.
            r.intact_segments = i;
            r.intact_bytes = r.segments[i - 1].bytes;
            return;
        }
        c.intact_end = s.base;
        const std::uint64_t witnessed =
            is_active && r.witness && r.witness->base == s.base ? r.witness->bytes : 0;

        const auto f = fs.open_read(s.path);
        const std::uint64_t size = fs.size(f, s.path);
        // A closed segment with an index that fits is taken at its index's
        // word: this is what makes opening cost the same for any log size.
        // Damage inside it is found when a replay or verify reads it.
        std::optional<detail::segment_summary> index;
        if (!is_active)
            if (const auto idx = detail::read_index(fs, dir, s.base); idx && index_fits(fs, f, s, size, idx->first, last))
                index = idx->first;
        if (index && mode == scan_mode::trust_indexes) {
            s.bytes = size;
            s.records = index->records;
            s.first = index->first;
            s.last = index->last;
            s.sealed_at_ms = index->sealed_at_ms;
            s.cleaned = index->cleaned;
            s.indexed = true;
            c.records += index->records;
            if (index->records > 0) last = index->last;
            c.intact_end = index->end;
            r.intact_bytes = size;
            continue;
        }

        detail::segment_reader<Fs> reader(fs, f, s.path, size);
        detail::sparse_index_builder entries(index_interval);
        std::uint64_t unconfirmed = 0;  // records after the last commit frame
        std::optional<offset_t> first_unconfirmed;
        for (;;) {
            const detail::segment_item it = reader.next();
            using kind = detail::segment_item::kind;
            if (it.what == kind::end) break;
            if (it.what == kind::record) {
                if (it.rec.offset < s.base || (last && it.rec.offset <= *last)) {
                    c.found_damage(s.path, it.pos, "record offset " + std::to_string(it.rec.offset) + " is out of order");
                    return;
                }
                last = it.rec.offset;
                if (unconfirmed++ == 0) first_unconfirmed = it.rec.offset;
                entries.add(it.rec.offset, it.pos);
                continue;
            }
            if (it.what == kind::commit) {
                if (it.rec.offset < c.intact_end || (last && it.rec.offset <= *last)) {
                    c.found_damage(s.path, it.pos, "commit frame ends at offset " + std::to_string(it.rec.offset) +
                                               ", below a record it covers");
                    return;
                }
                c.intact_end = it.rec.offset;
                if (unconfirmed > 0) {
                    if (s.records == 0) s.first = *first_unconfirmed;
                    s.records += unconfirmed;
                    s.last = *last;
                }
                c.records += std::exchange(unconfirmed, 0);
                r.intact_bytes = it.pos + it.raw.size();
                continue;
            }
            // A damaged frame: in a closed segment, or in bytes a returned
            // flush wrote, or with a later flush's commit frame after it, it
            // is damage; else it is the torn end of a flush that never returned.
            if (!is_active) {
                c.found_damage(s.path, it.pos, it.problem);
                return;
            }
            if (it.pos < witnessed) {
                c.found_damage(s.path, it.pos, std::string(it.problem) + ", in bytes that returned flushes wrote (" +
                                           std::to_string(witnessed) + " bytes of this segment were flushed)");
                return;
            }
            // After a power loss, the pages of an unfinished flush may reach
            // the disk in any order: its own commit frame may be there with
            // a hole before it. That is still a torn flush. A commit frame of
            // a flush that began after the damage is not: that flush was
            // only written once the damaged one's fdatasync had returned.
            if (!it.runs_past_end) {
                const auto commits = detail::commit_frames_in(fs, f, s.path, it.resume, size);
                const bool own_commit_only = commits.size() == 1 && commits[0].flush_bytes <= commits[0].pos &&
                                             commits[0].pos - commits[0].flush_bytes == r.intact_bytes;
                if (!commits.empty() && !own_commit_only) {
                    c.found_damage(s.path, it.pos, std::string(it.problem) +
                                               ", and the commit frame of a later flush follows it at byte " +
                                               std::to_string(commits.back().pos));
                    return;
                }
            }
            break;
        }
        s.bytes = r.intact_bytes;
        entries.cut(s.bytes);
        s.entries = entries.entries();
        if (!is_active) {
            if (s.bytes != size) {
                c.found_damage(s.path, s.bytes, std::to_string(size - s.bytes) +
                                            " bytes follow the last commit frame of a closed segment");
                return;
            }
            if (c.intact_end != s.end) {
                c.found_damage(s.path, size, "the segment's flushes end at offset " + std::to_string(c.intact_end) +
                                         ", but the manifest says " + std::to_string(s.end) + ": offsets " +
                                         std::to_string(c.intact_end) + " to " + std::to_string(s.end - 1) + " are missing");
                return;
            }
            // Read whole: its index is missing, damaged, stale, or (verify)
            // says something else than the frames do.
            if (index && index->records == s.records && index->first == s.summary().first &&
                index->last == s.summary().last) {
                s.indexed = true;
                s.sealed_at_ms = index->sealed_at_ms;
                s.cleaned = index->cleaned;
            } else {
                c.unindexed_segments.push_back(s.path);
            }
        } else {
            c.unfinished_bytes = size - s.bytes;
            if (s.bytes < witnessed) {
                c.found_damage(s.path, s.bytes, "the segment holds flushes up to byte " + std::to_string(s.bytes) + " (offset " +
                                            std::to_string(c.intact_end) + "), but flushes up to byte " +
                                            std::to_string(witnessed) + " (offset " + std::to_string(r.witness->end) +
                                            ") returned: the rest is missing");
                return;
            }
        }
    }
}

template <file_system Fs>
void basic_file_log<Fs>::write_missing_indexes() noexcept {
    // Sealed before this open, at the latest: dating it now only keeps its
    // tombstones longer than asked, never shorter.
    std::int64_t now = 0;
    try {
        now = now_ms();
    } catch (...) {
    }
    for (std::size_t i = 0; i + 1 < segments_.size(); ++i)
        if (!segments_[i].indexed) {
            segments_[i].sealed_at_ms = now;
            segments_[i].cleaned = false;
        }
    try {
        bool wrote = false;
        for (std::size_t i = 0; i + 1 < segments_.size(); ++i) {
            segment& s = segments_[i];
            if (s.indexed) continue;
            detail::write_index_temp(fs_, dir_, s.summary(), s.entries);
            detail::publish_index(fs_, dir_, s.base);
            s.entries = {};
            s.entries.shrink_to_fit();
            s.indexed = wrote = true;
        }
        if (wrote) fs_.sync_directory(dir_);
    } catch (...) {
    }
}

template <file_system Fs>
void basic_file_log<Fs>::open() {
    fs_.create_directories(dir_);
    lock_ = fs_.lock(dir_ / lock_name);
    // What this open reads must be durable before it removes anything on its
    // word: a process that died between renaming a manifest and syncing the
    // directory leaves a manifest that only the page cache holds, and removing
    // the segment it no longer lists could, after a power loss, bring back the
    // old manifest without that segment.
    if (fs_.exists(dir_)) fs_.sync_directory(dir_);
    for (const auto& name : fs_.list(dir_))
        if (name.ends_with(temp_suffix) || name.ends_with(detail::index_temp_suffix) ||
            name == detail::manifest_temp_name)
            fs_.remove(dir_ / name);  // left by an interrupted compaction, seal or manifest write

    scan_result r = scan(fs_, dir_, scan_mode::trust_indexes, options_.index_interval_bytes);
    const file_log_check& c = r.check;
    if (!c.intact)
        throw corruption_error(c.damaged_file.string(), c.damaged_byte, c.problem + repair_hint(dir_, c));

    const auto witness_path = dir_ / detail::witness_name;
    if (!r.manifest) {
        // A new log: its first segment, then the manifest naming it.
        for (const auto& stray : c.stray_files) fs_.remove(stray);
        active_ = fs_.create_new(dir_ / detail::segment_file_name(0));
        segments_.push_back(segment::make(0, dir_ / detail::segment_file_name(0), 0));
        witness_ = fs_.create_truncated(witness_path);
        remove_orphan_indexes(fs_, dir_, segments_);
        fs_.sync_directory(dir_);
        detail::write_manifest(fs_, dir_, manifest_entries());
        write_witness(true);
        return;
    }
    for (const auto& stray : c.stray_files) fs_.remove(stray);
    if (!c.stray_files.empty()) fs_.sync_directory(dir_);
    segments_ = std::move(r.segments);
    remove_orphan_indexes(fs_, dir_, segments_);
    write_missing_indexes();
    segment& s = segments_.back();
    active_index_ = detail::sparse_index_builder(options_.index_interval_bytes, std::move(s.entries));
    if (c.unfinished_bytes > 0) {
        const auto f = fs_.open_write(s.path);
        fs_.truncate(f, s.bytes, s.path);
        fs_.sync_data(f, s.path);
        truncated_bytes_ = c.unfinished_bytes;
    }
    next_offset_ = durable_end_ = c.intact_end;
    active_ = fs_.open_append(s.path);
    // What the log adopts may so far live only in the page cache (a flush
    // whose process died before its fdatasync returned, a manifest renamed
    // but not synced): make it durable before anything is built on it.
    fs_.sync_data(active_, s.path);
    fs_.sync_directory(dir_);
    if (fs_.exists(witness_path)) {
        witness_ = fs_.open_write(witness_path);
    } else {
        witness_ = fs_.create_truncated(witness_path);
        fs_.sync_directory(dir_);
    }
    witness_sequence_ = r.witness ? r.witness->sequence : 0;
    write_witness(true);
}

template <file_system Fs>
file_log_check basic_file_log<Fs>::repair(const std::filesystem::path& dir, Fs fs) {
    const auto lock = fs.lock(dir / lock_name);
    fs.sync_directory(dir);  // as in open: build only on what is durable
    scan_result r = scan(fs, dir, scan_mode::every_frame);
    if (!r.manifest) {
        // Rebuild a lost manifest from the segment files: each closed one
        // ends where its last commit frame says.
        std::vector<detail::manifest_entry> entries;
        for (const auto& name : fs.list(dir))
            if (const auto base = detail::parse_segment_file_name(name)) entries.push_back({*base, 0});
        if (entries.empty()) {
            // No segment to rebuild it from: the log holds nothing, and opens
            // as a new log once its damaged manifest is gone.
            if (fs.exists(dir / detail::manifest_name)) {
                fs.remove(dir / detail::manifest_name);
                fs.sync_directory(dir);
            }
            return r.check;
        }
        std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
        for (std::size_t i = 0; i + 1 < entries.size(); ++i) {
            const auto path = dir / detail::segment_file_name(entries[i].base);
            const auto f = fs.open_read(path);
            detail::segment_reader<Fs> reader(fs, f, path, fs.size(f, path));
            entries[i].end = entries[i].base;
            for (auto it = reader.next(); it.what == detail::segment_item::kind::record ||
                                          it.what == detail::segment_item::kind::commit;
                 it = reader.next())
                if (it.what == detail::segment_item::kind::commit) entries[i].end = it.rec.offset;
        }
        detail::write_manifest(fs, dir, entries);
        r = scan(fs, dir, scan_mode::every_frame);
    }
    file_log_check out = r.check;
    std::vector<detail::manifest_entry> kept;
    for (std::size_t i = 0; i < r.intact_segments; ++i) kept.push_back({r.segments[i].base, r.segments[i].end});
    if (kept.empty()) kept.push_back({out.intact_end, 0});
    kept.back().end = 0;  // the last one kept is the active segment now
    const auto active_path = dir / detail::segment_file_name(kept.back().base);
    const std::uint64_t active_bytes = r.intact_segments > 0 ? r.intact_bytes : 0;

    if (out.intact && out.unfinished_bytes == 0 && out.stray_files.empty()) return out;
    if (!fs.exists(active_path)) (void)fs.create_new(active_path);
    {
        const auto f = fs.open_write(active_path);
        const auto f_read = fs.open_read(active_path);
        const std::uint64_t size = fs.size(f_read, active_path);
        if (size > active_bytes) {
            fs.truncate(f, active_bytes, active_path);
            fs.sync_data(f, active_path);
            out.bytes_cut += size - active_bytes;
        }
    }
    fs.sync_directory(dir);
    detail::write_manifest(fs, dir, kept);
    std::vector<std::filesystem::path> remove = out.stray_files;
    for (std::size_t i = r.intact_segments; i < r.segments.size(); ++i) remove.push_back(r.segments[i].path);
    for (const auto& p : remove) {
        if (p == active_path || !fs.exists(p)) continue;
        {
            const auto f = fs.open_read(p);
            out.bytes_cut += fs.size(f, p);
        }
        fs.remove(p);
        ++out.segments_removed;
    }
    std::vector<segment> left;
    for (const auto& e : kept) left.push_back(segment::make(e.base, dir / detail::segment_file_name(e.base), e.end));
    remove_orphan_indexes(fs, dir, left);
    fs.sync_directory(dir);
    // A witness of the cut log: what it holds now was flushed.
    const auto witness_path = dir / detail::witness_name;
    const auto wf = fs.create_truncated(witness_path);
    const detail::witness w{(r.witness ? r.witness->sequence : 0) + 1, kept.back().base, active_bytes, out.intact_end};
    fs.write_at(wf, detail::encode_witness(w), (w.sequence % 2) * detail::witness_slot_stride, witness_path);
    fs.sync_data(wf, witness_path);
    fs.sync_directory(dir);
    return out;
}

}  // namespace strata
