// The tutorial: from a plain struct to a fault-tolerant store.
//
// A value type defined with BOOST_HANA_DEFINE_STRUCT goes into an
// ordered_map_store; logged(file_log) | cached() | metered(registry) make it
// durable, cheap to write and observable. A fresh stack restored from the
// same changelog directory must equal the old store.
//
// Usage: tutorial [--quick]   (--quick is accepted; the tutorial is small anyway)

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

// [value-type]
// A plain struct; BOOST_HANA_DEFINE_STRUCT gives it a serde, field by field.
struct account {
    BOOST_HANA_DEFINE_STRUCT(account,
        (std::string, owner),
        (std::int64_t, balance_cents),
        (std::vector<std::string>, tags));
    friend bool operator==(const account&, const account&) = default;
};
// [value-type]

using account_store = strata::ordered_map_store<std::string, account>;

}  // namespace

int main(int argc, char** argv) try {
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) != "--quick") throw std::invalid_argument("usage: tutorial [--quick]");

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("strata-tutorial-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);

    // One registry for the process: both stacks below report into it.
    strata::metrics::registry registry;
    account_store before("accounts");  // a copy of the state the first stack leaves

    {
        // [make-store]
        strata::file_log log(dir / "changelog");
        auto store = account_store("accounts")
                   | strata::logged(log)          // every change becomes a changelog record
                   | strata::cached()             // ... written once per key per flush
                   | strata::metered(registry);   // ... and every operation timed
        // [make-store]

        // [use-store]
        store.put("alice", account{"Alice", 120'00, {"gold"}});
        store.put("bob", account{"Bob", 5'00, {}});
        store.apply(strata::put_op<std::string, account>{"carol", account{"Carol", 0, {"new"}}});

        std::optional<account> alice = store.get("alice");
        alice->balance_cents -= 20'00;
        store.put("alice", *alice);
        store.erase("bob");

        // Durable from here on: the records reach the file and are fdatasync'ed.
        const strata::offset_t durable = store.flush();
        // [use-store]

        // Five updates, three keys: the cache wrote one record per key.
        check(durable == 3, "flush makes one record per touched key durable");
        check(store.get("alice")->balance_cents == 100'00, "get returns the latest value");
        check(!store.get("bob").has_value(), "erase removes the key");
        before = strata::innermost(store);
    }  // the log closes here: a file_log directory is open in one place at a time

    // [restore]
    strata::file_log log(dir / "changelog");
    auto restored = account_store("accounts")
                  | strata::logged(log)
                  | strata::cached()
                  | strata::metered(registry);
    const strata::restore_progress progress = restored.restore();
    std::cout << "restored " << progress.records_done << " records of '" << progress.store << "'\n";
    // [restore]

    // [compare]
    // The user's store at the bottom of the stack compares like any value.
    const bool same = strata::innermost(restored) == before;
    // [compare]
    check(same, "the restored store equals the store that wrote the changelog");
    check(progress.records_done == 3, "restore read the three records");
    check(restored.get("carol") == account{"Carol", 0, {"new"}}, "a restored value reads back");

    // [metrics]
    const std::string metrics = strata::metrics::to_prometheus(registry);
    // [metrics]
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);)
        if (line.find("_bucket{") == std::string::npos) std::cout << line << "\n";  // buckets are long
    check(metrics.find("strata_changelog_records_total{store=\"accounts\"} 3") != std::string::npos,
          "the records counter says 3");
    check(metrics.find("strata_restore_records_restored{store=\"accounts\"} 3") != std::string::npos,
          "the restore gauge says 3");

    std::filesystem::remove_all(dir);
    std::cout << (failures == 0 ? "tutorial: all checks passed\n" : "tutorial: CHECKS FAILED\n");
    return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "tutorial: " << e.what() << "\n";
    return 2;
}
