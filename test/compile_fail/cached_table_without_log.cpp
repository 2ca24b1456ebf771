// expect: strata::cached: over a store that is not key-value
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

int main() {
    auto s = example::employee_table("employees") | strata::cached();
    // Used on after the mistake: no further error may follow.
    s.apply(example::insert_row{example::employee{1, "ada", "eng", 100}});
    const std::size_t raised = s.apply(example::update_where{example::where{.department = "eng"},
                                                             [](example::employee& e) { e.salary += 1; }});
    s.flush();
    s.restore();
    const std::size_t rows = strata::query(s, [](const example::employee_table& t) { return t.size(); });
    return static_cast<int>(raised + rows);
}
