// Bad bytes in a changelog give a clear error at restore, never a crash.

#include <catch2/catch.hpp>

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <support/temp_dir.hpp>

#include <fstream>
#include <string>

using store_t = strata::ordered_map_store<std::int64_t, std::string>;

TEST_CASE("a record the codec cannot decode names the store and the offset", "[restore]") {
    strata::memory_log log;
    {
        auto s = store_t("orders") | strata::logged(log);
        s.put(1, "one");
    }
    const std::string short_key = "abc";  // an int64 key needs 8 bytes
    log.append(strata::record_view{strata::as_bytes(short_key), strata::as_bytes(std::string_view("x"))});
    auto fresh = store_t("orders") | strata::logged(log);
    try {
        fresh.restore();
        FAIL("restore accepted a 3-byte int64 key");
    } catch (const strata::restore_error& e) {
        const std::string what = e.what();
        CHECK(what.find("'orders'") != std::string::npos);
        CHECK(what.find("offset 1") != std::string::npos);
        CHECK(what.find("std::int64_t") != std::string::npos);  // from the nested serde_error
        CHECK(e.offset() == 1);
        REQUIRE_THROWS_AS(std::rethrow_if_nested(e), strata::serde_error);
    }
    REQUIRE(fresh.get(1) == std::optional<std::string>("one"));  // what came before is restored
}

TEST_CASE("a damaged file changelog fails restore with the file and offset", "[restore][file_log]") {
    test_support::temp_dir dir;
    {
        strata::file_log log(dir.path() / "log");
        auto s = store_t("orders") | strata::logged(log);
        for (std::int64_t k = 0; k < 100; ++k) s.put(k, std::string(50, 'v'));
        s.flush();
    }
    // Damage a byte early in the only segment: not a torn tail, so opening refuses.
    std::filesystem::path segment;
    for (const auto& f : std::filesystem::directory_iterator(dir.path() / "log"))
        if (f.path().extension() == ".log") segment = f.path();
    REQUIRE_FALSE(segment.empty());
    {
        std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(100);
        f.put('\x7f');
    }
    try {
        strata::file_log log(dir.path() / "log");
        FAIL("a damaged segment was opened");
    } catch (const strata::corruption_error& e) {
        const std::string what = e.what();
        CHECK(what.find(segment.filename().string()) != std::string::npos);
        CHECK(what.find("offset") != std::string::npos);
    }
}
