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

# The programs each group's mutants are run against: those that caught them
# when they were made (a mutant a narrower set misses is widened, not dropped).
FILE_LOG = r"^changelog_"
DECORATORS = r"^decorators_"


def mutant(name, anchor, what, edits, tests, kafka=False, equivalent=None):
    return {"name": name, "anchor": anchor, "what": what, "edits": edits, "tests": tests, "kafka": kafka,
            "equivalent": equivalent}


MUTANTS = [
    # --- the file log: flush, open, the segment reader, frames, compaction
    mutant("no-fdatasync", ["class basic_file_log {", "offset_t flush() {"],
           "file_log::flush writes the frames and the commit frame but never fdatasyncs them: a power loss "
           "can lose a flush that returned",
           [("fs_.append(active_, pending_, s.path); fs_.sync_data(active_, s.path);",
             "fs_.append(active_, pending_, s.path);")],
           tests=FILE_LOG),
    mutant("flush-end-off-by-one", ["class basic_file_log {", "offset_t flush() {"],
           "file_log::flush returns one less than the durable end (the checkpoint then names it)",
           [("compact_automatically(); return durable_end_;", "compact_automatically(); return durable_end_ - 1;")],
           tests=FILE_LOG),
    mutant("end-off-by-one", ["void basic_file_log<Fs>::open() {"],
           "opening a log sets its end (and the next offset) one past the end of its last flush",
           [("next_offset_ = durable_end_ = c.intact_end;", "next_offset_ = durable_end_ = c.intact_end + 1;")],
           tests=FILE_LOG),
    mutant("unfinished-not-cut", ["void basic_file_log<Fs>::open() {"],
           "opening a log does not truncate the bytes of an unfinished flush: the next flush is appended "
           "after the torn frames",
           [("if (c.unfinished_bytes > 0) {", "if (false && c.unfinished_bytes > 0) {")],
           tests=FILE_LOG),
    mutant("witness-ignored", ["void basic_file_log<Fs>::scan_segments("],
           "opening a log ignores the witness (how far returned flushes wrote the active segment): a lost or "
           "damaged returned flush at the end is cut as if it never returned",
           [("is_active && r.witness && r.witness->base == s.base ? r.witness->bytes : 0;",
             "is_active && r.witness && r.witness->base == s.base ? std::uint64_t{0} : 0;")],
           tests=FILE_LOG),
    mutant("commit-ignored", ["void basic_file_log<Fs>::scan_segments("],
           "the open-time scan counts a record as committed as soon as it is read: frames after the last "
           "commit frame (a flush that never returned) are kept instead of cut",
           [("last = it.rec.offset; if (unconfirmed++ == 0) first_unconfirmed = it.rec.offset;",
             "last = it.rec.offset;\n"
             "                c.intact_end = it.rec.offset + 1;\n"
             "                ++c.records;\n"
             "                r.intact_bytes = it.pos + it.raw.size();\n"
             "                if (s.records++ == 0) s.first = it.rec.offset;\n"
             "                s.last = it.rec.offset;\n")],
           tests=FILE_LOG),
    mutant("wrong-resume", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes one byte past the "
           "frame's end: a commit frame right after it goes unseen",
           [("it.resume = pos_ + info->frame_size();", "it.resume = pos_ + info->frame_size() + 1;")],
           tests=FILE_LOG,
           equivalent="the scan after a bad body collects every valid commit frame from the resume point on, "
                      "and calls the damage a torn tail only when there is none, or exactly one whose flush began "
                      "at the last intact commit (its own). The only frame resume+1 misses is a commit frame "
                      "right after the bad frame, which is then the bad frame's own commit: missing it leaves "
                      "either no commit (torn, as with it) or later flushes' commits only, and any of those "
                      "began after it (damage, as with it)."),
    mutant("resume-at-end", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes at the end of the "
           "file: no later commit frame is ever seen",
           [("it.resume = pos_ + info->frame_size();", "it.resume = limit_;")],
           tests=FILE_LOG),
    mutant("resume-inside-frame", ["void read(segment_item& it, record_view& rec) {"],
           "after a frame whose prefix is intact but whose body is bad, the reader resumes at the next byte "
           "instead of after the frame: bytes inside the damaged frame (a value that holds a commit frame) are "
           "taken for a later flush's commit, and a torn flush is reported as damage",
           [("it.resume = pos_ + info->frame_size();", "it.resume = pos_ + 1;")],
           tests=FILE_LOG),
    mutant("tombstone-flag-dropped", ["inline void encode(byte_buffer& out, const record_view& r, offset_t offset) {"],
           "the frame encoder never sets the tombstone flag: a tombstone reads back as a live empty value",
           [("encode_frame(out, r.value ? std::uint8_t{0} : tombstone_flag,", "encode_frame(out, std::uint8_t{0},")],
           tests=FILE_LOG),
    mutant("compaction-resurrects-deleted", ["compaction_stats basic_file_log<Fs>::compact_pass("],
           "compaction ignores tombstones when it finds each key's latest record: it drops the tombstone and "
           "keeps the deleted key's older value",
           [("if (it.what != kind::record) return; const std::string_view key = as_chars(it.rec.key);",
             "if (it.what != kind::record || !it.rec.value) return;\n"
             "        const std::string_view key = as_chars(it.rec.key);")],
           tests=FILE_LOG),

    # --- the logged and cached decorators
    mutant("checkpoint-before-flush", ["class logged_store :", "offset_t flush() {"],
           "logged::flush saves the checkpoint (the log's end offset) before it flushes the log: a failed or "
           "interrupted flush leaves a checkpoint naming records that are not durable",
           [("const offset_t durable = log().flush();", "if (opts_.checkpoint_on_flush) save_checkpoint(log().end_offset());\n"
                                                       "        const offset_t durable = log().flush();"),
            ("if (opts_.checkpoint_on_flush) save_checkpoint(durable);", "")],
           tests=DECORATORS),
    mutant("dropped-tombstone", ["class logged_store :", "void log_key(const log_key_type& k) {"],
           "logged writes the record of a key that no longer exists as a live empty value instead of a "
           "tombstone (codecs that read the value from the store)",
           [("return codec_.write_value(std::as_const(inner_), k, out);",
             "codec_.write_value(std::as_const(inner_), k, out);\n            return true;")],
           tests=r"^(decorators|laws|codec)_"),
    mutant("dropped-tombstone-fixed", ["class logged_store :", "void append_state("],
           "logged writes an erase of a key with raw or fixed-width bytes (strings, integers) as a live empty "
           "value instead of a tombstone",
           [("append_view(r);", "if (!r.value) r.value = bytes_view{};\n            append_view(r);")],
           tests=DECORATORS),
    mutant("cached-tombstone-dropped", ["class cached_store :", "void write_record(const entry& e) const {"],
           "the cache's flush (or eviction) of an entry known to be deleted writes nothing, so no tombstone "
           "reaches the changelog",
           [("if (e.cached.known) return inner_.log_state(e.key, e.cached.value);",
             "if (e.cached.known) {\n"
             "                if (!e.cached.value) return;\n"
             "                return inner_.log_state(e.key, e.cached.value);\n"
             "            }")],
           tests=DECORATORS),
    mutant("skipped-dirty-entry", ["class cached_store :", "auto flush() {"],
           "the cache's flush writes every second dirty entry only (a single dirty entry is still written)",
           [("while (entry* e = entries_.oldest_dirty()) { write_record(*e);",
             "for (std::size_t n = 0; entry* e = entries_.oldest_dirty(); ++n) {\n"
             "                if (n % 2 == 0) write_record(*e);")],
           tests=DECORATORS),
    mutant("evicted-dirty-lost", ["class cached_store :", "void evict_beyond_bound("],
           "evicting a dirty entry drops it without writing its record",
           [("if constexpr (logs) write_record(*victim);", "")],
           tests=DECORATORS),
    # --- the metered decorator
    mutant("cache-hits-as-misses", ["class metered_store :", "auto read(Fetch fetch) const {"],
           "the metered layer counts a read the cache answered as a miss and one it passed on as a hit: the "
           "published hits, misses and hit ratio are upside down",
           [("if (cache().hits() != hits_before) m_.hits->inc();", "if (cache().hits() == hits_before) m_.hits->inc();")],
           tests=r"^decorators_metered_test$"),
    mutant("read-evictions-uncounted", ["class metered_store :", "auto read(Fetch fetch) const {"],
           "the metered layer takes a read through the cache for one that writes nothing: the records a read's "
           "eviction writes to the changelog are missing from strata_changelog_records_total",
           [("return observed(m_.get, [&] {", "return observed<false>(m_.get, [&] {")],
           tests=r"^decorators_metered_test$"),

    # --- restore and checkpoints
    # (restore_from's signature cannot be the anchor: the block after it would be the '{}' of a default argument)
    mutant("restore-one-short", ["auto apply = [&](const record_view& r) {"],
           "a restore stops one record short of the end offset it took at the start: the newest update in the "
           "changelog is missing from every restored store",
           [("if (r.offset >= p.to) return false;", "if (r.offset + 1 >= p.to) return false;")],
           tests=r"^restore_batches_test$"),
    mutant("restore-past-checkpoint",
           ["offset_t restore_start(const Inner& inner, Log& log, std::string_view name, const logged_options& opts) {"],
           "a persistent store restores from one past its checkpoint (taken for the last offset applied rather "
           "than the first one not applied): the record at the checkpoint is never restored",
           [("from = checkpoint_file(*opts.checkpoint).load(name, opts.partition).value_or(0);",
             "if (const auto saved = checkpoint_file(*opts.checkpoint).load(name, opts.partition)) from = *saved + 1;")],
           tests=r"^decorators_logged_test$"),
    mutant("checkpoint-damage-ignored", ["class checkpoint_file {", "entries_type parse(bytes_view bytes) const {"],
           "a checkpoint file whose checksum does not match reads as an empty one instead of being refused: a "
           "damaged checkpoint is taken for no checkpoint, and the next save overwrites it, dropping every other "
           "store's entry",
           [('fail(crc_at, "checkpoint checksum mismatch");', "return {};")],
           tests=r"^restore_checkpoint_test$"),

    # --- the Kafka changelog
    mutant("flush-before-acks", ["class producer {", "void wait(const delivery_tracker& tracker) {"],
           "a Kafka changelog's flush serves the delivery reports that have arrived and returns without waiting "
           "for the others: records the broker has not acknowledged are taken for durable (and a commit after "
           "the flush marks their inputs consumed)",
           [("while (tracker.in_flight != 0) (void)rd_kafka_flush(client_.get(), 100);",
             "if (tracker.in_flight != 0) (void)rd_kafka_poll(client_.get(), 0);")],
           tests=r"^kafka_changelog_test$", kafka=True),
    mutant("delivery-failure-ignored", ["class changelog {", "offset_t flush() {"],
           "a Kafka changelog's flush returns normally after a record was not acknowledged (the broker refused "
           "it, or message.timeout.ms ran out): a lost update is reported durable",
           [("producer_->wait(*tracker_); throw_if_failed();", "producer_->wait(*tracker_);")],
           tests=r"^kafka_network_faults_test$", kafka=True),
    mutant("aborted-records-restored", ["inline client make_consumer(const changelog_options& o) {"],
           "a Kafka changelog is read uncommitted whatever read_committed says: a restore applies the records of "
           "aborted transactions (a fenced instance's, a failed commit's), as if the abort had not happened",
           [("c.set(replay_consumer_settings(o.read_committed));", "c.set(replay_consumer_settings(false));")],
           tests=r"^kafka_fencing_test$", kafka=True),

    mutant("abort-commits", ["class exactly_once {", "void abort_within(clock::time_point deadline) {"],
           "aborting a transaction commits it instead: what a failed task wrote (outputs and changelog records "
           "of updates its store will not keep) becomes visible to read_committed readers and restores",
           [("return rd_kafka_abort_transaction(producer_->get(), ms);",
             "return rd_kafka_commit_transaction(producer_->get(), ms);")],
           tests=r"^kafka_fencing_test$", kafka=True),

    # --- the runtime: commits
    mutant("store-commit-before-transaction", ["class committer {", "commit_outcome commit(const std::vector<T*>& ts, commit_kind kind = commit_kind::handover) {"],
           "under exactly-once, stores that keep their committed offset in their own data (RocksDB) commit "
           "before the transaction does: after an aborted transaction they keep its updates, and the inputs "
           "processed again count twice",
           [("if (port_->commit_transaction(offsets) == transaction_end::aborted) {",
             "for (T* t : ts) t->commit_self_checkpointing_stores();\n"
             "            if (port_->commit_transaction(offsets) == transaction_end::aborted) {"),
            ("port_->begin_transaction(); for (T* t : ts) t->commit_self_checkpointing_stores();",
             "port_->begin_transaction();")],
           tests=r"^runtime_unit_committer_test$"),
    mutant("offsets-before-outputs", ["class committer {", "commit_outcome commit(const std::vector<T*>& ts, commit_kind kind = commit_kind::handover) {"],
           "under at-least-once, a commit sends the input offsets without waiting for the output records: an "
           "output the broker then refuses is lost, its input marked consumed",
           [("const output_failures lost = port_->flush_output();", "const output_failures lost{};")],
           tests=r"^runtime_unit_committer_test$"),

    mutant("handover-waits-for-rejoin", ["class committer {", "commit_outcome commit(const std::vector<T*>& ts, commit_kind kind = commit_kind::handover) {"],
           "under exactly-once, the commit that hands tasks over waits while the member joins the group again: "
           "a released task's work stays in the open transaction, to commit later without its input offsets, "
           "while its next owner processes those inputs again",
           [("if (o_.exactly_once && kind == commit_kind::interval && defer_while_rejoining())",
             "if (o_.exactly_once && (kind == commit_kind::interval || kind == commit_kind::handover) && "
             "defer_while_rejoining())")],
           tests=r"^runtime_unit_committer_test$"),
    mutant("deferred-without-bound", ["class committer {", "bool defer_while_rejoining() {"],
           "under exactly-once, commits wait for as long as the member joins the group again: a group that "
           "keeps rebalancing keeps one transaction open until the broker aborts it",
           [("if (now - *deferring_since_ >= o_.defer_at_most) {", "if (false) {")],
           tests=r"^runtime_unit_committer_test$"),
    mutant("commit-width-unbounded", ["class commit_width {", "bool admits(std::int32_t task, std::size_t partitions) {"],
           "a commit covers every partition its tasks wrote, however many: hundreds of tasks starting together "
           "make commits that outlive their records' delivery bound, and every task is rebuilt again and again",
           [("if (limit_ != 0 && width_ != 0 && width_ + partitions > limit_) {", "if (false) {")],
           tests=r"^runtime_unit_commit_width_test$"),
    mutant("standby-resumed-where-librdkafka-was", ["class changelog_reader {", "void resume_at(const std::vector<position>& replays) {"],
           "a paced standbys' reader resumes each partition where librdkafka's consumer last was, not at the "
           "offset its standby reads next: a standby is sent back below its position and rebuilt from its "
           "changelog's start, and a warm copy is lost at every failover",
           [("if (at >= 0 && at != want.next) elsewhere.push_back(want);", "(void)at; (void)want;")],
           tests=r"^runtime_failover_test$", kafka=True),
    mutant("commit-width-never-emptied", ["class instance {", "void commit(const std::vector<task*>& ts,"],
           "the partitions a commit covered still count after it: once the limit is reached, no record of a "
           "task outside the first commit's is ever processed again",
           [("if (outcome != detail::commit_outcome::held && outcome != detail::commit_outcome::deferred) "
             "width_.committed();", "")],
           tests=r"^runtime_application_test$", kafka=True),
    mutant("pacing-whatever-the-count", ["class follow_pacer {", "void before_look(clock::time_point now, std::size_t followed) {"],
           "the standbys' reader is paced whatever number of partitions it follows: every instance with a "
           "standby, however few, sees its standbys and their lag up to an interval old",
           [("engaged_ = every_.count() > 0 && pause_ != nullptr && followed > 0 && followed >= from_;",
             "engaged_ = every_.count() > 0 && pause_ != nullptr; (void)followed;")],
           tests=r"^runtime_unit_follow_pacer_test$"),

    # --- store kinds: windows, sessions, versions, record times
    mutant("window-kept-at-retention", ["class window_store {", "bool expired(std::int64_t start_ms) const noexcept {"],
           "a window store keeps a window that starts exactly retention before its stream time, which Kafka "
           "Streams has dropped: the two restore the same changelog to different contents",
           [("return stream_time_ && start_ms <= detail::minus_saturating(*stream_time_, retention_ms_);",
             "return stream_time_ && start_ms < detail::minus_saturating(*stream_time_, retention_ms_);")],
           tests=r"^stores_window_store_test$"),
    mutant("merged-sessions-kept", ["class session_aggregator {", "auto aggregate("],
           "a record that bridges two sessions puts the merged session but leaves the sessions it merged: "
           "their counts are counted twice",
           [("for (auto& m : merged) stack.apply(session_erase<K>{std::move(m.session)});", "")],
           tests=r"^stores_session_store_test$"),
    mutant("versioned-too-old-put-kept", ["class versioned_store {", "void put_version("],
           "a versioned store accepts a version older than the history it keeps, which Kafka Streams "
           "refuses: an as-of read beyond the retention would depend on which side restored",
           [("if (expired(timestamp)) return;", "")],
           tests=r"^stores_versioned_store_test$"),
    mutant("frame-time-lost", ["inline void encode(byte_buffer& out, const record_view& r, offset_t offset) {"],
           "the file log writes a record without its time: a timestamped or versioned store restored from it "
           "has lost every value's time",
           [("r.timestamp);", "no_timestamp);")],
           tests=FILE_LOG),

    # --- the runtime: fencing
    mutant("lease-without-margin", ["class lease {", "void confirmed(time_point sent) {"],
           "the at-least-once lease runs a whole session after the accepted commit instead of a session less "
           "the margin: an instance paused past its session may still hand records to its producer when the "
           "group expels it, and they land after the next owner started the task",
           [("until_ = std::max(until_, sent + session_ - margin_);", "until_ = std::max(until_, sent + session_);")],
           tests=r"^runtime_unit_committer_test$"),
    mutant("start-before-predecessor-acted", ["bool held_elsewhere(const assignment& d,"],
           "an instance starts a task moved to it once the other members' statuses do not list it, though they "
           "were published before the decision that moved it: the previous owner may still run it, and the task "
           "runs on two instances",
           [("if (st->acted() < std::max(p.since(), decision_id{d.epoch, 1}) || st->lists(p.task)) return true;",
             "if (st->lists(p.task)) return true;")],
           tests=r"^runtime_unit_coordination_test$"),
    mutant("start-before-epoch-acted", ["bool held_elsewhere(const assignment& d,"],
           "an instance starts a task once the other members acted on a decision as new as the task's placement, "
           "though not on one of the deciding leader's epoch: a decision of the epoch before, which the leader "
           "never read (compaction removed its claim), may have given the task to one of them",
           [("st->acted() < std::max(p.since(), decision_id{d.epoch, 1})", "st->acted() < p.since()")],
           tests=r"^runtime_unit_coordination_test$"),
    mutant("left-out-member-not-awaited", ["const bool left_out_audible = left_out_but_audible(d, s, me.instance, l);"],
           "a task starts while a member the decision left out is still heard of: a heartbeat on its way when "
           "the leader decided renewed that member's at-least-once lease, and it writes beside the new owner",
           [("const bool wait = left_out_audible || held_elsewhere(d, placed, s, me.instance);",
             "const bool wait = held_elsewhere(d, placed, s, me.instance);")],
           tests=r"^runtime_unit_(coordination|simulation)_test$"),
    mutant("heartbeat-renews-before-the-end", ["void heard(std::string_view instance,"],
           "a heartbeat read back renews the at-least-once lease at once, not at the end of the topic: a reader "
           "behind renews after a decision that left it out and that compaction removed before it got there",
           [("own_read_ = own_heartbeat{h.member_id, h.sent_ms};",
             "own_read_ = own_heartbeat{h.member_id, h.sent_ms}; own_ = own_read_;")],
           tests=r"^runtime_unit_(coordination|simulation)_test$"),
    mutant("silent-by-the-broker-clock-alone", ["bool silent_since(const record_time& t,"],
           "a member is silent once the broker's append times say so, whatever the reader's clock says: a leader "
           "that stalled and reads a backlog late leaves out members that are alive",
           [("if (now - t.read_at < timeout) return false;", "")],
           tests=r"^runtime_unit_coordination_test$"),
    mutant("fenced-once-per-incarnation", ["void fence_predecessors(const task& t) {"],
           "under exactly-once, an instance is fenced once per incarnation, not once per decision that left it "
           "out: one cut off by a network partition renews its producer, comes back, and when it is cut off "
           "again its open transaction is never aborted; its late writes are committed by its own next "
           "transaction, beside the new owner's",
           [("if (fenced_.contains({f.incarnation, f.decision.epoch, f.decision.version})) continue;",
             "if (fenced_.contains({f.incarnation, 0, 0})) continue;"),
            ("fenced_.insert({f.incarnation, f.decision.epoch, f.decision.version});",
             "fenced_.insert({f.incarnation, 0, 0});")],
           tests=r"^runtime_partition_test$", kafka=True),
    mutant("rejoined-instance-not-fenced", ["std::vector<fence_target> fence_targets(const assignment& d,"],
           "under exactly-once, an instance the decision lists under an older membership (expelled and joined "
           "again, or restarted) is not fenced before its task restores elsewhere: its old incarnation's open "
           "transaction can still commit after the new owner read the changelog",
           [("if (const std::string* m = d.member_id_of(name); m != nullptr && *m == st.member_id) continue;",
             "if (d.member_id_of(name) != nullptr) continue;")],
           tests=r"^runtime_unit_coordination_test$"),

    # --- the runtime: topologies
    mutant("purge-past-committed", ["class repartition_purger {", "std::vector<kafka::record_cut> purge("],
           "a topology deletes a repartition record its reading sub-topology has not committed: a task that "
           "restarts from the committed offset finds the record gone",
           [("cuts.push_back({e.topic, e.partition, e.offset});", "cuts.push_back({e.topic, e.partition, e.offset + 1});")],
           tests=r"^runtime_topology_test$", kafka=True),
    mutant("repartition-time-lost", ["class processor_context {", "void repartition(std::string_view name, const K& key, const V& value) {"],
           "a re-keyed record reaches the next sub-topology with the time it was sent instead of its own: "
           "stream time and windows downstream follow the processing, not the data",
           [("timestamp_ > 0 ? timestamp_ : no_timestamp);", "no_timestamp);")],
           tests=r"^runtime_topology_test$", kafka=True),

    mutant("window-changelog-compacted-only", ["kafka::settings changelog_configs_of(const S& s) {"],
           "a window or session store logged in a task gets a compacted changelog that never deletes by time: "
           "expired windows pile up in the topic, and every restore reads them all",
           [("return kafka::windowed_changelog_configs(std::chrono::milliseconds(store.retention_ms()));",
             "return {};")],
           tests=r"^runtime_store_kinds_test$", kafka=True),

    # --- the runtime: assignment and tasks
    mutant("dead-instance-keeps-tasks", ["std::vector<task_placement> assign_tasks(const assignor_input& in) {"],
           "the leader leaves a task with the instance that ran it even when that instance is no longer a member: "
           "a dead instance's partitions are processed by no one",
           [("if (!owner.empty() && live(owner)) {", "if (!owner.empty()) {")],
           tests=r"^runtime_unit_assignor_test$"),
    mutant("standby-on-its-active-process", ["std::vector<task_placement> assign_tasks(const assignor_input& in) {"],
           "with processing threads, a task's standby may be put on another thread of the process that runs it: "
           "the process dies with both copies, and the task restores from scratch",
           [("if (p == process_of(in, t.active)) return false;", "if (m == t.active) return false;")],
           tests=r"^runtime_unit_assignor_test$"),
    mutant("promoted-standby-unprepared", ["class task_manager {", "void start(std::int32_t p, const prepare_fn& prepare) {"],
           "a task taken over from its standby skips the preparation a new task gets: under exactly-once the "
           "producers that may still write for it are not fenced before it runs",
           [("prepare(*standby);", "")],
           tests=r"^runtime_unit_task_manager_test$"),
    mutant("restoring-task-released-clean", ["class task_manager {", "void release(std::int32_t p, bool clean) {"],
           "a task released while it still restores is closed clean: under exactly-once its checkpoint names the "
           "changelog's end though its stores hold only part of it, and the next restore skips the rest",
           [("close(*it->second, clean && it->second->state() == task_state::running);", "close(*it->second, clean);")],
           tests=r"^runtime_unit_task_manager_test$"),
]
