// expect: strata::logged: the codec cannot say which keys this update touches
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>

#include <relational_table.hpp>

// The table learns a new update, but its codec was not taught which rows it touches.
struct give_everyone_a_raise {};
struct bigger_table : example::employee_table {
    using employee_table::employee_table;
    using employee_table::apply;
    void apply(const give_everyone_a_raise&) {}
};
struct bigger_codec : example::table_codec {
    void restore(bigger_table& t, const strata::record_view& r) const { table_codec::restore(t, r); }
};

int main() {
    strata::memory_log log;
    strata::metrics::registry r;
    auto s = bigger_table("employees") | strata::logged(log, bigger_codec{}) | strata::cached() | strata::metered(r);
    s.apply(give_everyone_a_raise{});
    s.apply(give_everyone_a_raise{});  // the same mistake again is not a second error
    s.flush();
}
