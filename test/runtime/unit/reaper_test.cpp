// The reaper (include/strata/runtime/detail/reaper.hpp): what is slow to
// destroy dies on its thread, never on the caller's, and nothing handed to
// it outlives it.

#include <strata/runtime/detail/reaper.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace {

/// Records the thread its destructor ran on, after a slow destruction.
struct slow_to_destroy {
    slow_to_destroy(std::atomic<std::thread::id>* d, std::atomic<int>* n) : died_on(d), destroyed(n) {}
    slow_to_destroy(const slow_to_destroy&) = delete;
    slow_to_destroy& operator=(const slow_to_destroy&) = delete;
    std::atomic<std::thread::id>* died_on;
    std::atomic<int>* destroyed;
    ~slow_to_destroy() {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        died_on->store(std::this_thread::get_id());
        destroyed->fetch_add(1);
    }
};

}  // namespace

TEST_CASE("reaper: an object handed over dies on the reaper's thread, not the caller's, and one referenced elsewhere lives on",
          "[runtime][reaper]") {
    std::atomic<std::thread::id> died_on{};
    std::atomic<int> destroyed{0};
    strata::runtime::detail::reaper r;
    auto p = std::make_shared<slow_to_destroy>(&died_on, &destroyed);
    std::shared_ptr<slow_to_destroy> kept = p;
    const auto start = std::chrono::steady_clock::now();
    r.dispose(std::move(p));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(20));  // the caller did not wait
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(destroyed == 0);  // another reference holds it
    kept.reset();           // the last reference was this one: it dies here, as shared_ptr does
    CHECK(destroyed == 1);

    auto q = std::make_shared<slow_to_destroy>(&died_on, &destroyed);
    r.dispose(std::move(q));
    for (int i = 0; i < 500 && destroyed < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(destroyed == 2);
    CHECK(died_on.load() != std::this_thread::get_id());
}

TEST_CASE("reaper: whatever is still queued is destroyed before the reaper is", "[runtime][reaper]") {
    std::atomic<std::thread::id> died_on{};
    std::atomic<int> destroyed{0};
    {
        strata::runtime::detail::reaper r;
        for (int i = 0; i < 20; ++i)
            r.dispose(std::make_shared<slow_to_destroy>(&died_on, &destroyed));
    }
    CHECK(destroyed == 20);
    CHECK(died_on.load() != std::this_thread::get_id());
}
