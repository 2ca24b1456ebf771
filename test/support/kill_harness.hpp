#pragma once
// A store stack in a writer process, SIGKILLed at random moments, round
// after round: the harness of the engines' crash tests (test/rocksdb/kill_test.cpp,
// test/sqlite/kill_test.cpp).
//
// The writer applies a deterministic history, step by step (step i is a
// pure function of the seed and i), flushes after some steps, and after
// each flush returns reports the step count on a pipe. The parent kills it
// at a random moment, then the test reopens the store's files and restores
// them. A flush that returned is never lost: the restored state must be the
// state after the last reported flush, or, when the kill fell inside the
// next flush (its changelog part done, the report not yet written), after
// that one.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_support {

/// Where the writer was when it died: the step count of its last reported
/// flush (0 before the first), and whether it was still running.
struct kill_outcome {
    std::int64_t flushed_steps = 0;
    bool killed = false;
};

/// Whether the writer flushes after step i (1-based) of history `seed`:
/// about one step in `every`. Step i itself is the test's pure function of
/// (seed, i).
inline bool flushes_after(std::uint64_t seed, std::int64_t step, int every) {
    std::mt19937_64 r(seed * 1'000'003 + static_cast<std::uint64_t>(step));
    return static_cast<int>(r() % static_cast<std::uint64_t>(every)) == 0;
}

/// The steps of the first flush after `flushed` (the one a kill may have
/// interrupted), bounded by `steps`.
inline std::int64_t next_flush(std::uint64_t seed, std::int64_t flushed, std::int64_t steps, int every) {
    for (std::int64_t i = flushed + 1; i <= steps; ++i)
        if (flushes_after(seed, i, every)) return i;
    return flushed;
}

/// Runs `write(report)` in a child process: the writer restores, applies
/// steps, flushes after those flushes_after() names, and calls report(i)
/// after each flush of step i returns. Kills it after `kill_after` (if it
/// has not finished by then).
/// @pre no thread and no librdkafka handle is alive in this process (fork)
template <class Writer>
kill_outcome run_and_kill(Writer write, std::chrono::milliseconds kill_after) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(fds[0]);
        try {
            write([fd = fds[1]](std::int64_t flushed) {
                const std::string line = std::to_string(flushed) + "\n";
                if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(3);
            });
        } catch (const std::exception& e) {
            std::fprintf(stderr, "writer failed: %s\n", e.what());
            std::_Exit(2);
        }
        std::_Exit(0);
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(kill_after);
    ::kill(child, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    kill_outcome out;
    out.killed = WIFSIGNALED(status);
    if (!out.killed) REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    // The last complete line: a line cut by the kill is not a report.
    std::istringstream lines(text.substr(0, text.rfind('\n') + 1));
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) out.flushed_steps = std::stoll(line);
    return out;
}

/// What the rounds of kill_rounds did.
struct kill_summary {
    int rounds = 0;
    int killed = 0;         ///< writers still running when killed
    int tail_restores = 0;  ///< restores that began past offset 0
    std::int64_t steps = 0; ///< steps in the store at the end
};

/// The test: STRATA_KILLS rounds (default 12) on the same files. Each runs
/// `writer(report)` (see run_and_kill) and kills it after 30 to 400 ms; then
/// `as_left()` opens the files as the crash left them, checks that they
/// hold the whole state of the steps they say, and returns that count, which
/// must lie between the last reported flush and the one in flight; then
/// `restore()` restores the store from the changelog's tail, checks its
/// state against the steps it says, commits it for the next round, and
/// returns {steps, whether the restore began past offset 0}: the steps must
/// be the last reported flush's or the in-flight one's.
template <class Writer, class AsLeft, class Restore>
kill_summary kill_rounds(std::uint64_t seed, int flush_every, Writer writer, AsLeft as_left, Restore restore) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> delay_ms(30, 400);
    const char* env = std::getenv("STRATA_KILLS");
    kill_summary sum;
    sum.rounds = env != nullptr && *env != '\0' ? std::atoi(env) : 12;
    for (int round = 0; round < sum.rounds; ++round) {
        const kill_outcome outcome = run_and_kill(writer, std::chrono::milliseconds(delay_ms(rng)));
        INFO("round " << round << ", last reported flush after step " << outcome.flushed_steps);
        sum.killed += outcome.killed ? 1 : 0;
        const std::int64_t reported = std::max(outcome.flushed_steps, sum.steps);
        const std::int64_t in_flight = next_flush(seed, reported, reported + 100'000, flush_every);
        const std::int64_t left = as_left();
        REQUIRE(left >= reported);
        REQUIRE(left <= in_flight);
        const auto [n, from_own_offset] = restore();
        REQUIRE((n == reported || n == in_flight));
        sum.tail_restores += from_own_offset ? 1 : 0;
        sum.steps = n;
    }
    return sum;
}

}  // namespace test_support
