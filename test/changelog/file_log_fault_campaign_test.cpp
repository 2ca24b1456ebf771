// A crash campaign for basic_file_log: a table of accounts, logged through
// basic_file_log<fault_file_system>, runs a workload of multi-row transfers
// while a fault is injected at a random point: a crash (maybe tearing the
// write it interrupts), EIO, ENOSPC. Then the machine reboots (or the
// process restarts), the log is reopened (repaired when it refuses), a fresh
// table is restored from it and compared with a model: it must equal the
// state of the last flush that returned, or of the flush in flight when the
// fault hit. Anything older is a lost flush; anything else (a transfer half
// applied, a balance from nowhere) a wrong restore. The recovered log must
// then take more flushes and restore them after another restart.
//
// A log that refuses to open (corruption_error) is counted as refused,
// repaired and still judged: a repair must not lose a returned flush either.
// After the recovered log took more flushes, all of which returned, a
// restart or power loss must not make it refuse at all (refused_clean).
//
// STRATA_TEST_SEED picks the random choices (printed in the summary line, so
// a failing run can be repeated); STRATA_FAULT_POINTS sets the number of
// fault points (2000 by default) for a longer run; STRATA_FAULT_ONLY=P runs
// point P alone, and STRATA_FAULT_VERBOSE=1 prints what each point went
// through.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/logged.hpp>

#include <catch2/catch.hpp>

#include <relational_table.hpp>
#include <support/fault_file_system.hpp>
#include <support/seed.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using test_support::fault;
using test_support::fault_file_system;
using test_support::fault_kind;
using test_support::fs_op;
using test_support::simulated_crash;
using log_type = strata::basic_file_log<fault_file_system>;
using balances = std::map<std::int64_t, std::int64_t>;

const std::filesystem::path log_dir = "/data/accounts";
/// Segments small enough that flushes roll them often: mostly one page, so
/// a flush larger than a page gets a segment of its own, sometimes a few
/// pages, so a flush can start in one page and end in the next.
/// Automatic compaction runs at most flushes that seal a segment; at half the
/// points tombstones may go at once, so crashes also hit the rewrites that
/// drop them.
strata::file_log_options options_for(std::uint64_t choice) {
    return {.segment_bytes = std::array<std::uint64_t, 4>{4096, 4096, 10000, 30000}[choice % 4],
            .auto_compact = true,
            .min_dirty_ratio = (choice / 4) % 2 == 0 ? 0.2 : 0.5,
            .delete_retention = (choice / 8) % 2 == 0 ? std::chrono::milliseconds(0) : std::chrono::hours(24)};
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    const auto n = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0') throw std::invalid_argument(std::string(name) + " is not a number: " + v);
    return n;
}

/// The name column: fixed per account, and long enough (20 to 270 bytes)
/// that flushes span pages and segments.
std::string name_of(std::int64_t id) {
    return "account " + std::to_string(id) + " " + std::string(static_cast<std::size_t>(20 + id * 37 % 250), 'x');
}

auto make_store(log_type& log) {
    return example::employee_table("accounts") | strata::logged(log, example::table_codec{});
}
using store_type = decltype(make_store(std::declval<log_type&>()));

/// The table's rows as balances, checking every other column.
balances read_balances(const store_type& store, std::string& problem) {
    balances out;
    for (const auto& [id, row] : store.base().rows()) {
        if (row.id != id || row.name != name_of(id) || row.department != "d" + std::to_string(id % 3))
            problem = "row " + std::to_string(id) + " has columns the workload never wrote";
        out[id] = row.salary;
    }
    return out;
}

/// One random update, applied to the store and the model alike: open an
/// account (1 record), a transfer among 2-5 accounts (one record each), or
/// closing an account (its balance moves to another, then a tombstone).
void random_update(store_type& store, balances& m, std::mt19937_64& rng) {
    auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::vector<std::int64_t> ids;
    for (const auto& [id, b] : m) ids.push_back(id);
    const std::size_t r = below(10);
    if (ids.size() < 2 || (r < 2 && ids.size() < 40)) {
        const std::int64_t id = m.empty() ? 1 : m.rbegin()->first + 1;
        const auto balance = static_cast<std::int64_t>(1000 + below(9000));
        store.apply(example::insert_row{example::employee{id, name_of(id), "d" + std::to_string(id % 3), balance}});
        m[id] = balance;
        return;
    }
    std::shuffle(ids.begin(), ids.end(), rng);
    if (r < 3 && ids.size() > 3) {
        const std::int64_t gone = ids[0], heir = ids[1], amount = m.at(gone);
        store.apply(example::update_where{example::where{.predicate = [=](const example::employee& e) {
                                                              return e.id == gone || e.id == heir;
                                                          }},
                                          [=](example::employee& e) { e.salary += e.id == gone ? -amount : amount; }});
        m[gone] -= amount;
        m[heir] += amount;
        store.apply(example::delete_where{example::where{.id = gone}});
        m.erase(gone);
        return;
    }
    const std::size_t k = std::min<std::size_t>(ids.size(), 2 + below(4));
    std::map<std::int64_t, std::int64_t> delta;
    std::int64_t sum = 0;
    for (std::size_t i = 0; i + 1 < k; ++i) {
        const auto d = static_cast<std::int64_t>(below(201)) - 100;
        delta[ids[i]] = d;
        sum += d;
    }
    delta[ids[k - 1]] = -sum;
    store.apply(example::update_where{
        example::where{.predicate = [delta](const example::employee& e) { return delta.contains(e.id); }},
        [delta](example::employee& e) { e.salary += delta.at(e.id); }});
    for (const auto& [id, d] : delta) m[id] += d;
}

/// What the workload knows when it stops: the state of every flush that
/// returned, and of the one in flight, if any.
struct history {
    std::vector<balances> returned;    ///< oldest first; the last one is what a restore must show
    std::optional<balances> in_flight;  ///< the flush that was running when the fault hit
};

/// The workload: `updates` random updates with flushes at random points
/// (and a last one), compact() now and then.
void run_workload(store_type& store, log_type& log, balances& m, history& h, std::mt19937_64& rng, int updates) {
    const std::uint64_t flush_one_in = std::array<std::uint64_t, 4>{2, 3, 5, 12}[rng() % 4];
    for (int i = 0; i < updates; ++i) {
        random_update(store, m, rng);
        if (rng() % flush_one_in == 0 || i + 1 == updates) {
            h.in_flight = m;
            store.flush();
            h.returned.push_back(m);
            h.in_flight.reset();
            if (rng() % 5 == 0) log.compact();
        }
    }
}

struct counts {
    std::uint64_t faults = 0, crashes = 0, torn = 0, io_errors = 0, absorbed = 0, recovery_crashes = 0, refused = 0,
                  refused_clean = 0, in_flight_restored = 0, lost = 0, wrong = 0;
    std::string trace;  ///< what the current point went through
};

std::string describe(const balances& b) {
    std::ostringstream out;
    out << b.size() << " accounts {";
    int shown = 0;
    for (const auto& [id, v] : b) {
        if (shown++ == 8) {
            out << " ...";
            break;
        }
        out << " " << id << ":" << v;
    }
    out << " }";
    return out.str();
}

std::string describe(const test_support::fired_fault& f) {
    return std::string(to_string(f.kind)) + " at operation " + std::to_string(f.operation) + " (" + to_string(f.op) +
           " " + f.path + (f.kind == fault_kind::torn_crash || f.kind == fault_kind::enospc
                               ? ", " + std::to_string(f.bytes_written) + " bytes of it written"
                               : std::string()) +
           ")";
}

/// Judges a restore against what the workload saw. @returns "" when correct.
std::string judge(const balances& got, const history& h, counts& c, bool& in_flight_match) {
    in_flight_match = false;
    if (got == h.returned.back()) return "";
    if (h.in_flight && got == *h.in_flight) {
        in_flight_match = true;
        return "";
    }
    for (std::size_t i = h.returned.size() - 1; i-- > 0;)
        if (got == h.returned[i]) {
            ++c.lost;
            return "LOST: restored the flush " + std::to_string(h.returned.size() - 1 - i) +
                   " before the last that returned; expected " + describe(h.returned.back()) + ", got " + describe(got);
        }
    ++c.wrong;
    return "WRONG: restored a state no flush had: expected " + describe(h.returned.back()) +
           (h.in_flight ? " or the in-flight " + describe(*h.in_flight) : std::string()) + ", got " + describe(got);
}

/// Opens the log after a crash; when it refuses (corruption_error), repairs
/// it and opens again. Crashes (armed for the recovery) are survived by
/// rebooting and trying again.
log_type reopen(fault_file_system& fs, strata::file_log_options log_options, std::mt19937_64& rng, counts& c,
                bool& refused, std::string& note) {
    for (int attempt = 0;; ++attempt) {
        if (attempt > 0) fs.disarm();
        try {
            std::optional<log_type> log;
            try {
                log.emplace(log_dir, log_options, fs);
            } catch (const strata::corruption_error& e) {
                refused = true;
                note += std::string(" refused: ") + e.what() + ";";
                const auto check = log_type::repair(log_dir, fs);
                note += " repaired to offset " + std::to_string(check.intact_end) + ";";
                log.emplace(log_dir, log_options, fs);
            }
            // The log ignores a failed witness write, even a crash in it: the
            // process died there all the same.
            if (!fs.crashed()) return std::move(*log);
            throw simulated_crash{*fs.fired()};
        } catch (const simulated_crash&) {
            ++c.recovery_crashes;
            note += " crashed while recovering (" + describe(*fs.fired()) + ");";
            fs.reboot(rng);
        }
    }
}

/// One fault point. Returns a description of what went wrong, or "".
std::string run_point(std::uint64_t seed, std::uint64_t point, counts& c) {
    std::mt19937_64 choose(mix(seed ^ mix(point)));
    const std::uint64_t workload_seed = choose(), fs_seed = choose();
    const int updates = 10 + static_cast<int>(choose() % 50);
    const strata::file_log_options log_options = options_for(choose());

    // The run without a fault: how many operations of each kind it makes.
    fault_file_system dry(fs_seed);
    {
        std::mt19937_64 rng(workload_seed);
        log_type log(log_dir, log_options, dry);
        auto store = make_store(log);
        balances m;
        history h;
        run_workload(store, log, m, h, rng, updates);
    }

    // The fault.
    fault f;
    const std::uint64_t kind = choose() % 20;
    auto among = [&](fs_op op) {
        f.only = op;
        f.at = 1 + choose() % std::max<std::uint64_t>(dry.operations(op), 1);
    };
    if (kind < 8) {
        f.kind = fault_kind::crash;
        f.at = 1 + choose() % dry.operations();
    } else if (kind < 13) {
        f.kind = fault_kind::torn_crash;
        among(fs_op::append);
    } else if (kind < 17) {
        f.kind = fault_kind::eio;
        among(choose() % 2 == 0 ? fs_op::append : fs_op::sync_data);
    } else {
        f.kind = fault_kind::enospc;
        among(choose() % 4 == 0 ? fs_op::write_at : fs_op::append);
    }

    fault_file_system fs(fs_seed);
    fs.arm(f);
    ++c.faults;
    balances m;
    history h;
    h.returned.push_back({});  // before the first flush: nothing
    std::string note;
    bool crashed = false, surfaced = false;
    {
        std::mt19937_64 rng(workload_seed);
        try {
            log_type log(log_dir, log_options, fs);
            auto store = make_store(log);
            run_workload(store, log, m, h, rng, updates);
        } catch (const simulated_crash&) {
            crashed = surfaced = true;
        } catch (const strata::changelog_error& e) {
            surfaced = true;
            if (!fs.fired() || (fs.fired()->kind != fault_kind::eio && fs.fired()->kind != fault_kind::enospc))
                return std::string("unexpected changelog_error with no I/O fault injected: ") + e.what();
            ++c.io_errors;
            note += std::string(" error: ") + e.what() + ";";
        } catch (const std::exception& e) {
            ++c.wrong;
            return std::string("unexpected exception: ") + e.what();
        }
    }
    if (!fs.fired()) return "the fault never fired: the run is not deterministic";
    const std::string fault_text = describe(*fs.fired());
    if (fs.crashed()) crashed = true;  // a crash the log swallowed (the witness write): the process died there anyway
    if (crashed) {
        ++c.crashes;
        if (fs.fired()->kind == fault_kind::torn_crash) ++c.torn;
    } else if (!surfaced) {
        ++c.absorbed;  // an I/O error the log ignored (the witness write)
    }

    // The machine loses power (or only the process dies), and the log is
    // reopened, maybe crashing again while it recovers.
    std::mt19937_64 rng(choose());
    if (choose() % (crashed ? 8 : 2) != 0) {
        fs.reboot(rng);
        note += " reboot;";
    } else {
        fs.restart();
        note += " restart;";
    }
    if (choose() % 4 == 0)
        fs.arm(fault{choose() % 2 ? fault_kind::crash : fault_kind::torn_crash, fs.operations() + 1 + choose() % 12});
    bool refused = false;
    std::optional<log_type> log;
    try {
        log.emplace(reopen(fs, log_options, rng, c, refused, note));
    } catch (const std::exception& e) {
        ++c.wrong;
        return fault_text + ":" + note + " cannot reopen after repair: " + e.what();
    }
    if (refused) ++c.refused;
    fs.disarm();

    auto store = make_store(*log);
    std::string problem;
    balances got;
    try {
        store.restore();
        got = read_balances(store, problem);
    } catch (const std::exception& e) {
        ++c.wrong;
        return fault_text + ":" + note + " restore failed: " + e.what();
    }
    if (!problem.empty()) {
        ++c.wrong;
        return fault_text + ":" + note + " " + problem;
    }
    bool in_flight = false;
    if (auto verdict = judge(got, h, c, in_flight); !verdict.empty()) return fault_text + ":" + note + " " + verdict;
    if (in_flight) ++c.in_flight_restored;
    c.trace = " " + fault_text + ":" + note + " " + std::to_string(h.returned.size() - 1) + " flushes returned" +
              (h.in_flight ? ", one in flight" : "") + "; restored " + (in_flight ? "the in-flight one" : "the last returned");

    // The recovered log takes more flushes, and restores them after a
    // restart or a power loss (every flush returned: exactly the last one).
    // Its history goes on from what was restored: a later restore of an
    // older state loses flushes that returned, in either phase.
    history more;
    more.returned = h.returned;
    if (in_flight) more.returned.push_back(got);
    balances m2 = got;
    try {
        std::mt19937_64 rng2(choose());
        run_workload(store, *log, m2, more, rng2, 5 + static_cast<int>(choose() % 15));
    } catch (const std::exception& e) {
        ++c.wrong;
        return fault_text + ":" + note + " the recovered log failed: " + e.what();
    }
    log.reset();
    if (choose() % 2) fs.reboot(rng);
    else fs.restart();
    bool refused_again = false;
    std::string note2;
    try {
        log.emplace(reopen(fs, log_options, rng, c, refused_again, note2));
    } catch (const std::exception& e) {
        ++c.wrong;
        return fault_text + ":" + note + " after more flushes: cannot reopen: " + e.what();
    }
    if (refused_again) ++c.refused_clean;
    auto store2 = make_store(*log);
    try {
        store2.restore();
        got = read_balances(store2, problem);
    } catch (const std::exception& e) {
        ++c.wrong;
        return fault_text + ":" + note + " after more flushes: restore failed: " + e.what();
    }
    if (!problem.empty()) {
        ++c.wrong;
        return fault_text + ":" + note + " after more flushes: " + problem;
    }
    if (auto verdict = judge(got, more, c, in_flight); !verdict.empty())
        return fault_text + ":" + note + " after more flushes:" + note2 + " " + verdict;
    if (refused_again)
        return fault_text + ":" + note + " after more flushes, all of which returned, and a restart:" + note2 +
               " (nothing was lost, but the log refused to open)";
    return "";
}

}  // namespace

TEST_CASE("file_log fault campaign: no fault loses a returned flush or restores half of one") {
    const std::uint64_t seed = test_support::seed(20240917);
    const std::uint64_t points = env_number("STRATA_FAULT_POINTS", 2000);
    // STRATA_FAULT_ONLY=P: run only point P of the seed (to study one failure).
    std::optional<std::uint64_t> only;
    if (const char* v = std::getenv("STRATA_FAULT_ONLY"); v != nullptr && *v != '\0')
        only = env_number("STRATA_FAULT_ONLY", 0);
    // STRATA_FAULT_VERBOSE=1: one line per point, what happened (to study a run).
    const bool verbose = env_number("STRATA_FAULT_VERBOSE", 0) != 0;
    INFO("STRATA_TEST_SEED=" << seed << " STRATA_FAULT_POINTS=" << points);

    counts c;
    std::vector<std::string> failures;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t p = 0; p < points; ++p) {
        if (only && p != *only) continue;
        const std::uint64_t lost = c.lost, wrong = c.wrong, refused_clean = c.refused_clean;
        std::string failure;
        try {
            failure = run_point(seed, p, c);
        } catch (const simulated_crash& crash) {
            failure = "a simulated crash escaped the point: " + describe(crash.where);
        } catch (const std::exception& e) {
            failure = std::string("unexpected exception: ") + e.what();
        }
        // A failure that is neither a lost flush nor a refusal after a clean run is a wrong restore.
        if (!failure.empty() && c.lost == lost && c.wrong == wrong && c.refused_clean == refused_clean) ++c.wrong;
        if (!failure.empty() && failures.size() < 20)
            failures.push_back("point " + std::to_string(p) + " (rerun: STRATA_TEST_SEED=" + std::to_string(seed) +
                               " STRATA_FAULT_ONLY=" + std::to_string(p) + "): " + failure);
        if (verbose && !c.trace.empty()) std::printf("point %llu:%s\n", static_cast<unsigned long long>(p), c.trace.c_str());
        c.trace.clear();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    for (const auto& f : failures) std::printf("%s\n", f.c_str());
    std::printf(
        "file_log fault campaign: seed=%llu faults=%llu crashes=%llu (torn %llu) io_errors=%llu absorbed=%llu "
        "recovery_crashes=%llu refused=%llu refused_clean=%llu in_flight_restored=%llu lost=%llu wrong=%llu "
        "time=%.2fs\n",
        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(c.faults),
        static_cast<unsigned long long>(c.crashes), static_cast<unsigned long long>(c.torn),
        static_cast<unsigned long long>(c.io_errors), static_cast<unsigned long long>(c.absorbed),
        static_cast<unsigned long long>(c.recovery_crashes), static_cast<unsigned long long>(c.refused),
        static_cast<unsigned long long>(c.refused_clean), static_cast<unsigned long long>(c.in_flight_restored),
        static_cast<unsigned long long>(c.lost), static_cast<unsigned long long>(c.wrong), seconds);
    std::fflush(stdout);

    REQUIRE(c.faults == (only ? 1 : points));
    REQUIRE(c.lost == 0);
    REQUIRE(c.wrong == 0);
    // Once every flush returned and the log was closed, a restart or a power
    // loss must not make it refuse to open.
    REQUIRE(c.refused_clean == 0);
    // The campaign reached what it is about.
    if (!only && points >= 1000) {
        CHECK(c.crashes > points / 4);
        CHECK(c.io_errors > points / 10);
        CHECK(c.in_flight_restored > 0);
    }
}
