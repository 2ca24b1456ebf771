#include <strata/restore/checkpoint.hpp>

#include <catch2/catch.hpp>

#include "changelog/log_test_support.hpp"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using strata::checkpoint_file;
using strata::test::read_bytes;
using strata::test::temp_dir;
using strata::test::write_bytes;

TEST_CASE("checkpoint_file returns nothing before anything is saved") {
    temp_dir dir;
    const checkpoint_file cp(dir / "checkpoint");
    CHECK(cp.load("store") == std::nullopt);
    CHECK(cp.entries().empty());
    CHECK_FALSE(std::filesystem::exists(dir / "checkpoint"));
}

TEST_CASE("checkpoint_file saves offsets per store and partition durably") {
    temp_dir dir;
    const auto file = dir / "checkpoint";
    {
        checkpoint_file cp(file);
        cp.save("orders", 0, 42);
        cp.save("orders", 3, 7);
        cp.save("votes", 0, 1'000'000'000'000ULL);
        cp.save("", -1, 0);  // odd but legal names and partitions survive too
        cp.save("orders", 0, 43);  // overwrite
        CHECK(cp.load("orders") == 43u);
    }
    const checkpoint_file cp(file);
    CHECK(cp.load("orders", 0) == 43u);
    CHECK(cp.load("orders", 3) == 7u);
    CHECK(cp.load("orders", 1) == std::nullopt);
    CHECK(cp.load("votes") == 1'000'000'000'000ULL);
    CHECK(cp.load("", -1) == 0u);
    CHECK(cp.load("order") == std::nullopt);
    CHECK(cp.entries().size() == 4);
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        CHECK_FALSE(entry.path().string().ends_with(".tmp"));
}

TEST_CASE("checkpoint_file forgets an entry on erase") {
    temp_dir dir;
    checkpoint_file cp(dir / "checkpoint");
    cp.save("a", 0, 1);
    cp.save("b", 0, 2);
    CHECK(cp.erase("a"));
    CHECK_FALSE(cp.erase("a"));
    CHECK(cp.load("a") == std::nullopt);
    CHECK(cp.load("b") == 2u);
}

TEST_CASE("checkpoint_file serializes concurrent saves of different stores") {
    temp_dir dir;
    const auto file = dir / "checkpoint";
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            checkpoint_file cp(file);  // one object per thread, as separate stores would have
            for (strata::offset_t i = 1; i <= 25; ++i) cp.save("store" + std::to_string(t), t, i);
        });
    for (auto& th : threads) th.join();
    const checkpoint_file cp(file);
    for (int t = 0; t < 4; ++t) CHECK(cp.load("store" + std::to_string(t), t) == 25u);
}

TEST_CASE("checkpoint_file reports any damaged byte as corruption naming the file") {
    temp_dir dir;
    const auto file = dir / "checkpoint";
    checkpoint_file cp(file);
    cp.save("orders", 0, 42);
    cp.save("votes", 2, 9);
    const auto original = read_bytes(file);
    REQUIRE(original.size() > 16);

    for (std::size_t at = 0; at < original.size(); ++at) {
        INFO("byte " << at);
        auto damaged = original;
        damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
        write_bytes(file, damaged);
        try {
            (void)cp.load("orders");
            FAIL("no corruption_error");
        } catch (const strata::corruption_error& e) {
            CHECK(e.file() == file.string());
            CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
            CHECK(e.byte_offset() < original.size());
        }
        // A save refuses to overwrite what it cannot read.
        CHECK_THROWS_AS(cp.save("orders", 0, 50), strata::corruption_error);
    }
    for (std::size_t len = 0; len < original.size(); ++len) {
        INFO("truncated to " << len);
        write_bytes(file, std::vector<char>(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(len)));
        CHECK_THROWS_AS(cp.load("orders"), strata::corruption_error);
    }
    write_bytes(file, original);
    CHECK(cp.load("votes", 2) == 9u);
}

TEST_CASE("checkpoint_file names the offset of a bad checksum") {
    temp_dir dir;
    const auto file = dir / "checkpoint";
    checkpoint_file cp(file);
    cp.save("s", 0, 1);
    auto bytes = read_bytes(file);
    bytes[bytes.size() - 1] = static_cast<char>(bytes[bytes.size() - 1] ^ 1);
    write_bytes(file, bytes);
    try {
        (void)cp.load("s");
        FAIL("no corruption_error");
    } catch (const strata::corruption_error& e) {
        CHECK(e.byte_offset() == bytes.size() - 4);
        CHECK(std::string(e.what()).find("byte offset " + std::to_string(bytes.size() - 4)) !=
              std::string::npos);
    }
}
