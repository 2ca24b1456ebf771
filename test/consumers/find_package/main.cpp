// A small application using strata as a dependency: a store stacked with a
// durable file changelog, a cache and metrics; a few writes, a flush, then a
// fresh stack restored from the same changelog must hold the same state.
// Exits non-zero on any mismatch.
#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

using balances = strata::ordered_map_store<std::string, std::int64_t>;

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        std::cerr << "FAILED: " << what << '\n';
        ++failures;
    }
}

}  // namespace

int main() {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("strata-consumer-" + std::to_string(::getpid()));
    fs::remove_all(dir);

    balances expected("expected");
    expected.put("alice", 15);
    expected.put("carol", 30);
    expected.put("dave", -7);

    try {
        {
            strata::file_log log(dir / "changelog");
            strata::metrics::registry registry;
            auto s = balances("balances") | strata::logged(log) | strata::cached() | strata::metered(registry);
            s.put("alice", 10);
            s.put("bob", 20);
            s.put("carol", 30);
            s.put("alice", 15);
            check(s.erase("bob"), "erase(bob) finds bob");
            s.put("dave", -7);
            check(s.get("alice") == 15, "get(alice) == 15 before flush");
            check(!s.get("bob"), "bob is gone before flush");
            s.flush();
            check(log.durable_offset() > 0, "flush made records durable");
            check(strata::innermost(s) == expected, "the written store holds the expected state");

            const std::string text = strata::metrics::to_prometheus(registry);
            check(text.find("strata_changelog_records_total{store=\"balances\"}") != std::string::npos,
                  "the registry counts changelog records");
            check(text.find("strata_store_operation_seconds") != std::string::npos,
                  "the registry times operations");
        }  // the log is closed (and its directory unlocked) here

        {
            strata::file_log log(dir / "changelog");
            strata::metrics::registry registry;
            auto s = balances("balances") | strata::logged(log) | strata::cached() | strata::metered(registry);
            const auto progress = s.restore();
            check(progress.records_done > 0, "restore read records");
            check(strata::innermost(s) == expected, "the restored store equals the written one");
            check(s.get("alice") == 15 && s.get("carol") == 30 && s.get("dave") == -7 && !s.get("bob"),
                  "reads through the restored stack");
        }
    } catch (const std::exception& e) {
        std::cerr << "FAILED: exception: " << e.what() << '\n';
        ++failures;
    }

    fs::remove_all(dir);
    if (failures == 0) std::cout << "strata consumer: write, flush, restore: ok\n";
    return failures == 0 ? 0 : 1;
}
