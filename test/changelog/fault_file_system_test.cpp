// The model of test_support::fault_file_system itself: what reads see, what
// survives reboot() with and without syncs, torn and failed writes, lost
// pages, the durability of directory changes, locks and the fault counters.

#include <support/fault_file_system.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using strata::byte_buffer;
using test_support::fault;
using test_support::fault_file_system;
using test_support::fault_kind;
using test_support::fs_op;
using test_support::simulated_crash;

namespace {

static_assert(strata::file_system<fault_file_system>);

const std::filesystem::path dir = "/db";

byte_buffer bytes(std::string_view s) {
    const auto b = strata::as_bytes(s);
    return {b.begin(), b.end()};
}
byte_buffer filled(std::size_t n, char c) { return byte_buffer(n, static_cast<std::byte>(c)); }

std::string text(const std::optional<byte_buffer>& b) {
    return b ? std::string(strata::as_chars(*b)) : std::string("<absent>");
}

/// Builds a state with `setup`, then reboots a copy of it under `runs`
/// different random choices; @returns what each reboot left, as seen by `look`.
template <class Setup, class Look>
std::set<std::string> outcomes(Setup setup, Look look, int runs = 200) {
    std::set<std::string> seen;
    for (int i = 0; i < runs; ++i) {
        fault_file_system fs(7);
        setup(fs);
        std::mt19937_64 rng(static_cast<std::uint64_t>(i));
        fs.reboot(rng);
        seen.insert(look(fs));
    }
    return seen;
}

template <class Fn>
void expect_crash(Fn fn) {
    bool crashed = false;
    try {
        fn();
    } catch (const simulated_crash&) {
        crashed = true;
    }
    REQUIRE(crashed);
}

}  // namespace

TEST_CASE("fault_file_system: reads see the cache, names behave as in POSIX") {
    fault_file_system fs;
    fs.create_directories(dir / "sub");
    REQUIRE(fs.exists(dir));
    REQUIRE(fs.exists(dir / "sub"));
    REQUIRE_FALSE(fs.exists(dir / "a"));
    REQUIRE_THROWS_AS(fs.open_read(dir / "a"), strata::changelog_error);
    REQUIRE_THROWS_AS(fs.create_new(dir / "nodir" / "a"), strata::changelog_error);

    {
        const auto f = fs.create_new(dir / "a");
        fs.append(f, bytes("hello "), dir / "a");
        fs.append(f, bytes("world"), dir / "a");
        REQUIRE(fs.size(f, dir / "a") == 11);
        REQUIRE_THROWS_AS(fs.create_new(dir / "a"), strata::changelog_error);  // EEXIST
    }
    {
        const auto w = fs.open_write(dir / "a");
        fs.write_at(w, bytes("W"), 6, dir / "a");
        fs.write_at(w, bytes("!"), 13, dir / "a");  // past the end: a hole of zeros
    }
    const auto r = fs.open_read(dir / "a");
    byte_buffer out(32);
    REQUIRE(fs.read_at(r, out, 0, dir / "a") == 14);
    out.resize(14);
    REQUIRE(out == [] {
        auto b = bytes("hello World");
        b.push_back(std::byte{0});
        b.push_back(std::byte{0});
        b.push_back(std::byte{'!'});
        return b;
    }());
    byte_buffer none(4);
    REQUIRE(fs.read_at(r, none, 14, dir / "a") == 0);
    REQUIRE_THROWS_AS(fs.append(r, bytes("x"), dir / "a"), strata::changelog_error);  // opened read-only

    {
        const auto t = fs.create_truncated(dir / "a");  // same inode, emptied
        REQUIRE(fs.size(t, dir / "a") == 0);
        fs.append(t, bytes("xy"), dir / "a");
    }
    REQUIRE(fs.size(r, dir / "a") == 2);  // the handle sees the inode, truncated

    auto names = fs.list(dir);
    std::sort(names.begin(), names.end());
    REQUIRE(names == std::vector<std::string>{"a", "sub"});

    // A file renamed over keeps serving the readers that opened it.
    {
        const auto f = fs.create_new(dir / "b");
        fs.append(f, bytes("new"), dir / "b");
    }
    fs.rename(dir / "b", dir / "a");
    REQUIRE_FALSE(fs.exists(dir / "b"));
    REQUIRE(text(fs.contents(dir / "a")) == "new");
    REQUIRE(fs.size(r, dir / "a") == 2);
    fs.remove(dir / "a");
    REQUIRE_FALSE(fs.exists(dir / "a"));
    REQUIRE(fs.size(r, dir / "a") == 2);
    REQUIRE_THROWS_AS(fs.remove(dir / "a"), strata::changelog_error);
    REQUIRE_THROWS_AS(fs.rename(dir / "a", dir / "c"), strata::changelog_error);
}

TEST_CASE("fault_file_system: what survives a reboot is what was synced") {
    auto content = [](fault_file_system& fs) { return text(fs.contents(dir / "f")); };

    SECTION("data and name synced: always there, exactly") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.append(f, bytes("durable"), dir / "f");
                fs.sync_data(f, dir / "f");
                fs.sync_directory(dir);
            },
            content);
        REQUIRE(seen == std::set<std::string>{"durable"});
    }
    SECTION("data synced, name not: the file may be missing, never partial") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.append(f, bytes("durable"), dir / "f");
                fs.sync_data(f, dir / "f");
                REQUIRE_FALSE(fs.durably_named(dir / "f"));
                REQUIRE(fs.unsynced_directory_changes() == 1);
            },
            content);
        REQUIRE(seen == std::set<std::string>{"<absent>", "durable"});
    }
    SECTION("name synced, data not: empty, or the data (one page, one size change)") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.sync_directory(dir);
                REQUIRE(fs.durably_named(dir / "f"));
                fs.append(f, bytes("cached"), dir / "f");
            },
            content);
        // The size and the page are lost or kept independently: a kept size
        // over a lost page reads as zeros.
        REQUIRE(seen == std::set<std::string>{"", std::string(6, '\0'), "cached"});
    }
    SECTION("a later append is lost while the synced prefix stays") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.sync_directory(dir);
                fs.append(f, bytes("one,"), dir / "f");
                fs.sync_data(f, dir / "f");
                fs.append(f, bytes("two"), dir / "f");
            },
            content);
        REQUIRE(seen == std::set<std::string>{"one,", std::string("one,\0\0\0", 7), "one,two"});
    }
    SECTION("a restart (process death) keeps the cache") {
        fault_file_system fs;
        fs.create_directories(dir);
        {
            const auto f = fs.create_new(dir / "f");
            fs.append(f, bytes("cached"), dir / "f");
        }
        fs.restart();
        REQUIRE(text(fs.contents(dir / "f")) == "cached");
        // and the directory change is still unsynced: a power loss now may lose it
        REQUIRE(fs.unsynced_directory_changes() == 1);
    }
}

TEST_CASE("fault_file_system: unsynced pages are lost or kept each on its own") {
    constexpr std::size_t page = 4096;

    SECTION("three new pages of a new file: any subset, zeros in the lost ones") {
        std::set<std::string> patterns;
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.sync_directory(dir);
                byte_buffer data = filled(page, 'a');
                strata::append_bytes(data, filled(page, 'b'));
                strata::append_bytes(data, filled(page, 'c'));
                fs.append(f, data, dir / "f");
            },
            [&](fault_file_system& fs) {
                const auto b = *fs.contents(dir / "f");
                std::string pattern;
                if (b.empty()) return std::string("empty");
                REQUIRE(b.size() == 3 * page);
                for (std::size_t p = 0; p < 3; ++p) {
                    const auto first = b[p * page];
                    const auto from = b.begin() + static_cast<std::ptrdiff_t>(p * page);
                    REQUIRE(std::all_of(from, from + page, [&](std::byte x) { return x == first; }));  // whole pages
                    pattern += first == std::byte{0} ? '0' : static_cast<char>(first);
                    REQUIRE((first == std::byte{0} || first == static_cast<std::byte>('a' + p)));
                }
                return pattern;
            },
            400);
        REQUIRE(seen.contains("empty"));
        REQUIRE(seen.contains("abc"));
        REQUIRE(seen.contains("000"));
        REQUIRE(seen.contains("00c"));  // a later page reached the disk, earlier ones did not
        REQUIRE(seen.contains("a0c"));
        REQUIRE(seen.size() == 9);      // every subset, plus the lost size
    }
    SECTION("overwritten pages: each keeps its old or its new content") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.sync_directory(dir);
                fs.append(f, filled(2 * page, 'o'), dir / "f");
                fs.sync_data(f, dir / "f");
                const auto w = fs.open_write(dir / "f");
                fs.write_at(w, filled(2 * page, 'n'), 0, dir / "f");
            },
            [](fault_file_system& fs) {
                const auto b = *fs.contents(dir / "f");
                REQUIRE(b.size() == 2 * page);
                return std::string{static_cast<char>(b[0]), static_cast<char>(b[page])};
            });
        REQUIRE(seen == std::set<std::string>{"oo", "on", "no", "nn"});
    }
    SECTION("an unsynced truncate may or may not persist") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.sync_directory(dir);
                fs.append(f, bytes("keep|cut"), dir / "f");
                fs.sync_data(f, dir / "f");
                const auto w = fs.open_write(dir / "f");
                fs.truncate(w, 4, dir / "f");
            },
            [](fault_file_system& fs) { return text(fs.contents(dir / "f")); });
        REQUIRE(seen.contains("keep"));
        REQUIRE(seen.contains("keep|cut"));
        for (const auto& s : seen) REQUIRE(s.starts_with("keep"));
    }
}

TEST_CASE("fault_file_system: a rename is durable once its directory is synced") {
    // The manifest protocol: write a temporary file, sync it, rename it over.
    auto replace = [](fault_file_system& fs, bool sync_dir) {
        fs.create_directories(dir);
        {
            const auto m = fs.create_new(dir / "m");
            fs.append(m, bytes("old"), dir / "m");
            fs.sync_data(m, dir / "m");
            fs.sync_directory(dir);
        }
        {
            const auto t = fs.create_truncated(dir / "m.tmp");
            fs.append(t, bytes("new"), dir / "m.tmp");
            fs.sync_data(t, dir / "m.tmp");
        }
        fs.rename(dir / "m.tmp", dir / "m");
        if (sync_dir) fs.sync_directory(dir);
    };
    auto look = [](fault_file_system& fs) {
        return text(fs.contents(dir / "m")) + "+" + text(fs.contents(dir / "m.tmp"));
    };

    SECTION("not synced: old or new, each change on its own") {
        const auto seen = outcomes([&](fault_file_system& fs) { replace(fs, false); }, look);
        // create of m.tmp lost + rename lost: old; create kept + rename lost:
        // old plus the temporary; rename kept: new.
        REQUIRE(seen == std::set<std::string>{"old+<absent>", "old+new", "new+<absent>"});
    }
    SECTION("synced: always new") {
        const auto seen = outcomes([&](fault_file_system& fs) { replace(fs, true); }, look);
        REQUIRE(seen == std::set<std::string>{"new+<absent>"});
    }
    SECTION("a remove not synced may be undone") {
        const auto seen = outcomes(
            [](fault_file_system& fs) {
                fs.create_directories(dir);
                const auto f = fs.create_new(dir / "f");
                fs.append(f, bytes("x"), dir / "f");
                fs.sync_data(f, dir / "f");
                fs.sync_directory(dir);
                fs.remove(dir / "f");
            },
            [](fault_file_system& fs) { return text(fs.contents(dir / "f")); });
        REQUIRE(seen == std::set<std::string>{"x", "<absent>"});
    }
    SECTION("changes in another directory are not synced by this one") {
        fault_file_system fs;
        fs.create_directories(dir / "other");
        { const auto a = fs.create_new(dir / "a"); }
        { const auto b = fs.create_new(dir / "other" / "b"); }
        fs.sync_directory(dir);
        REQUIRE(fs.durably_named(dir / "a"));
        REQUIRE_FALSE(fs.durably_named(dir / "other" / "b"));
        REQUIRE(fs.unsynced_directory_changes() == 1);
    }
}

TEST_CASE("fault_file_system: a crash stops everything until reboot") {
    fault_file_system fs(3);
    fs.create_directories(dir);
    const std::uint64_t before = fs.operations();
    auto f = fs.create_new(dir / "f");
    fs.append(f, bytes("0123456789"), dir / "f");
    REQUIRE(fs.operations() == before + 2);
    REQUIRE(fs.operations(fs_op::append) == 1);
    REQUIRE(fs.operations(fs_op::create) == 1);

    SECTION("crash before the operation: nothing of it happens") {
        fs.arm(fault{fault_kind::crash, fs.operations() + 2});
        fs.sync_data(f, dir / "f");  // the first operation after arming: not yet
        expect_crash([&] { fs.append(f, bytes("abc"), dir / "f"); });
        REQUIRE(fs.crashed());
        REQUIRE(fs.fired()->op == fs_op::append);
        REQUIRE(fs.fired()->operation == before + 4);
        REQUIRE(text(fs.contents(dir / "f")) == "0123456789");
        // Every later operation, reads included, is refused.
        expect_crash([&] { (void)fs.exists(dir / "f"); });
        expect_crash([&] { (void)fs.size(f, dir / "f"); });
        expect_crash([&] { fs.sync_directory(dir); });
        std::mt19937_64 rng(1);
        fs.reboot(rng);
        REQUIRE_FALSE(fs.crashed());
        // The data was synced, its name not: present in full or absent.
        const auto c = text(fs.contents(dir / "f"));
        REQUIRE((c == "0123456789" || c == "<absent>"));
        // Handles from before the reboot are stale.
        REQUIRE_THROWS_AS(fs.append(f, bytes("x"), dir / "f"), strata::changelog_error);
    }
    SECTION("a torn append leaves a strict prefix in the cache") {
        std::set<std::size_t> prefixes;
        for (int i = 0; i < 50; ++i) {
            fault_file_system g(static_cast<std::uint64_t>(i));
            g.create_directories(dir);
            const auto h = g.create_new(dir / "f");
            g.arm(fault{fault_kind::torn_crash, 1, fs_op::append});
            expect_crash([&] { g.append(h, bytes("abcdefghijklmnopqrstuvwxyz"), dir / "f"); });
            const std::string c = text(g.contents(dir / "f"));
            REQUIRE(c.size() < 26);
            REQUIRE(std::string_view("abcdefghijklmnopqrstuvwxyz").starts_with(c));
            REQUIRE(g.fired()->bytes_written == c.size());
            prefixes.insert(c.size());
        }
        REQUIRE(prefixes.size() > 5);  // the prefix is random
    }
    SECTION("a fault can count only the operations of one kind") {
        fs.arm(fault{fault_kind::crash, 2, fs_op::sync_data});
        fs.sync_data(f, dir / "f");  // sync_data #1
        fs.append(f, bytes("x"), dir / "f");
        expect_crash([&] { fs.sync_data(f, dir / "f"); });
        REQUIRE(fs.fired()->op == fs_op::sync_data);
    }
    SECTION("a fault armed at a number already passed never fires") {
        fs.arm(fault{fault_kind::crash, 1});
        fs.append(f, bytes("x"), dir / "f");
        fs.sync_data(f, dir / "f");
        REQUIRE_FALSE(fs.crashed());
        REQUIRE(fs.armed());
    }
}

TEST_CASE("fault_file_system: I/O errors") {
    fault_file_system fs(5);
    fs.create_directories(dir);
    const auto f = fs.create_new(dir / "f");
    fs.sync_directory(dir);
    fs.append(f, bytes("base"), dir / "f");
    fs.sync_data(f, dir / "f");

    SECTION("EIO on append writes nothing, and the file system goes on") {
        fs.arm(fault{fault_kind::eio, fs.operations() + 1});
        REQUIRE_THROWS_WITH(fs.append(f, bytes("lost"), dir / "f"), Catch::Contains("Input/output error"));
        REQUIRE_FALSE(fs.crashed());
        REQUIRE(text(fs.contents(dir / "f")) == "base");
        fs.append(f, bytes("+more"), dir / "f");
        REQUIRE(text(fs.contents(dir / "f")) == "base+more");
    }
    SECTION("ENOSPC on append leaves a strict prefix") {
        fs.arm(fault{fault_kind::enospc, 1, fs_op::append});
        // fs_op::append has been counted once already: the armed number is passed
        fs.append(f, bytes("-"), dir / "f");
        fs.arm(fault{fault_kind::enospc, fs.operations(fs_op::append) + 1, fs_op::append});
        REQUIRE_THROWS_WITH(fs.append(f, bytes("0123456789"), dir / "f"), Catch::Contains("No space left"));
        const std::string c = text(fs.contents(dir / "f"));
        REQUIRE(c.starts_with("base-"));
        REQUIRE(c.size() < 15);
        REQUIRE(std::string_view("base-0123456789").starts_with(c));
        REQUIRE(fs.fired()->bytes_written == c.size() - 5);
    }
    SECTION("EIO on sync_data: the pages it failed to write stay undetermined") {
        std::set<std::string> seen;
        for (int i = 0; i < 100; ++i) {
            fault_file_system g(static_cast<std::uint64_t>(i));
            g.create_directories(dir);
            const auto h = g.create_new(dir / "f");
            g.sync_directory(dir);
            g.append(h, filled(4096, 'a'), dir / "f");
            g.sync_data(h, dir / "f");
            const auto w = g.open_write(dir / "f");
            g.write_at(w, filled(4096, 'b'), 0, dir / "f");  // page 0: undetermined below
            g.append(h, filled(4096, 'c'), dir / "f");        // page 1
            g.arm(fault{fault_kind::eio, g.operations(fs_op::sync_data) + 1, fs_op::sync_data});
            REQUIRE_THROWS_AS(g.sync_data(h, dir / "f"), strata::changelog_error);
            REQUIRE(text(g.contents(dir / "f")) == std::string(4096, 'b') + std::string(4096, 'c'));
            // A later sync_data succeeds, as on Linux, but does not write the
            // page the failed one dropped; page 1 is written again first, so it is.
            g.write_at(w, filled(4096, 'd'), 4096, dir / "f");
            g.sync_data(h, dir / "f");
            std::mt19937_64 rng(static_cast<std::uint64_t>(i));
            g.reboot(rng);
            const auto b = *g.contents(dir / "f");
            REQUIRE(b.size() == 8192);
            REQUIRE(b[4096] == std::byte{'d'});
            seen.insert(std::string(1, static_cast<char>(b[0])));
        }
        REQUIRE(seen == std::set<std::string>{"a", "b"});
    }
    SECTION("EIO on other operations: no effect") {
        fs.arm(fault{fault_kind::eio, fs.operations() + 1});
        REQUIRE_THROWS_AS(fs.rename(dir / "f", dir / "g"), strata::changelog_error);
        REQUIRE(fs.exists(dir / "f"));
        REQUIRE_FALSE(fs.exists(dir / "g"));
    }
}

TEST_CASE("fault_file_system: lock") {
    fault_file_system fs;
    fs.create_directories(dir);
    std::optional<fault_file_system::file> held = fs.lock(dir / "strata.lock");
    REQUIRE(fs.exists(dir / "strata.lock"));
    REQUIRE_THROWS_WITH(fs.lock(dir / "strata.lock"), Catch::Contains("already open elsewhere"));
    // Another copy of the handle shares the state, and the lock.
    const fault_file_system copy = fs;
    REQUIRE_THROWS_WITH(copy.lock(dir / "strata.lock"), Catch::Contains("already open elsewhere"));
    {
        // A moved handle still holds it.
        fault_file_system::file moved = std::move(*held);
        held.reset();
        REQUIRE_THROWS_AS(fs.lock(dir / "strata.lock"), strata::changelog_error);
    }
    held = fs.lock(dir / "strata.lock");  // released with the last handle
    // A lock dies with its process: after a restart it can be taken again,
    // and the stale handle, when it goes, does not release the new lock.
    fs.restart();
    auto again = fs.lock(dir / "strata.lock");
    held.reset();
    REQUIRE_THROWS_AS(fs.lock(dir / "strata.lock"), strata::changelog_error);
    // A different file is a different lock.
    REQUIRE_NOTHROW((void)fs.lock(dir / "other.lock"));
}
