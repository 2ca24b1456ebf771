// When the standbys' reader fetches (detail/follow_pacer.hpp): on from the
// start, paused once a window is over and every standby looked, on again
// once the interval since the window's start has passed.

#include <strata/runtime/detail/follow_pacer.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

using strata::runtime::detail::follow_pacer;
using namespace std::chrono_literals;

TEST_CASE("follow pacer: fetching is on for a window once an interval, paused in between", "[runtime][follow-pacer]") {
    const follow_pacer::clock::time_point t0{};
    std::vector<bool> calls;  // true: pause, false: resume
    follow_pacer p(1000ms, 250ms, [&](bool pause) { calls.push_back(pause); }, 0, t0);
    CHECK_FALSE(p.pacing());  // not before the first look
    p.before_look(t0, 10);
    REQUIRE(p.pacing());
    CHECK(p.fetching());
    CHECK(p.next_event() == t0 + 250ms);

    // Within the window nothing changes.
    p.before_look(t0 + 100ms, 10);
    CHECK_FALSE(p.closing(t0 + 100ms));
    p.after_look(t0 + 100ms);
    CHECK(calls.empty());

    // The window is over: this look closes it, and the pause follows it.
    p.before_look(t0 + 260ms, 10);
    CHECK(p.closing(t0 + 260ms));
    p.after_look(t0 + 260ms);
    CHECK(calls == std::vector<bool>{true});
    CHECK_FALSE(p.fetching());
    // The next window starts an interval after the last one started.
    CHECK(p.next_event() == t0 + 1000ms);

    p.before_look(t0 + 900ms, 10);  // too early
    CHECK(calls.size() == 1);
    CHECK_FALSE(p.closing(t0 + 900ms));

    p.before_look(t0 + 1010ms, 10);
    CHECK(calls == std::vector<bool>{true, false});
    CHECK(p.fetching());
    CHECK(p.next_event() == t0 + 1260ms);
    CHECK_FALSE(p.closing(t0 + 1100ms));
    CHECK(p.closing(t0 + 1260ms));
}

TEST_CASE("follow pacer: a restore thread late for a window resumes at once, and no interval means no pacing",
          "[runtime][follow-pacer]") {
    const follow_pacer::clock::time_point t0{};
    std::vector<bool> calls;
    follow_pacer p(1000ms, 250ms, [&](bool pause) { calls.push_back(pause); }, 0, t0);
    p.before_look(t0, 10);
    p.after_look(t0 + 3000ms);  // the thread was busy for seconds: the window closed long ago
    CHECK(calls == std::vector<bool>{true});
    CHECK(p.next_event() == t0 + 3000ms);  // not in the past: at once
    p.before_look(t0 + 3000ms, 10);
    CHECK(calls == std::vector<bool>{true, false});

    follow_pacer none;
    CHECK_FALSE(none.pacing());
    none.before_look(t0 + 5000ms, 10);
    CHECK_FALSE(none.closing(t0 + 5000ms));
    none.after_look(t0 + 5000ms);
    CHECK(none.fetching());

    // A window as long as the interval leaves no pause.
    follow_pacer whole(100ms, 500ms, [&](bool pause) { calls.push_back(pause); }, 0, t0);
    CHECK(whole.next_event() == t0 + 100ms);
}

TEST_CASE("follow pacer: pacing engages from a number of followed partitions on and lets go below it",
          "[runtime][follow-pacer]") {
    const follow_pacer::clock::time_point t0{};
    std::vector<bool> calls;
    follow_pacer p(1000ms, 250ms, [&](bool pause) { calls.push_back(pause); }, 2000, t0);

    // Below the number: fetching all the time, no window ever closes.
    p.before_look(t0 + 5000ms, 1999);
    CHECK_FALSE(p.pacing());
    CHECK_FALSE(p.closing(t0 + 9000ms));
    p.after_look(t0 + 9000ms);
    CHECK(calls.empty());

    // At the number: the first window starts at that look, not at construction.
    p.before_look(t0 + 10'000ms, 2000);
    CHECK(p.pacing());
    CHECK_FALSE(p.closing(t0 + 10'100ms));
    CHECK(p.next_event() == t0 + 10'250ms);
    p.before_look(t0 + 10'300ms, 2500);
    CHECK(p.closing(t0 + 10'300ms));
    p.after_look(t0 + 10'300ms);
    CHECK(calls == std::vector<bool>{true});

    // Paused, the standbys fall below the number (promoted, moved away): the
    // reader fetches again at once, without waiting for the next window.
    p.before_look(t0 + 10'400ms, 1500);
    CHECK(calls == std::vector<bool>{true, false});
    CHECK_FALSE(p.pacing());
    CHECK(p.fetching());
    CHECK_FALSE(p.closing(t0 + 20'000ms));

    // No standby at all paces nothing, even with no number set.
    follow_pacer always(1000ms, 250ms, [&](bool pause) { calls.push_back(pause); }, 0, t0);
    always.before_look(t0, 0);
    CHECK_FALSE(always.pacing());
    always.before_look(t0, 1);
    CHECK(always.pacing());
}
