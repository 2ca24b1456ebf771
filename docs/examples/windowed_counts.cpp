// Window and session stores: page views counted per minute (tumbling
// windows with a grace period) and per visit (sessions that close after
// ten minutes without a view), logged to a file changelog, restored after a
// restart, and read back by key and time range.
//
// Usage: windowed_counts [--quick]   (--quick is accepted; the example is small anyway)

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/session_store.hpp>
#include <strata/stores/window_store.hpp>
#include <strata/stores/windowed_aggregation.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

using namespace std::chrono_literals;

constexpr std::int64_t minute = 60'000;

struct view {
    std::string page;
    std::int64_t time_ms;
};

}  // namespace

int main(int argc, char** argv) try {
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) != "--quick") throw std::invalid_argument("usage: windowed_counts [--quick]");

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("strata-windowed-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);

    // Times in ms since the start of the day: 0:05 is five seconds in.
    const std::vector<view> views = {
        {"/home", 5'000},          {"/home", 50'000},  {"/cart", minute + 1'000}, {"/home", minute + 2'000},
        {"/home", 59'000},         // late, but minute 0 is still within its grace
        {"/home", 3 * minute + 30'000},
        {"/home", 30 * minute},    // a new visit: 26 minutes without a view
        {"/home", 10'000},         // too late: minute 0 and the first visit have closed
    };

    {
        // [window-store]
        // Views per page and minute; a minute takes late views until two
        // minutes after it ends. The store keeps an hour of minutes to
        // answer queries (at least size + grace: time_windows::store_options()).
        const auto per_minute = strata::time_windows::tumbling(1min, /*grace=*/2min);
        strata::file_log minutes_log(dir / "per-minute");
        auto per_minute_views = strata::window_store<std::string, std::int64_t>(
                                    "per-minute", {.window_size = 1min, .retention = 1h})
                              | strata::logged(minutes_log)
                              | strata::cached();
        strata::window_aggregator count_minutes(per_minute);
        // [window-store]

        // [session-store]
        // Views per page and visit: a visit ends after ten minutes without a view.
        const auto visits = strata::session_windows::with_gap(10min);
        strata::file_log visits_log(dir / "visits");
        auto views_per_visit = strata::session_store<std::string, std::int64_t>("visits", {.retention = 1h})
                             | strata::logged(visits_log);
        strata::session_aggregator count_visits(visits);
        // [session-store]

        // [aggregate]
        const auto add_one = [](std::int64_t n) { return n + 1; };
        const auto add = [](std::int64_t a, std::int64_t b) { return a + b; };
        for (const view& v : views) {
            count_minutes.aggregate(per_minute_views, v.page, v.time_ms, /*init=*/0, add_one);
            count_visits.aggregate(views_per_visit, v.page, v.time_ms, /*init=*/0, add_one, /*merge=*/add);
        }
        per_minute_views.flush();
        views_per_visit.flush();
        // [aggregate]

        check(count_minutes.late_records() == 1, "one view came after its minute closed");
        check(count_visits.late_records() == 1, "and after its visit closed");
    }  // the logs close: a file_log directory is open in one place at a time

    // [restore-and-read]
    strata::file_log minutes_log(dir / "per-minute");
    auto per_minute_views =
        strata::window_store<std::string, std::int64_t>("per-minute", {.window_size = 1min, .retention = 1h})
        | strata::logged(minutes_log);
    per_minute_views.restore();
    // /home's minutes that start from 0:00 to 5:00, as {start, views}.
    const std::vector<std::pair<std::int64_t, std::int64_t>> home_minutes =
        strata::query(per_minute_views, [](const auto& store) { return store.fetch("/home", 0, 5 * minute); });

    strata::file_log visits_log(dir / "visits");
    auto views_per_visit = strata::session_store<std::string, std::int64_t>("visits", {.retention = 1h})
                         | strata::logged(visits_log);
    views_per_visit.restore();
    // /home's visits, as {session{key, start, end}, views}.
    const std::vector<strata::session_entry<std::string, std::int64_t>> home_visits =
        strata::query(views_per_visit, [](const auto& store) { return store.fetch("/home"); });
    // [restore-and-read]

    for (const auto& [start, n] : home_minutes)
        std::cout << "/home minute " << start / minute << ": " << n << " views\n";
    for (const auto& v : home_visits)
        std::cout << "/home visit " << v.session.start_ms << ".." << v.session.end_ms << " ms: " << v.value
                  << " views\n";

    using minutes = std::vector<std::pair<std::int64_t, std::int64_t>>;
    check(home_minutes == minutes{{0, 3}, {minute, 1}, {3 * minute, 1}},
          "minute 0 has three views (one late within grace), minutes 1 and 3 one each");
    check(strata::query(per_minute_views, [](const auto& store) { return store.fetch("/cart", minute); }) == 1,
          "/cart has one view in minute 1");
    check(home_visits.size() == 2, "/home had two visits");
    check(home_visits.size() == 2 && home_visits[0].session.start_ms == 5'000 &&
              home_visits[0].session.end_ms == 3 * minute + 30'000 && home_visits[0].value == 5,
          "the first visit spans 0:05 to 3:30 with five views");
    check(home_visits.size() == 2 && home_visits[1].value == 1, "the second visit has one view");

    std::filesystem::remove_all(dir);
    if (failures != 0) return 1;
    std::cout << "windowed counts: all checks passed\n";
    return 0;
} catch (const std::exception& e) {
    std::cerr << "windowed_counts: " << e.what() << "\n";
    return 1;
}
