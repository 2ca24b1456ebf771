// How wide the work since the last commit may grow (detail/commit_width.hpp):
// a task's records are let in until its partitions would take the work past
// the limit; tasks already in go on; a commit empties it.

#include <strata/runtime/detail/commit_width.hpp>

#include <catch2/catch.hpp>

#include <chrono>

using strata::runtime::detail::commit_width;
using strata::runtime::detail::default_commit_width;

TEST_CASE("commit width: a task that would take the work past the limit waits for a commit",
          "[runtime][commit-width]") {
    commit_width w(25);  // two tasks of ten changelogs and an output
    CHECK(w.admits(3, 11));
    CHECK(w.admits(7, 11));
    CHECK(w.width() == 22);
    CHECK_FALSE(w.full());
    CHECK_FALSE(w.admits(9, 11));  // 33 > 25
    CHECK(w.full());
    CHECK(w.in_work(3));
    CHECK_FALSE(w.in_work(9));  // turned away, not in
    // The tasks in the work go on, as often as their records come.
    CHECK(w.admits(3, 11));
    CHECK(w.admits(7, 11));
    CHECK(w.width() == 22);
    // A smaller task still fits.
    CHECK(w.admits(12, 2));
    CHECK(w.width() == 24);

    w.committed();
    CHECK_FALSE(w.full());
    CHECK(w.width() == 0);
    CHECK(w.admits(9, 11));
    CHECK(w.width() == 11);
}

TEST_CASE("commit width: the first task of a commit is let in whatever it writes, and zero is no limit",
          "[runtime][commit-width]") {
    commit_width w(5);
    CHECK(w.admits(0, 11));
    CHECK_FALSE(w.admits(1, 1));
    w.committed();
    CHECK(w.admits(1, 1));

    commit_width unbounded(0);
    for (int t = 0; t < 1000; ++t) CHECK(unbounded.admits(t, 11));
    CHECK(unbounded.width() == 11'000);
    CHECK_FALSE(unbounded.full());
}

TEST_CASE("commit width: the default follows the guarantee and the delivery bound", "[runtime][commit-width]") {
    using std::chrono::milliseconds;
    CHECK(default_commit_width(true, milliseconds(200)) == 1000);
    CHECK(default_commit_width(false, milliseconds(200)) == 200);
    CHECK(default_commit_width(false, milliseconds(1000)) == 1000);
    CHECK(default_commit_width(false, milliseconds(20)) == 50);
}
