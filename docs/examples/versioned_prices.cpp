// Timestamped and versioned key-value stores: prices that change over time,
// kept with the time of each change; "the price as of t" for one product
// and for a range of them; logged to a file changelog, restored after a
// restart, with each record's time kept.
//
// Usage: versioned_prices [--quick]   (--quick is accepted; the example is small anyway)

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/timestamped.hpp>
#include <strata/stores/versioned_store.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

using namespace std::chrono_literals;

constexpr std::int64_t day = 24 * 3600 * 1000;

}  // namespace

int main(int argc, char** argv) try {
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) != "--quick") throw std::invalid_argument("usage: versioned_prices [--quick]");

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("strata-versioned-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);

    {
        // [versioned-store]
        // Prices in cents per product; answers "as of t" for the last 30 days.
        strata::file_log log(dir / "prices");
        auto prices = strata::versioned_store<std::string, std::int64_t>("prices", {.history_retention = 30 * 24h})
                    | strata::logged(log);
        using price = strata::versioned_put<std::string, std::int64_t>;
        prices.apply(price{"apple", 120, 1 * day});
        prices.apply(price{"pear", 90, 1 * day});
        prices.apply(price{"apple", 110, 5 * day});
        prices.apply(price{"apple", 115, 3 * day});  // a late correction: goes into the history
        prices.apply(strata::versioned_erase<std::string>{"pear", 8 * day});  // pear is no longer sold
        prices.flush();
        // [versioned-store]

        // [timestamped-store]
        // The latest stock per product, with the time it was counted.
        strata::file_log stock_log(dir / "stock");
        auto stock = strata::hash_map_store<std::string, strata::timestamped<std::int64_t>>("stock")
                   | strata::logged(stock_log)
                   | strata::cached();
        stock.put("apple", {40, 2 * day});
        stock.put("apple", {35, 6 * day});
        stock.flush();  // one record: 35, with the record's timestamp 6 days in
        // [timestamped-store]
    }

    // [restore-and-read]
    strata::file_log log(dir / "prices");
    auto prices = strata::versioned_store<std::string, std::int64_t>("prices", {.history_retention = 30 * 24h})
                | strata::logged(log);
    prices.restore();
    const auto& p = strata::innermost(prices);
    const std::optional<strata::versioned_value<std::int64_t>> apple_on_day_4 = p.get_as_of("apple", 4 * day);
    // Every product from "a" to "z" as it was on day 2: {key, {value, valid_from, valid_to}}.
    const auto on_day_2 = p.range_as_of("a", "z", 2 * day);
    // [restore-and-read]

    if (apple_on_day_4)
        std::cout << "apple on day 4: " << apple_on_day_4->value << " cents, set on day "
                  << apple_on_day_4->valid_from / day << "\n";
    for (const auto& [product, v] : on_day_2) std::cout << product << " on day 2: " << v.value << " cents\n";

    check(apple_on_day_4 && apple_on_day_4->value == 115 && apple_on_day_4->valid_from == 3 * day &&
              apple_on_day_4->valid_to == 5 * day,
          "apple cost 115 on day 4 (from day 3 to day 5)");
    check(p.get("apple") && p.get("apple")->value == 110, "apple costs 110 now");
    check(!p.get("pear") && p.get_as_of("pear", 7 * day) && p.get_as_of("pear", 7 * day)->value == 90,
          "pear is gone now, and cost 90 on day 7");
    using row = std::pair<std::string, strata::versioned_value<std::int64_t>>;
    check(on_day_2 == std::vector<row>{{"apple", {120, 1 * day, 3 * day}}, {"pear", {90, 1 * day, 8 * day}}},
          "on day 2 both were sold, at their first prices");

    strata::file_log stock_log(dir / "stock");
    auto stock = strata::hash_map_store<std::string, strata::timestamped<std::int64_t>>("stock")
               | strata::logged(stock_log);
    stock.restore();
    check(stock.get("apple") == strata::timestamped<std::int64_t>{35, 6 * day},
          "the stock comes back with the time it was counted");

    std::filesystem::remove_all(dir);
    if (failures != 0) return 1;
    std::cout << "versioned prices: all checks passed\n";
    return 0;
} catch (const std::exception& e) {
    std::cerr << "versioned_prices: " << e.what() << "\n";
    return 1;
}
