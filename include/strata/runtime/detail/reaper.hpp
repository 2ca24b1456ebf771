#pragma once
/// @file
/// @brief Destroys what is slow to destroy off the processing thread: a
/// closed task owns librdkafka clients (one per changelog), and destroying
/// a client waits for its threads to end, long enough to hold up a handoff
/// if the processing thread did it.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace strata::runtime::detail {

class reaper {
public:
    reaper() : thread_([this] { run(); }) {}
    reaper(const reaper&) = delete;
    reaper& operator=(const reaper&) = delete;
    /// Destroys whatever is still queued, then stops.
    ~reaper() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    /// Hands over one reference. The object dies on the reaper's thread if
    /// no other reference is left when the reaper drops this one (the
    /// runtime hands over a task's last); otherwise with the last of them.
    void dispose(std::shared_ptr<void> p) {
        {
            const std::lock_guard lock(mutex_);
            queue_.push_back(std::move(p));
        }
        wake_.notify_all();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            std::vector<std::shared_ptr<void>> batch = std::exchange(queue_, {});
            lock.unlock();
            batch.clear();  // the destructors run here, unlocked
            lock.lock();
            if (stopping_ && queue_.empty()) return;
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::shared_ptr<void>> queue_;
    bool stopping_ = false;
    std::thread thread_;  // last: starts after the rest exists
};

}  // namespace strata::runtime::detail
