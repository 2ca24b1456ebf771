// A custom store with two tables made fault tolerant: the program of
// docs/tutorial-custom-store.md.
//
// The shop store (shop.hpp) holds customers and orders; an order debits its
// customer, so one update changes a row in each table. Its codec is one
// small codec per table, composed with strata::multi_table_codec. The
// program applies updates, flushes, applies more, and then loses the stack
// without a flush, as a crash would; a fresh stack restored from the
// changelog directory must hold exactly the flushed state.
//
// Usage: two_tables [--quick]   (--quick is accepted; the program is small anyway)

#include "shop.hpp"

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <unistd.h>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::cout << (ok ? "  ok   " : "  FAIL ") << what << '\n';
    if (!ok) ++failures;
}

// What a test compares: both tables.
struct tables {
    std::map<std::int64_t, shop::customer> customers;
    std::map<std::int64_t, shop::order> orders;
    friend bool operator==(const tables&, const tables&) = default;
};

template <class Stack>
tables contents(const Stack& s) {
    return strata::query(s, [](const shop::shop_store& t) { return tables{t.customers(), t.orders()}; });
}

}  // namespace

int main() {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("strata-two-tables-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    strata::metrics::registry registry;
    tables flushed;

    {
        // [make-stack]
        strata::file_log log(dir / "changelog");
        auto store = shop::shop_store("shop")
                   | strata::logged(log, shop::shop_codec{})  // one record per changed row, either table
                   | strata::cached()                         // ... once per row per flush
                   | strata::metered(registry);
        // [make-stack]

        // [use-stack]
        store.apply(shop::add_customer{{1, "Ada", 100'00}});
        store.apply(shop::add_customer{{2, "Grace", 20'00}});
        const bool placed = store.apply(shop::place_order{{10, 1, 30'00}});   // Ada pays 30.00
        const bool refused = store.apply(shop::place_order{{11, 2, 50'00}});  // Grace cannot: changes nothing
        store.flush();  // durable: all of it, or after a crash none of it
        // [use-stack]
        check(placed && !refused, "apply hands back the store's result through every layer: placed, refused");
        flushed = contents(store);
        check(flushed.customers.at(1).balance_cents == 70'00 && flushed.orders.size() == 1,
              "the order debited its customer: one update, a row in each table");

        // [crash]
        store.apply(shop::cancel_order{10});  // applied, never flushed ...
        store.apply(shop::add_customer{{3, "Edsger", 5'00}});
        // ... and the process dies here: the stack and the log go away without a flush.
        // [crash]
        check(contents(store).orders.empty(), "before the crash the store holds the unflushed updates");
    }

    {
        // [restore]
        strata::file_log log(dir / "changelog");
        auto store = shop::shop_store("shop") | strata::logged(log, shop::shop_codec{}) | strata::cached();
        const strata::restore_progress p = store.restore();
        // [restore]
        std::cout << "  restored " << p.records_done << " records\n";
        check(contents(store) == flushed, "a fresh stack restored from the changelog holds exactly the flushed state");
        check(p.records_done == 3,
              "the cache wrote each changed row once per flush: customers 1 and 2, order 10 (the refused order: none)");
    }

    std::filesystem::remove_all(dir);
    if (failures != 0) {
        std::cout << failures << " check(s) failed\n";
        return 1;
    }
    std::cout << "two tables: all checks passed\n";
}
