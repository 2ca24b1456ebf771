#pragma once
// What each compile-fail program does with its stack after the mistake: the
// calls a user would go on to make. A rejected stack must absorb all of them,
// so that the mistake's static_assert stays the only error.

#include <relational_table.hpp>

#include <strata/decorators/layer.hpp>

#include <cstddef>

namespace compile_fail {

template <class Stack>
void use_kv_stack(Stack& s) {
    s.put(1, 2);
    if (auto v = s.get(1); v && *v == 2) s.erase(1);
    for (auto [k, v] : s.all()) (void)k, (void)v;
    s.flush();
    s.restore();
}

template <class Stack>
int use_table_stack(Stack& s) {
    s.apply(example::insert_row{example::employee{1, "ada", "eng", 100}});
    const std::size_t raised =
        s.apply(example::update_where{example::where{.department = "eng"}, [](example::employee& e) { e.salary += 1; }});
    s.flush();
    s.restore();
    const std::size_t rows = strata::query(s, [](const example::employee_table& t) { return t.size(); });
    return static_cast<int>(raised + rows);
}

}  // namespace compile_fail
