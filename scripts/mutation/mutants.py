"""The mutants of scripts/mutation-check.sh: deliberate defects in the code
that keeps strata's promises, each of which some test must catch.

Each mutant has:
  name        a word for it
  anchor      where it applies (see locate.py): a chain of texts, the first
              unique under include/, each next unique in the block before
  what        what it breaks, as a user would notice
  edits       (text, replacement): each text occurs once in the last block
  tests       a regex over test program names (test/<dir>/<name>_test.cpp is
              the program <dir>_<name>_test): the programs that must catch it
  kafka       its tests need a broker (scripts/kafka-broker.sh)
  equivalent  why no test can catch it, for a mutant that changes nothing a
              test could see (run only with --only or --all)
"""

DURABILITY = r"^(changelog|restore|decorators|laws)_"
RUNTIME_UNIT = r"^runtime_unit_"


def mutant(name, anchor, what, edits, tests=DURABILITY, kafka=False, equivalent=None):
    return {"name": name, "anchor": anchor, "what": what, "edits": edits, "tests": tests, "kafka": kafka,
            "equivalent": equivalent}


MUTANTS = [
    # --- the file log: flush, open, the segment reader, frames, compaction
    mutant("no-fdatasync", ["class basic_file_log {", "offset_t flush() {"],
           "file_log::flush writes the frames and the commit frame but never fdatasyncs them: a power loss "
           "can lose a flush that returned",
           [("fs_.append(active_, pending_, s.path); fs_.sync_data(active_, s.path);",
             "fs_.append(active_, pending_, s.path);")]),
    mutant("flush-end-off-by-one", ["class basic_file_log {", "offset_t flush() {"],
           "file_log::flush returns one less than the durable end (the checkpoint then names it)",
           [("compact_automatically(); return durable_end_;", "compact_automatically(); return durable_end_ - 1;")]),
    mutant("end-off-by-one", ["void basic_file_log<Fs>::open() {"],
           "opening a log sets its end (and the next offset) one past the end of its last flush",
           [("next_offset_ = durable_end_ = c.intact_end;", "next_offset_ = durable_end_ = c.intact_end + 1;")]),
    mutant("unfinished-not-cut", ["void basic_file_log<Fs>::open() {"],
           "opening a log does not truncate the bytes of an unfinished flush: the next flush is appended "
           "after the torn frames",
           [("if (c.unfinished_bytes > 0) {", "if (false && c.unfinished_bytes > 0) {")]),
    mutant("witness-ignored", ["void basic_file_log<Fs>::scan_segments("],
           "opening a log ignores the witness (how far returned flushes wrote the active segment): a lost or "
           "damaged returned flush at the end is cut as if it never returned",
           [("is_active && r.witness && r.witness->base == s.base ? r.witness->bytes : 0;",
             "is_active && r.witness && r.witness->base == s.base ? std::uint64_t{0} : 0;")]),
    mutant("commit-ignored", ["void basic_file_log<Fs>::scan_segments("],
           "the open-time scan counts a record as committed as soon as it is read: frames after the last "
           "commit frame (a flush that never returned) are kept instead of cut",
           [("last = it.rec.offset; if (unconfirmed++ == 0) first_unconfirmed = it.rec.offset;",
             "last = it.rec.offset;\n"
             "                c.intact_end = it.rec.offset + 1;\n"
             "                ++c.records;\n"
             "                r.intact_bytes = it.pos + it.raw.size();\n"
             "                if (s.records++ == 0) s.first = it.rec.offset;\n"
             "                s.last = it.rec.offset;\n")]),
    mutant("wrong-resume", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes one byte past the "
           "frame's end: a commit frame right after it goes unseen",
           [("it.resume = pos_ + info->frame_size();", "it.resume = pos_ + info->frame_size() + 1;")],
           equivalent="the scan after a bad body collects every valid commit frame from the resume point on, "
                      "and calls the damage a torn tail only when there is none, or exactly one whose flush began "
                      "at the last intact commit (its own). The only frame resume+1 misses is a commit frame "
                      "right after the bad frame, which is then the bad frame's own commit: missing it leaves "
                      "either no commit (torn, as with it) or later flushes' commits only, and any of those "
                      "began after it (damage, as with it)."),
    mutant("resume-at-end", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes at the end of the "
           "file: no later commit frame is ever seen",
           [("it.resume = pos_ + info->frame_size();", "it.resume = limit_;")]),
    mutant("resume-inside-frame", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes at the next byte "
           "instead of after the frame: bytes inside the damaged frame (a value that holds a commit frame) are "
           "taken for a later flush's commit, and a torn flush is reported as damage",
           [("it.resume = pos_ + info->frame_size();", "it.resume = pos_ + 1;")]),
    mutant("tombstone-flag-dropped", ["inline void encode(byte_buffer& out, const record_view& r, offset_t offset) {"],
           "the frame encoder never sets the tombstone flag: a tombstone reads back as a live empty value",
           [("encode_frame(out, r.value ? std::uint8_t{0} : tombstone_flag,", "encode_frame(out, std::uint8_t{0},")]),
    mutant("compaction-resurrects-deleted", ["compaction_stats basic_file_log<Fs>::compact_pass("],
           "compaction ignores tombstones when it finds each key's latest record: it drops the tombstone and "
           "keeps the deleted key's older value",
           [("if (it.what != kind::record) return; const std::string_view key = as_chars(it.rec.key);",
             "if (it.what != kind::record || !it.rec.value) return;\n"
             "        const std::string_view key = as_chars(it.rec.key);")]),

    # --- the logged and cached decorators
    mutant("checkpoint-before-flush", ["class logged_store :", "offset_t flush() {"],
           "logged::flush saves the checkpoint (the log's end offset) before it flushes the log: a failed or "
           "interrupted flush leaves a checkpoint naming records that are not durable",
           [("const offset_t durable = log().flush();", "if (opts_.checkpoint_on_flush) save_checkpoint(log().end_offset());\n"
                                                       "        const offset_t durable = log().flush();"),
            ("if (opts_.checkpoint_on_flush) save_checkpoint(durable);", "")]),
    mutant("dropped-tombstone", ["class logged_store :", "void log_key(const log_key_type& k) {"],
           "logged writes the record of a key that no longer exists as a live empty value instead of a "
           "tombstone (codecs that read the value from the store)",
           [("return codec_.write_value(std::as_const(inner_), k, out);",
             "codec_.write_value(std::as_const(inner_), k, out);\n            return true;")]),
    mutant("dropped-tombstone-fixed", ["class logged_store :", "void append_state("],
           "logged writes an erase of a key with raw or fixed-width bytes (strings, integers) as a live empty "
           "value instead of a tombstone",
           [("append_view(r);", "if (!r.value) r.value = bytes_view{};\n            append_view(r);")]),
    mutant("cached-tombstone-dropped", ["class cached_store :", "void write_record(const entry& e) const {"],
           "the cache's flush (or eviction) of an entry known to be deleted writes nothing, so no tombstone "
           "reaches the changelog",
           [("if (e.cached.known) return inner_.log_state(e.key, e.cached.value);",
             "if (e.cached.known) {\n"
             "                if (!e.cached.value) return;\n"
             "                return inner_.log_state(e.key, e.cached.value);\n"
             "            }")]),
    mutant("skipped-dirty-entry", ["class cached_store :", "auto flush() {"],
           "the cache's flush writes every second dirty entry only (a single dirty entry is still written)",
           [("while (entry* e = entries_.oldest_dirty()) { write_record(*e);",
             "for (std::size_t n = 0; entry* e = entries_.oldest_dirty(); ++n) {\n"
             "                if (n % 2 == 0) write_record(*e);")]),
    mutant("evicted-dirty-lost", ["class cached_store :", "void evict_beyond_bound("],
           "evicting a dirty entry drops it without writing its record",
           [("if constexpr (logs) write_record(*victim);", "")]),
]
