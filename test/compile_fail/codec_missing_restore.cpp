// expect: strata::logged: the codec is missing restore(Store&, record_view) const
// A codec that writes records but cannot read them back.
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>

#include <relational_table.hpp>

#include "use_after_mistake.hpp"

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
    return compile_fail::use_table_stack(s);  // used on after the mistake: no further error may follow
}
