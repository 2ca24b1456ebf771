#pragma once
// The demos' workload: one deterministic sequence of operations on an
// employee table (hires, raises for a team, pay changes on a few hot rows,
// firing the low paid of a department, firing one), applied to a model map
// by plain loops. demo.cpp applies it to employee_table as updates,
// sqlite_demo.cpp to SQLite as SQL; both run it in a worker process that is
// killed between two commits, and check a restored table against the model
// of the committed operations.

#include "relational_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace demo {

using example::employee;

struct settings {
    std::int64_t updates = 100'000;
    std::int64_t employees = 10'000;
    std::int64_t commit_every = 2'500;
    std::filesystem::path dir;
    bool keep = false;
    std::string kafka;        ///< bootstrap servers; empty: the file changelog
    std::string kafka_topic;  ///< the demo's changelog topic in Kafka
};

inline const char* const departments[] = {"engineering", "operations", "sales", "legal", "research"};

// ---- the workload: one deterministic sequence of operations, applied to the
// table as SQL-like updates and to a plain map by straightforward loops.
struct operation {
    enum kind_t { hire, raise_group, pay_change, fire_low_paid, fire } kind;
    std::int64_t id = 0;
    std::string department;
    std::int64_t amount = 0;
};

class workload {
public:
    explicit workload(const settings& s) : s_(s), rng_(20261130) {}

    operation next() {
        const int roll = pct_(rng_);
        operation op;
        op.department = departments[dept_(rng_)];
        if (roll < 30) {
            op.kind = operation::hire;
            op.id = uniform_id();
            op.amount = 3000 + amount_(rng_);
        } else if (roll < 32) {  // a raise for one team: a multi-row UPDATE
            op.kind = operation::raise_group;
            op.id = team_(rng_);
            op.amount = amount_(rng_) / 10;
        } else if (roll < 92) {  // most traffic hits a few hot rows
            op.kind = operation::pay_change;
            op.id = hot_id();
            op.amount = amount_(rng_) - 500;
        } else if (roll < 93) {  // a multi-row DELETE
            op.kind = operation::fire_low_paid;
            op.amount = 2000 + amount_(rng_) / 4;
        } else {
            op.kind = operation::fire;
            op.id = uniform_id();
        }
        return op;
    }

private:
    std::int64_t uniform_id() { return 1 + std::uniform_int_distribution<std::int64_t>(0, s_.employees - 1)(rng_); }
    std::int64_t hot_id() { return 1 + std::uniform_int_distribution<std::int64_t>(0, s_.employees / 50)(rng_); }

    const settings& s_;
    std::mt19937_64 rng_;
    std::uniform_int_distribution<int> pct_{0, 99}, dept_{0, 4};
    std::uniform_int_distribution<std::int64_t> amount_{0, 2000}, team_{0, 99};
};

inline bool in_team(const employee& e, std::int64_t team) { return e.id % 100 == team; }

/// Applies op to the model and returns how many rows it touched: the
/// records a changelog without a cache would get.
inline std::int64_t apply_to_model(std::map<std::int64_t, employee>& m, const operation& op) {
    std::int64_t touched = 0;
    switch (op.kind) {
        case operation::hire:
            m[op.id] = employee{op.id, "employee-" + std::to_string(op.id), op.department, op.amount};
            return 1;
        case operation::raise_group:
            for (auto& [id, e] : m)
                if (e.department == op.department && in_team(e, op.id)) e.salary += op.amount, ++touched;
            return touched;
        case operation::pay_change:
            if (auto it = m.find(op.id); it != m.end()) it->second.salary += op.amount, ++touched;
            return touched;
        case operation::fire_low_paid:
            return static_cast<std::int64_t>(std::erase_if(m, [&](const auto& kv) {
                return kv.second.department == op.department && kv.second.salary < op.amount;
            }));
        case operation::fire:
            return static_cast<std::int64_t>(m.erase(op.id));
    }
    return touched;
}

/// What the killed worker reported: the updates its last commit covered, the
/// changelog's durable end then, and the updates applied when it was killed.
struct worker_report {
    std::int64_t committed = 0;
    std::int64_t applied = 0;
    std::uint64_t durable = 0;
};

/// The worker's side of the report pipe: "committed <updates> <durable>"
/// after each commit, "crashing <updates>" before it kills itself.
inline void report_line(int fd, const std::string& line) {
    const std::string l = line + "\n";
    if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::_Exit(3);
}

/// Runs worker(report_fd) in a child process (it never returns: it kills
/// itself), reads what it reported, and checks that SIGKILL ended it.
template <class Worker>
worker_report run_worker_until_killed(Worker worker) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::cout.flush();
    const pid_t child = ::fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
        ::close(fds[0]);
        worker(fds[1]);
    }
    ::close(fds[1]);
    worker_report r;
    std::string buf;
    char chunk[4096];
    for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;) buf.append(chunk, static_cast<std::size_t>(n));
    ::close(fds[0]);
    std::istringstream lines(buf);
    for (std::string word; lines >> word;) {
        if (word == "committed") lines >> r.committed >> r.durable, r.applied = r.committed;
        else if (word == "crashing") lines >> r.applied;
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        throw std::runtime_error("the worker was expected to die by SIGKILL");
    return r;
}

}  // namespace demo
