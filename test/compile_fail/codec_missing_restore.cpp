// expect: strata::logged: the codec is missing restore(Store&, record_view) const
// A codec that writes records but cannot read them back.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

struct write_only_codec {
    using key_type = std::int64_t;
    void write_key(const key_type& k, strata::byte_buffer& out) const { strata::encode(k, out); }
    bool write_value(const example::employee_table& t, const key_type& k, strata::byte_buffer& out) const {
        return example::table_codec{}.write_value(t, k, out);
    }
    template <class U>
    auto touched(const example::employee_table& t, const U& u) const {
        return example::table_codec{}.touched(t, u);
    }
};

int main() {
    strata::memory_log log;
    auto s = example::employee_table("employees") | strata::logged(log, write_only_codec{});
    // Used on after the mistake: no further error may follow.
    s.apply(example::insert_row{example::employee{1, "ada", "eng", 100}});
    const std::size_t raised = s.apply(example::update_where{example::where{.department = "eng"},
                                                             [](example::employee& e) { e.salary += 1; }});
    s.flush();
    s.restore();
    const std::size_t rows = strata::query(s, [](const example::employee_table& t) { return t.size(); });
    return static_cast<int>(raised + rows);
}
