#pragma once
/// @file
/// @brief A fixed pool of threads for the requests whose work may block (a
/// read that waits for a position, a named query that runs user code, a
/// page gathered from other instances), so that the server's I/O threads
/// never wait on them. Its queue is bounded: a request beyond it is refused
/// at once (503 with Retry-After) instead of waiting behind thousands.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::http {

class work_pool {
public:
    /// @param threads at least one
    /// @param queue_limit jobs waiting for a thread, at most
    work_pool(std::size_t threads, std::size_t queue_limit) : limit_(queue_limit) {
        if (threads == 0) threads = 1;
        threads_.reserve(threads);
        for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
    }

    work_pool(const work_pool&) = delete;
    work_pool& operator=(const work_pool&) = delete;
    ~work_pool() { stop(); }

    /// @brief Queues a job; false (and the job is dropped) when the queue
    /// is full or the pool stopped.
    [[nodiscard]] bool try_post(std::function<void()> job) {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_ || queue_.size() >= limit_) return false;
            queue_.push_back(std::move(job));
        }
        wake_.notify_one();
        return true;
    }

    /// @brief Jobs waiting for a thread now.
    [[nodiscard]] std::size_t queued() const {
        const std::lock_guard lock(mutex_);
        return queue_.size();
    }

    /// @brief Finishes the running jobs, drops the queued ones (destroying
    /// them: a job that holds a request's exchange answers it then) and joins.
    void stop() {
        std::deque<std::function<void()>> dropped;
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
            dropped.swap(queue_);
        }
        wake_.notify_all();
        dropped.clear();
        for (std::thread& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    void run() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (stopping_) return;
                job = std::move(queue_.front());
                queue_.pop_front();
            }
            job();  // a job reports its own failures (see exchange::offload)
        }
    }

    std::size_t limit_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;  // last: they start once the rest exists
};

}  // namespace strata::http
