#pragma once
// A relational table that is not a key-value store: rows with a primary key,
// a secondary index on one column, and set-oriented updates (INSERT,
// UPDATE ... WHERE, DELETE ... WHERE). It knows nothing of changelogs.
// table_codec below is all it takes to make it fault tolerant.

#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace example {

// [row]
struct employee {
    BOOST_HANA_DEFINE_STRUCT(employee,
        (std::int64_t, id),          // primary key
        (std::string, name),
        (std::string, department),   // secondary index
        (std::int64_t, salary));
    friend bool operator==(const employee&, const employee&) = default;
};
// [row]

// [updates]
/// Which rows an UPDATE or DELETE touches: an optional primary key, an
/// optional department (answered from the secondary index) and an optional
/// predicate on the row. All given parts must hold.
struct where {
    std::optional<std::int64_t> id = {};
    std::optional<std::string> department = {};
    std::function<bool(const employee&)> predicate = {};

    bool matches(const employee& e) const {
        return (!id || e.id == *id) && (!department || e.department == *department) &&
               (!predicate || predicate(e));
    }
};

struct insert_row {        // INSERT (or replace) one row
    employee row;
};
struct update_where {      // UPDATE employees SET <set> WHERE <filter>
    where filter;
    std::function<void(employee&)> set;
};
struct delete_where {      // DELETE FROM employees WHERE <filter>
    where filter;
};
// [updates]

// [table]
class employee_table {
public:
    explicit employee_table(std::string name) : name_(std::move(name)) {}

    std::string_view name() const noexcept { return name_; }

    // ---- updates, as strata sees them: apply(u). Each returns the number of
    // rows it changed, as SQL does, and so does every decorator around it.
    std::size_t apply(const insert_row& u) {
        upsert(u.row);
        return 1;
    }
    std::size_t apply(const update_where& u) {
        const std::vector<std::int64_t> ids = select_ids(u.filter);
        for (std::int64_t id : ids) {
            employee changed = rows_.at(id);
            u.set(changed);
            if (changed.id != id)
                throw strata::usage_error("employee_table: an UPDATE may not change the primary key");
            upsert(std::move(changed));
        }
        return ids.size();
    }
    std::size_t apply(const delete_where& u) {
        const std::vector<std::int64_t> ids = select_ids(u.filter);
        for (std::int64_t id : ids) erase(id);
        return ids.size();
    }

    // ---- queries
    const employee* find(std::int64_t id) const {
        auto it = rows_.find(id);
        return it == rows_.end() ? nullptr : &it->second;
    }
    /// Primary keys of the rows that match, through the index when it can.
    std::vector<std::int64_t> select_ids(const where& w) const {
        std::vector<std::int64_t> ids;
        if (w.id) {
            if (auto it = rows_.find(*w.id); it != rows_.end() && w.matches(it->second)) ids.push_back(*w.id);
        } else if (w.department) {
            for (auto it = by_department_.lower_bound({*w.department, INT64_MIN});
                 it != by_department_.end() && it->first == *w.department; ++it)
                if (w.matches(rows_.at(it->second))) ids.push_back(it->second);
        } else {
            for (const auto& [id, row] : rows_)
                if (w.matches(row)) ids.push_back(id);
        }
        return ids;
    }
    std::int64_t payroll(std::string_view department) const {
        std::int64_t sum = 0;
        for (auto it = by_department_.lower_bound({std::string(department), INT64_MIN});
             it != by_department_.end() && it->first == department; ++it)
            sum += rows_.at(it->second).salary;
        return sum;
    }
    const std::map<std::int64_t, employee>& rows() const noexcept { return rows_; }
    std::size_t size() const noexcept { return rows_.size(); }

    // ---- row-level primitives (also what restore uses)
    void upsert(employee row) {
        if (auto it = rows_.find(row.id); it != rows_.end()) unindex(it->second);
        by_department_.emplace(row.department, row.id);
        rows_.insert_or_assign(row.id, std::move(row));
    }
    bool erase(std::int64_t id) {
        auto it = rows_.find(id);
        if (it == rows_.end()) return false;
        unindex(it->second);
        rows_.erase(it);
        return true;
    }

private:
    void unindex(const employee& row) { by_department_.erase({row.department, row.id}); }

    std::string name_;
    std::map<std::int64_t, employee> rows_;
    std::set<std::pair<std::string, std::int64_t>> by_department_;  // (department, id)
};
// [table]

// [codec]
/// The table's changelog codec: one record per row, keyed by primary key,
/// carrying the row's current state or a tombstone. A multi-row UPDATE or
/// DELETE writes one record per touched row.
struct table_codec {
    using key_type = std::int64_t;

    // Which rows an update will change, computed before it is applied.
    std::vector<std::int64_t> touched(const employee_table&, const insert_row& u) const {
        return {u.row.id};
    }
    std::vector<std::int64_t> touched(const employee_table& t, const update_where& u) const {
        return t.select_ids(u.filter);
    }
    std::vector<std::int64_t> touched(const employee_table& t, const delete_where& u) const {
        return t.select_ids(u.filter);
    }

    void write_key(std::int64_t id, strata::byte_buffer& out) const { strata::encode(id, out); }

    bool write_value(const employee_table& t, std::int64_t id, strata::byte_buffer& out) const {
        const employee* row = t.find(id);
        if (!row) return false;  // deleted: tombstone
        strata::encode(*row, out);
        return true;
    }

    void restore(employee_table& t, const strata::record_view& r) const {
        const auto id = strata::decode<std::int64_t>(r.key);
        if (r.is_tombstone()) t.erase(id);
        else t.upsert(strata::decode<employee>(*r.value));
    }
};
// [codec]

}  // namespace example
