// The demo's employee table a second time, as SQL on SQLite: the same
// workload, made fault tolerant by strata::sqlite_store, whose codec needs
// no code for the table (SQLite's session extension reports the rows each
// statement changed).
//
//   1. a worker process runs the workload as SQL through
//      sqlite_store(employees.db) | logged(file_log) | cached | metered,
//      committing (flush) every few thousand updates;
//   2. it crashes: SIGKILL, with updates applied since its last commit;
//   3. the database on disk, reopened as the crash left it, holds exactly
//      the last commit, and restore reads only the changelog past it;
//   4. a fresh in-memory database restored from the whole changelog holds
//      the same rows;
//   5. both are checked against the state computed independently from the
//      committed part of the workload, payroll per department included.
//
// Usage: sqlite_demo [--quick] [--updates N] [--dir PATH] [--keep]

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/sqlite_store.hpp>

#include "demo_workload.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using strata::sql;
using strata::sql_value;

namespace {

constexpr const char* schema = R"(
    CREATE TABLE IF NOT EXISTS employee(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                                        department TEXT NOT NULL, salary INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS employee_by_department ON employee(department);
)";

strata::sqlite_store employees(const std::string& path) {
    strata::sqlite_store db("employees", path);
    db.schema(schema);
    return db;
}

/// One operation of the workload as SQL.
sql as_sql(const demo::operation& op) {
    switch (op.kind) {
        case demo::operation::hire:
            return sql{"INSERT OR REPLACE INTO employee VALUES (?1, ?2, ?3, ?4)",
                       {op.id, "employee-" + std::to_string(op.id), op.department, op.amount}};
        case demo::operation::raise_group:
            return sql{"UPDATE employee SET salary = salary + ?1 WHERE department = ?2 AND id % 100 = ?3",
                       {op.amount, op.department, op.id}};
        case demo::operation::pay_change:
            return sql{"UPDATE employee SET salary = salary + ?1 WHERE id = ?2", {op.amount, op.id}};
        case demo::operation::fire_low_paid:
            return sql{"DELETE FROM employee WHERE department = ?1 AND salary < ?2", {op.department, op.amount}};
        case demo::operation::fire: return sql{"DELETE FROM employee WHERE id = ?1", {op.id}};
    }
    return {};
}

using rows = std::vector<std::vector<sql_value>>;

rows table_of(const strata::sqlite_store& db) {
    return db.query("SELECT id, name, department, salary FROM employee ORDER BY id");
}
rows table_of(const std::map<std::int64_t, demo::employee>& m) {
    rows out;
    for (const auto& [id, e] : m) out.push_back({e.id, e.name, e.department, e.salary});
    return out;
}

[[noreturn]] void run_worker(const demo::settings& s, int report_fd) {
    strata::file_log log(s.dir / "changelog");
    strata::metrics::registry registry;
    auto store = employees((s.dir / "employees.db").string()) | strata::logged(log) | strata::cached() |
                 strata::metered(registry);
    store.restore();
    demo::workload w(s);
    const auto report = [&](const std::string& line) { demo::report_line(report_fd, line); };
    const std::int64_t crash_at = s.updates - s.commit_every / 2;  // mid-way between two commits
    for (std::int64_t i = 1; i <= s.updates; ++i) {
        store.apply(as_sql(w.next()));
        if (i % s.commit_every == 0)
            report("committed " + std::to_string(i) + " " + std::to_string(store.flush()));
        if (i == crash_at) {
            report("crashing " + std::to_string(i));
            ::raise(SIGKILL);  // no destructor, no commit: the open SQLite transaction dies with the process
        }
    }
    std::_Exit(4);  // not reached: the worker always crashes
}

demo::settings parse(int argc, char** argv) {
    demo::settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&] {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return std::string(argv[++i]);
        };
        if (a == "--quick") s.updates = 20'000, s.employees = 2'000, s.commit_every = 1'000;
        else if (a == "--updates") s.updates = std::stoll(value());
        else if (a == "--dir") s.dir = value();
        else if (a == "--keep") s.keep = true;
        else throw std::invalid_argument("unknown argument " + a + " (usage: sqlite_demo [--quick] [--updates N] [--dir PATH] [--keep])");
    }
    if (s.updates < 2 * s.commit_every) throw std::invalid_argument("--updates must be at least " + std::to_string(2 * s.commit_every));
    if (s.dir.empty()) s.dir = std::filesystem::temp_directory_path() / ("strata-sqlite-demo-" + std::to_string(::getpid()));
    return s;
}

}  // namespace

int main(int argc, char** argv) try {
    const demo::settings s = parse(argc, argv);
    std::filesystem::remove_all(s.dir);
    std::filesystem::create_directories(s.dir);
    std::cout << "strata SQLite demo: the employee table as SQL, fault tolerant with no per-table code\n"
              << "  store:     " << (s.dir / "employees.db").string() << " (primary key id, index on department)\n"
              << "  stack:     sqlite_store | logged(file_log) | cached | metered\n"
              << "  changelog: " << (s.dir / "changelog").string() << "\n\n";

    // 1-2. the worker runs, commits, and is killed
    std::cout << "1. workload: " << s.updates << " SQL updates (INSERT, multi-row UPDATE and DELETE), commit every "
              << s.commit_every << "\n";
    const demo::worker_report worker = demo::run_worker_until_killed([&](int fd) { run_worker(s, fd); });
    const std::int64_t committed = worker.committed, applied = worker.applied;
    const strata::offset_t durable = worker.durable;
    std::cout << "2. crash: worker killed by SIGKILL after " << applied << " updates; the last commit covered "
              << committed << " (changelog durable up to offset " << durable << ")\n\n";

    std::map<std::int64_t, demo::employee> expected;
    demo::workload w(s);
    for (std::int64_t i = 0; i < committed; ++i) demo::apply_to_model(expected, w.next());
    const rows want = table_of(expected);

    strata::file_log log(s.dir / "changelog");
    // 3. the database as the crash left it, then restored from its own commit
    auto reopened = employees((s.dir / "employees.db").string()) | strata::logged(log);
    const auto& db = strata::innermost(reopened);
    const bool left_equal = table_of(db) == want;
    std::cout << "3. reopened " << (s.dir / "employees.db").string() << ": committed offset "
              << db.committed_offset().value_or(0) << ", " << table_of(db).size() << " rows, "
              << (left_equal ? "EQUAL to" : "DIFFERENT from") << " the committed state\n";
    const auto tail = reopened.restore();
    std::cout << "   restore read " << tail.records_done << " records past offset " << tail.from << " (of "
              << log.end_offset() << " in the changelog)\n\n";

    // 4. a fresh database in memory, from the whole changelog
    auto fresh = employees(":memory:") | strata::logged(log);
    const auto all = fresh.restore();
    const rows restored = table_of(strata::innermost(fresh));
    std::cout << "4. a fresh in-memory database restored " << all.records_done << " records: " << restored.size()
              << " rows\n\n";

    // 5. check both against the model, and the payroll per department
    const bool fresh_equal = restored == want;
    int payroll_ok = 0;
    for (const char* d : demo::departments) {
        std::int64_t sum = 0;
        for (const auto& [id, e] : expected)
            if (e.department == d) sum += e.salary;
        const rows got = strata::innermost(fresh).query(
            "SELECT coalesce(sum(salary), 0) FROM employee WHERE department = ?1", {std::string(d)});
        payroll_ok += got.at(0).at(0) == sql_value(sum) ? 1 : 0;
    }
    std::cout << "5. check: reopened database " << (left_equal && table_of(db) == want ? "EQUALS" : "DIFFERS FROM")
              << ", restored database " << (fresh_equal ? "EQUALS" : "DIFFERS FROM") << " the state of the "
              << committed << " committed updates (" << want.size() << " rows);\n"
              << "   payroll per department (SQL SUM over the index) matches in " << payroll_ok << " of 5\n";

    if (!s.keep) std::filesystem::remove_all(s.dir);
    const bool ok = left_equal && table_of(db) == want && fresh_equal && payroll_ok == 5;
    std::cout << "\n" << (ok ? "RESTORE CHECK PASSED" : "RESTORE CHECK FAILED") << "\n";
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "sqlite_demo: " << e.what() << "\n";
    return 2;
}
