#pragma once
/// @file
/// @brief `restorer`: the thread of an instance that builds new tasks and
/// brings their stores up to date from their changelogs, so that a task that
/// restores never holds up the tasks that already process. Restoring tasks
/// take turns, a slice of records each, so a large restore does not hold up
/// a small one either.

#include <strata/metrics/registry.hpp>
#include <strata/restore/checkpoint.hpp>
#include <strata/restore/restore.hpp>
#include <strata/runtime/detail/follow_pacer.hpp>
#include <strata/runtime/detail/store_replay.hpp>
#include <strata/runtime/restore_event.hpp>
#include <strata/runtime/task.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

/// @brief When the standbys' reader (the one every standby follows its
/// changelogs through) fetches: a window of `window` once `every` while the
/// standbys follow at least `from` partitions (follow_pacer.hpp); no
/// reader or no interval: all the time.
struct standby_pacing {
    std::chrono::milliseconds every{0};
    std::chrono::milliseconds window{0};
    std::shared_ptr<kafka::changelog_reader> reader;
    std::size_t from = 0;
};

/// @brief Builds and restores tasks on a thread of its own, and keeps
/// standby tasks current by tailing their changelogs.
///
/// An active task has its committed input offsets looked up, then is
/// restored up to the end its changelogs had after that, then handed over
/// (`take_ready`). A standby task is never handed over: it follows its
/// changelogs (replays with no end, fetched in the background by the
/// instance's shared reader), a slice at a time, looking for what came
/// every `tail_interval`, until it is cancelled or promoted; a promoted
/// standby restores what it is still behind (usually little) and is then
/// handed over like any other task.
class restorer {
public:
    /// Builds a task's stores (the factory runs here, on the restore thread).
    using build_fn = std::function<void(task&)>;
    /// Looks up what the processing thread needs to start each task (its
    /// committed input offsets), for several active tasks at once (one
    /// request for all of them, not one each); may block on the broker. It
    /// runs before the restore reads where the changelogs end, so that the
    /// restore covers every change those offsets commit (runtime-design I3).
    using prepare_fn = std::function<void(std::span<task* const>)>;

    restorer(build_fn build, prepare_fn prepare, metrics::registry& reg, restore_callback on_restore,
             std::size_t slice_records, std::chrono::milliseconds tail_interval = std::chrono::milliseconds(100),
             standby_pacing pacing = {})
        : build_(std::move(build)), prepare_(std::move(prepare)), registry_(&reg), on_restore_(std::move(on_restore)),
          slice_records_(slice_records == 0 ? 1 : slice_records), tail_interval_(tail_interval),
          standby_reader_(std::move(pacing.reader)) {
        if (standby_reader_ && pacing.every.count() > 0)
            pacer_ = follow_pacer(pacing.every, pacing.window, [this](bool pause) { pace_standbys(pause); }, pacing.from);
        thread_ = std::thread([this] { run(); });
    }

    restorer(const restorer&) = delete;
    restorer& operator=(const restorer&) = delete;
    ~restorer() { stop(); }

    void stop() noexcept {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

    /// @brief Queues an active task to build and restore.
    void add(std::shared_ptr<task> t) { enqueue(std::move(t), false); }

    /// @brief Queues a standby task to build and keep current.
    void add_standby(std::shared_ptr<task> t) { enqueue(std::move(t), true); }

    /// @brief Turns a standby task into an active one: it restores what it
    /// is behind, then is handed over. False when the restorer does not hold it.
    bool promote(const task& t) {
        const std::lock_guard lock(mutex_);
        for (auto& [p, standby] : pending_) {
            if (p.get() != &t) continue;
            standby = false;
            return true;
        }
        // A stale standby is not promoted: the task starts anew instead. One
        // the restore thread has in hand or has started, taken from the
        // pending list and not yet among the jobs, is held too: its job
        // takes the promotion once it is there (step()).
        const auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const job& j) { return j.t.get() == &t; });
        const bool held = it != jobs_.end()
                              ? !it->lost
                              : in_hand(t) || std::any_of(started_.begin(), started_.end(),
                                                          [&](const started_task& s) { return s.t.get() == &t; });
        if (held) promoted_.push_back(&t);
        wake_.notify_all();
        return held;
    }

    /// @brief Takes a task back: once this returns the restore thread no
    /// longer touches it, whether it was waiting, restoring, tailing or restored.
    void cancel(const task& t) {
        std::unique_lock lock(mutex_);
        std::erase_if(pending_, [&](const auto& p) { return p.first.get() == &t; });
        std::erase_if(ready_, [&](const auto& p) { return p.get() == &t; });
        std::erase_if(started_, [&](const started_task& s) { return s.t.get() == &t; });
        const auto held = [&] {
            return in_hand(t) || std::any_of(jobs_.begin(), jobs_.end(), [&](const job& j) { return j.t.get() == &t; });
        };
        if (!held()) return;
        cancelled_.push_back(&t);
        wake_.notify_all();
        done_.wait(lock, [&] { return !held() || failure_; });
        std::erase(cancelled_, &t);
    }

    /// @brief The tasks restored since the last call, ready to run.
    [[nodiscard]] std::vector<std::shared_ptr<task>> take_ready() {
        const std::lock_guard lock(mutex_);
        return std::exchange(ready_, {});
    }

    /// @brief A standby whose changelog no longer holds what its stores were
    /// built from, and why: it ends below a store's position (an unclean
    /// leader election, a topic deleted and made again) or starts above it
    /// (records deleted). The copy is stale and cannot be brought up to
    /// date; the restore thread stopped tailing it and removed its
    /// checkpoint. The processing thread replaces it with a new standby.
    struct lost_standby {
        std::shared_ptr<task> t;
        std::string why;
    };

    /// @brief The standbys found stale since the last call (see lost_standby).
    [[nodiscard]] std::vector<lost_standby> take_lost() {
        const std::lock_guard lock(mutex_);
        return std::exchange(lost_, {});
    }

    /// @brief What made the restore thread stop, if anything did.
    [[nodiscard]] std::exception_ptr failure() const {
        const std::lock_guard lock(mutex_);
        return failure_;
    }

private:
    using clock = std::chrono::steady_clock;

    struct job {
        std::shared_ptr<task> t;
        bool standby;
        std::vector<detail::store_replay> stores;
        bool lost = false;  // a stale standby, waiting to be replaced (see lost_standby)
    };

    /// Whether the restore thread is building, looking up or opening `t`
    /// (called with the mutex held).
    [[nodiscard]] bool in_hand(const task& t) const {
        return current_ == &t || std::find(in_hand_.begin(), in_hand_.end(), &t) != in_hand_.end();
    }

    /// A task built and looked up (prepared, its changelogs' bounds known)
    /// with others, waiting for its replays to be opened.
    struct started_task {
        std::shared_ptr<task> t;
        bool standby = false;
        std::vector<kafka::partition_bounds> bounds;  // of its logged stores' changelogs, in order
    };

    void enqueue(std::shared_ptr<task> t, bool standby) {
        {
            const std::lock_guard lock(mutex_);
            pending_.emplace_back(std::move(t), standby);
        }
        wake_.notify_all();
    }

    void run() {
        std::optional<clock::time_point> idle_until;
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                const auto ready = [&] {
                    return stopping_ || !pending_.empty() || !started_.empty() || !promoted_.empty() ||
                           !cancelled_.empty() || (!jobs_.empty() && !idle_until);
                };
                if (idle_until) wake_.wait_until(lock, *idle_until, ready);
                else wake_.wait(lock, ready);
                if (stopping_) return;
            }
            try {
                start_pending();
                promote_waiting();
                idle_until = step();
            } catch (...) {
                const std::lock_guard lock(mutex_);
                failure_ = std::current_exception();
                current_ = nullptr;
                in_hand_.clear();
                done_.notify_all();
                return;
            }
        }
    }

    /// Starts waiting tasks until none is left or `max_open_replays` active
    /// replays are open, before any is read. A replay is fetched from when
    /// it is opened and waits for its first records only when its first
    /// slice is read (store_replay), so replays opened together come in the
    /// same fetches. Started and read one task at a time, every store of a
    /// restart waited for a fetch of its own: 1,000 tasks of ten small
    /// stores took 54 s, 5 ms a store. The bound keeps what librdkafka
    /// queues for open replays in check; standbys opened count towards it
    /// too, so that thousands of them waiting do not hold up the slices of
    /// the tasks started already. Tasks are built and looked up in batches
    /// (start_batch) ahead of their replays.
    void start_pending() {
        std::size_t standby_replays = 0;  // opened by this call
        for (;;) {
            bool batch = false;
            {
                const std::lock_guard lock(mutex_);
                if (stopping_ || (started_.empty() && pending_.empty())) return;
                batch = started_.empty();
            }
            if (batch) start_batch();
            started_task next;
            {
                const std::lock_guard lock(mutex_);
                if (stopping_) return;
                if (started_.empty()) continue;  // the batch was cancelled
                next = std::move(started_.front());
                started_.erase(started_.begin());
                current_ = next.t.get();
            }
            const bool standby = next.standby;
            const std::size_t jobs_before = jobs_.size();
            open_replays(std::move(next));
            release_current();
            if (standby && jobs_.size() > jobs_before) standby_replays += jobs_.back().stores.size();
            if (open_active_replays() + standby_replays >= max_open_replays) return;
        }
    }

    /// Builds up to `max_batch` waiting tasks, prepares the active ones
    /// together, then looks up the bounds of all their changelogs together
    /// (after prepare: runtime-design I3), one request per reader for the
    /// whole batch. One task at a time, an instance restarting 1,000 tasks
    /// of ten stores spent 10.5 s of its 17 s in these lookups (7.6 ms a
    /// task preparing, 2.9 ms on bounds), five requests a task.
    void start_batch() {
        std::vector<std::pair<std::shared_ptr<task>, bool>> batch;
        {
            const std::lock_guard lock(mutex_);
            const auto n = static_cast<std::ptrdiff_t>(std::min(pending_.size(), max_batch));
            batch.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.begin() + n));
            pending_.erase(pending_.begin(), pending_.begin() + n);
            for (const auto& b : batch) in_hand_.push_back(b.first.get());
        }
        for (const auto& [t, standby] : batch)
            if (!cancelled(*t)) build_(*t);
        std::erase_if(batch, [&](const auto& b) { return cancelled(*b.first); });
        std::vector<task*> active;
        for (const auto& [t, standby] : batch)
            if (!standby) active.push_back(t.get());
        if (!active.empty()) prepare_(active);
        std::vector<std::pair<task*, bool>> looked_up;
        for (const auto& [t, standby] : batch) looked_up.emplace_back(t.get(), standby);
        std::vector<std::vector<kafka::partition_bounds>> bounds = bounds_of(looked_up);
        const std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < batch.size(); ++i)
            if (std::find(cancelled_.begin(), cancelled_.end(), batch[i].first.get()) == cancelled_.end())
                started_.push_back({std::move(batch[i].first), batch[i].second, std::move(bounds[i])});
        in_hand_.clear();
        done_.notify_all();
    }

    static constexpr std::size_t max_batch = 256;

    /// Replays of active tasks' stores open and not read to their end.
    [[nodiscard]] std::size_t open_active_replays() const {
        std::size_t n = 0;
        for (const job& j : jobs_)
            if (!j.standby)
                for (const detail::store_replay& s : j.stores) n += s.open() && !s.finished() ? 1 : 0;
        return n;
    }

    static constexpr std::size_t max_open_replays = 64;

    /// Marks the task in hand as let go of, answering a cancel that waits for it.
    void release_current() {
        const std::lock_guard lock(mutex_);
        current_ = nullptr;
        done_.notify_all();
    }

    [[nodiscard]] bool cancelled(const task& t) {
        const std::lock_guard lock(mutex_);
        return std::find(cancelled_.begin(), cancelled_.end(), &t) != cancelled_.end();
    }

    /// Whether the processing thread promoted the standby t (and forgets the request).
    [[nodiscard]] bool take_promotion(const task& t) {
        const std::lock_guard lock(mutex_);
        const auto it = std::find(promoted_.begin(), promoted_.end(), &t);
        if (it == promoted_.end()) return false;
        promoted_.erase(it);
        return true;
    }

    /// Readies a replay for each logged store of a task built and looked up.
    void open_replays(started_task st) {
        job j{std::move(st.t), st.standby, {}, false};
        const bool standby = j.standby;
        std::optional<checkpoint_file> checkpoints;
        if (!j.t->checkpoint_path.empty()) checkpoints.emplace(j.t->checkpoint_path);
        j.stores.reserve(j.t->stores().size());
        std::size_t logged = 0;
        for (const auto& port : j.t->stores()) {
            kafka::changelog* log = port->changelog();
            if (log == nullptr) continue;
            const kafka::partition_bounds* b = logged < st.bounds.size() ? &st.bounds[logged] : nullptr;
            ++logged;
            offset_t from = 0;
            if (const std::optional<offset_t> own = port->committed_offset()) from = *own;
            else if (port->persistent() && checkpoints) from = checkpoints->load(port->name(), j.t->partition()).value_or(0);
            detail::store_replay& s = j.stores.emplace_back(*port, *log, from, *registry_, j.t->id());
            if (!(standby ? follow(j, s, b) : open_to_end(j, s, b))) break;
            if (!standby) report(restore_event::phase::start, *j.t, s.progress);
        }
        if (!standby) publish_progress(j);
        const std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(j));
    }

    /// The bounds of every logged store's changelog of each task of a
    /// batch, in the order of its stores: one lookup per reader (an
    /// instance's tasks share two, the active tasks' and the standbys').
    [[nodiscard]] static std::vector<std::vector<kafka::partition_bounds>> bounds_of(
        const std::vector<std::pair<task*, bool>>& batch) {
        struct lookup {
            kafka::changelog_reader* reader;
            std::vector<std::pair<std::string, std::int32_t>> partitions;
            std::vector<std::pair<std::size_t, std::size_t>> to;  // (task, store) of each partition
        };
        std::vector<lookup> lookups;
        std::vector<std::vector<kafka::partition_bounds>> out(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const auto& [t, standby] = batch[i];
            std::size_t logged = 0;
            for (const auto& port : t->stores()) {
                const kafka::changelog* log = port->changelog();
                if (log == nullptr) continue;
                kafka::changelog_reader* r = standby ? &log->follower() : &log->reader();
                auto it = std::find_if(lookups.begin(), lookups.end(), [&](const lookup& l) { return l.reader == r; });
                if (it == lookups.end()) it = lookups.insert(lookups.end(), lookup{r, {}, {}});
                it->partitions.emplace_back(log->topic(), log->partition());
                it->to.emplace_back(i, logged++);
            }
            out[i].resize(logged);
        }
        for (const lookup& l : lookups) {
            const std::vector<kafka::partition_bounds> found = l.reader->bounds(l.partitions);
            for (std::size_t k = 0; k < found.size(); ++k) out[l.to[k].first][l.to[k].second] = found[k];
        }
        return out;
    }

    /// Reads the store's changelog from where it is up to the end as of now
    /// (detail/store_replay.hpp). A changelog that no longer holds what the
    /// store was built from is found here: an active task stops the instance
    /// with an error (restoring nothing would hide the loss, and the task's
    /// folder is the user's to delete); a standby is marked lost, to be rebuilt.
    /// @returns false when the standby is lost
    /// `known`: the changelog's bounds looked up with the task's others (bounds_of), or null.
    bool open_to_end(job& j, detail::store_replay& s, const kafka::partition_bounds* known = nullptr) {
        return checked(j, s, s.open_to_end(j.standby, known));
    }

    /// A standby's first look: its replay follows the changelog from then on.
    /// @returns false when the standby is lost
    bool follow(job& j, detail::store_replay& s, const kafka::partition_bounds* known = nullptr) {
        return checked(j, s, s.follow(known));
    }

    bool checked(job& j, detail::store_replay& s, const detail::store_replay::bounds& b) {
        if (!b.stale()) return true;
        if (!j.standby) {
            const bool from_checkpoint = s.progress.position == s.progress.from && !j.t->checkpoint_path.empty();
            throw restore_error(s.port().name(), s.progress.position,
                                s.active_stale_message(b, j.t->id(), from_checkpoint ? j.t->checkpoint_path.string() : ""));
        }
        lose(j, s.standby_stale_message(b, j.t->id()));
        return false;
    }

    /// Stops tailing a stale standby: no store of it is read again, it
    /// reports no lag (the leader counts it as no copy), and its checkpoint
    /// goes, so that its replacement starts from an empty folder.
    void lose(job& j, std::string why) {
        for (detail::store_replay& s : j.stores) s.close();
        j.t->set_standby_lag(-1);
        if (!j.t->checkpoint_path.empty()) {
            std::error_code ec;
            std::filesystem::remove(j.t->checkpoint_path, ec);
        }
        const std::lock_guard lock(mutex_);  // promote() reads `lost`
        j.lost = true;
        lost_.push_back({j.t, std::move(why)});
    }

    /// One slice for every job in turn; finished active jobs go to the
    /// ready list. Returns when to look again if no job had work.
    std::optional<clock::time_point> step() {
        std::optional<clock::time_point> idle_until;
        bool worked = false;
        pacer_.before_look(clock::now(), followed_partitions());
        // At the window's end every standby takes in what was fetched,
        // due or not: the pause that follows drops what was not.
        const bool closing = pacer_.closing(clock::now());
        for (std::size_t i = 0; i < jobs_.size();) {
            job& j = jobs_[i];
            {
                const std::lock_guard lock(mutex_);
                current_ = j.t.get();
            }
            if (j.lost) {
                // Waiting to be replaced: only a cancel concerns it now.
                (void)take_promotion(*j.t);
                const bool dropped = cancelled(*j.t);
                if (dropped) {
                    const std::lock_guard lock(mutex_);
                    jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
                }
                release_current();
                if (!dropped) ++i;
                continue;
            }
            bool finished = true;
            for (detail::store_replay& s : j.stores) {
                if (cancelled(*j.t)) break;
                if (j.standby) {
                    // A standby follows its changelog from its first look on
                    // (the reader fetches in the background); a look takes in
                    // what was fetched since the last one.
                    if (!s.open()) {
                        if (!follow(j, s)) break;
                    } else if (s.finished() && !closing && clock::now() < s.next_look) {
                        idle_until = idle_until ? std::min(*idle_until, s.next_look) : s.next_look;
                        continue;
                    }
                    worked = restore_slice(j, s) || worked;
                    if (j.lost) break;
                    if (s.finished()) {
                        s.next_look = clock::now() + tail_interval_;
                        idle_until = idle_until ? std::min(*idle_until, s.next_look) : s.next_look;
                    }
                    continue;
                }
                if (!s.finished()) worked = restore_slice(j, s) || worked;
                finished = finished && s.finished();
            }
            if (j.lost) {
                release_current();
                ++i;
                continue;
            }
            if (j.standby) {
                std::int64_t lag = 0;
                for (const detail::store_replay& s : j.stores) lag = std::max(lag, s.lag());
                j.t->set_standby_lag(lag);  // read by the processing thread's status and by queries
            }
            const bool dropped = cancelled(*j.t);
            if (finished && !dropped && !j.standby) {
                j.t->timeline.restored_ms = wall_clock_ms();
                for (const detail::store_replay& s : j.stores) j.t->timeline.records_restored += s.progress.records_done;
            }
            if (dropped || (finished && !j.standby)) {
                std::shared_ptr<task> t = std::move(j.t);
                {
                    const std::lock_guard lock(mutex_);
                    jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
                    if (!dropped) ready_.push_back(t);
                }
                release_current();
                worked = true;
                continue;
            }
            release_current();
            ++i;
        }
        if (closing) pacer_.after_look(clock::now());  // every standby took in what came
        if (worked) return std::nullopt;
        if (pacer_.pacing() && idle_until) idle_until = std::min(*idle_until, pacer_.next_event());
        return idle_until;
    }

    /// The standbys the processing thread promoted: prepared together,
    /// their changelogs' bounds looked up together (after prepare:
    /// runtime-design I3), then each restores what it is behind as an
    /// active task. One at a time, each promoted standby of a restart made
    /// five requests and two more per store: 250 ms a task on an instance
    /// whose 500 tasks were all promoted standbys.
    void promote_waiting() {
        {
            const std::lock_guard lock(mutex_);
            if (promoted_.empty()) return;  // runs every pass: no look through thousands of standbys for nothing
        }
        std::vector<job*> promoted;
        for (job& j : jobs_)
            if (j.standby && !j.lost && take_promotion(*j.t) && !cancelled(*j.t)) promoted.push_back(&j);
        if (promoted.empty()) return;
        std::vector<std::pair<task*, bool>> tasks;
        std::vector<task*> active;
        for (job* j : promoted) {
            tasks.emplace_back(j->t.get(), false);
            active.push_back(j->t.get());
        }
        prepare_(active);
        const std::vector<std::vector<kafka::partition_bounds>> bounds = bounds_of(tasks);
        for (std::size_t k = 0; k < promoted.size(); ++k) {
            job& j = *promoted[k];
            {
                const std::lock_guard lock(mutex_);
                current_ = j.t.get();
            }
            bool whole = true;
            for (std::size_t n = 0; whole && n < j.stores.size(); ++n) {
                // The promoted restore reports only the rest, up to the end
                // as of now: a replay opened earlier may end before it.
                detail::store_replay& s = j.stores[n];
                s.restart_from_position();
                whole = open_to_end(j, s, n < bounds[k].size() ? &bounds[k][n] : nullptr);  // a stale one is lost
            }
            if (whole) {
                j.standby = false;
                for (const detail::store_replay& s : j.stores) report(restore_event::phase::start, *j.t, s.progress);
                publish_progress(j);
            }
            release_current();
        }
    }

    /// Hands queries the progress of an active task's restore, over its stores.
    static void publish_progress(const job& j) {
        std::uint64_t done = 0, total = 0;
        for (const detail::store_replay& s : j.stores) {
            done += s.progress.records_done;
            total += s.progress.records_total;
        }
        j.t->set_restore_progress(done, total);
    }

    /// The changelog partitions the standbys follow (those not lost).
    [[nodiscard]] std::size_t followed_partitions() const {
        std::size_t n = 0;
        for (const job& j : jobs_)
            if (j.standby && !j.lost) n += j.stores.size();
        return n;
    }

    /// Pauses the standbys' reader, or resumes it with every standby's
    /// replay sent to the offset it reads next (follow_pacer.hpp).
    void pace_standbys(bool pause) {
        std::vector<kafka::changelog_reader::position> followed;
        for (const job& j : jobs_) {
            if (!j.standby || j.lost) continue;
            for (const detail::store_replay& s : j.stores)
                if (auto p = s.follow_position()) followed.push_back(std::move(*p));
        }
        if (pause) standby_reader_->pause(followed);
        else standby_reader_->resume_at(followed);
    }

    /// Applies up to one slice of records; true if it applied any.
    bool restore_slice(job& j, detail::store_replay& s) {
        task& t = *j.t;
        const detail::store_replay::applied a = s.apply_slice(t.mutex(), slice_records_, j.standby);
        if (a.went_back || a.deleted_to) {
            lose(j, a.went_back ? s.went_back_message(*a.went_back, t.id()) : s.deleted_message(*a.deleted_to, t.id()));
            return a.records > 0;
        }
        if (!j.standby) {
            publish_progress(j);
            if (a.records > 0) report(restore_event::phase::batch, t, s.progress);
            if (s.finished()) report(restore_event::phase::end, t, s.progress);
        }
        return a.records > 0;
    }

    void report(restore_event::phase what, const task& t, const restore_progress& p) {
        if (on_restore_) on_restore_(restore_event{what, t.id(), p});
    }

    build_fn build_;
    prepare_fn prepare_;
    metrics::registry* registry_;
    restore_callback on_restore_;
    std::size_t slice_records_;
    std::chrono::milliseconds tail_interval_;
    std::shared_ptr<kafka::changelog_reader> standby_reader_;  // paced, or null
    follow_pacer pacer_;                                       // restore thread

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::vector<std::pair<std::shared_ptr<task>, bool>> pending_;  // (task, standby)
    std::vector<const task*> in_hand_;     // a batch the restore thread builds and looks up
    std::vector<started_task> started_;    // built and looked up, their replays not yet opened
    std::vector<job> jobs_;  // touched by the restore thread; the mutex guards resizing
    std::vector<std::shared_ptr<task>> ready_;
    const task* current_ = nullptr;        // the task the restore thread is building or restoring
    std::vector<const task*> cancelled_;  // tasks the processing thread wants back
    std::vector<const task*> promoted_;   // standbys the processing thread made active
    std::vector<lost_standby> lost_;      // stale standbys, for the processing thread to replace
    std::exception_ptr failure_;
    bool stopping_ = false;
    std::thread thread_;  // last: starts after everything above exists
};

}  // namespace strata::runtime::detail
