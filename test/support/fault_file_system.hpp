#pragma once
// test_support::fault_file_system: an in-memory file system for
// strata::basic_file_log that models the page cache and the disk separately,
// and injects faults: a crash (optionally tearing the write it interrupts),
// EIO, ENOSPC.
//
// The model
// ---------
// Each inode has `cache` bytes (what reads see) and a `disk` image (what a
// crash keeps). A write (append, write_at, truncate) changes the cache, marks
// the 4096-byte pages it touched dirty and the size unsynced; sync_data copies
// the file's cache to its disk image. Directories: the namespace the
// operations see (path -> inode) is the cache namespace; every create, rename
// and remove is also queued as an unsynced change of its directory, and
// sync_directory(d) makes the entries of d durable (the durable namespace's
// entries under d become the cache's) and drops d's queued changes.
// Directories themselves (create_directories) are durable at once.
//
// A handle (`file`) refers to an inode, not to a name: a file renamed over or
// removed keeps serving the handles opened on it, as in POSIX. `lock(p)`
// creates p if needed (not counted, never faulted) and fails with
// changelog_error "... is already open elsewhere" while another handle it
// returned lives.
//
// reboot(rng) builds the state after a power loss: each file is its disk
// image plus a random subset of its dirty pages (each page kept or lost on
// its own, so a later page may reach the disk without an earlier one), its
// size the synced or the cached one at random (bytes past a lost page read as
// the old disk content where there was some, else as zeros); the namespace is
// the durable one with each unsynced change applied or not, independently, at
// random (in the order they were made). restart() is a process death without
// a power loss: the cache is kept. Both release every lock and make every
// handle opened before them stale (using one throws changelog_error), and
// disarm the fault.
//
// Faults
// ------
// Mutating operations are counted from the file system's creation (reboots do
// not reset the count): create_new and create_truncated ("create"), append,
// write_at, sync_data, truncate, rename, remove, sync_directory. A run can be
// made once without a fault to count its operations (operations(),
// operations(fs_op)), and again with a fault armed at a chosen number:
//
//  - fault_kind::crash: the operation is not performed; it throws
//    simulated_crash, and so does every later operation (reads included)
//    until reboot() or restart().
//  - fault_kind::torn_crash: an append or write_at first writes a random
//    strict prefix of its bytes (maybe none) to the cache, then crashes as
//    above; any other operation crashes before it.
//  - fault_kind::eio: the operation fails with changelog_error (EIO) and has
//    no effect, except sync_data: its dirty pages become undetermined (as
//    after a failed fsync on Linux: they stay "dirty" for the reboot lottery
//    even through later successful sync_data calls, until written again).
//  - fault_kind::enospc: an append or write_at writes a random strict prefix
//    (maybe none) to the cache, then fails with changelog_error (ENOSPC); any
//    other operation fails with ENOSPC and no effect.
//
// After an eio or enospc fault the file system goes on working: the fault
// fires once.
//
// simulated_crash is deliberately NOT derived from std::exception, so that no
// `catch (const std::exception&)` in the code under test can swallow or wrap
// a crash: only `catch (...)` sees it (and must rethrow it).

#include <strata/changelog/file_system.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace test_support {

/// The mutating operations, which are counted and can be faulted.
enum class fs_op : std::uint8_t { create, append, write_at, sync_data, truncate, rename, remove, sync_directory };
inline constexpr std::size_t fs_op_count = 8;

[[nodiscard]] inline const char* to_string(fs_op op) noexcept {
    switch (op) {
        case fs_op::create: return "create";
        case fs_op::append: return "append";
        case fs_op::write_at: return "write_at";
        case fs_op::sync_data: return "sync_data";
        case fs_op::truncate: return "truncate";
        case fs_op::rename: return "rename";
        case fs_op::remove: return "remove";
        case fs_op::sync_directory: return "sync_directory";
    }
    return "?";
}

enum class fault_kind : std::uint8_t { crash, torn_crash, eio, enospc };

[[nodiscard]] inline const char* to_string(fault_kind k) noexcept {
    switch (k) {
        case fault_kind::crash: return "crash";
        case fault_kind::torn_crash: return "torn crash";
        case fault_kind::eio: return "EIO";
        case fault_kind::enospc: return "ENOSPC";
    }
    return "?";
}

/// A fault to inject: at the `at`-th (1-based, counted since the file system
/// was made) mutating operation, or the `at`-th one of kind `only` when set.
struct fault {
    fault_kind kind = fault_kind::crash;
    std::uint64_t at = 0;
    std::optional<fs_op> only = {};
};

/// A fault that fired: which operation it hit.
struct fired_fault {
    fault_kind kind = fault_kind::crash;
    fs_op op = fs_op::create;
    std::uint64_t operation = 0;  ///< its number among all mutating operations
    std::string path;
    std::size_t bytes_written = 0;  ///< the prefix a torn append/write_at or ENOSPC left
};

/// Thrown by the operation a crash interrupts and by every operation after
/// it until reboot. Not a std::exception (see the file comment).
struct simulated_crash {
    fired_fault where;
};

class fault_file_system;

namespace fault_fs_detail {

inline constexpr std::uint64_t page_size = 4096;

struct inode {
    strata::byte_buffer cache;
    strata::byte_buffer disk;
    std::set<std::uint64_t> dirty;         ///< pages written since the disk image was taken
    std::set<std::uint64_t> undetermined;  ///< dirty pages a failed sync_data left (see eio)
    bool size_dirty = false;
};

struct ns_change {
    enum kind_t : std::uint8_t { link, unlink, move } kind = link;
    std::string from;  ///< unlink, move
    std::string to;    ///< link, move
    std::shared_ptr<inode> node;
};

struct lock_token {};

struct state {
    explicit state(std::uint64_t seed) : rng(seed) {}

    std::map<std::string, std::shared_ptr<inode>> names;    ///< the cache namespace
    std::map<std::string, std::shared_ptr<inode>> durable;  ///< what survives a crash
    std::vector<ns_change> unsynced;                        ///< directory changes not yet synced
    std::set<std::string> dirs{"/"};
    std::map<std::string, std::weak_ptr<lock_token>> locks;

    std::uint64_t boot = 0;
    std::uint64_t total = 0;
    std::array<std::uint64_t, fs_op_count> by_kind{};
    std::optional<fault> armed;
    std::optional<fired_fault> fired;
    bool crashed = false;
    std::mt19937_64 rng;
};

[[nodiscard]] inline std::string key(const std::filesystem::path& p) {
    std::string s = p.lexically_normal().generic_string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

[[nodiscard]] inline std::string parent(const std::string& k) {
    const auto slash = k.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return k.substr(0, slash);
}

}  // namespace fault_fs_detail

/// An in-memory file system with a page cache, a disk and injected faults;
/// satisfies strata::file_system. A cheap copyable handle: copies share one
/// state.
class fault_file_system {
public:
    /// An open file: an inode, not a name. Move-only; a handle from lock()
    /// holds the lock while it lives.
    class file {
    public:
        file() = default;
        file(file&&) noexcept = default;
        file& operator=(file&&) noexcept = default;
        file(const file&) = delete;
        file& operator=(const file&) = delete;
        ~file() = default;

    private:
        friend class fault_file_system;
        std::shared_ptr<fault_fs_detail::inode> node_;
        std::uint64_t boot_ = 0;
        bool readable_ = false;
        bool writable_ = false;
        bool appends_ = false;
        std::shared_ptr<fault_fs_detail::lock_token> lock_;
    };

    /// @param seed of the random prefixes torn writes and ENOSPC leave
    explicit fault_file_system(std::uint64_t seed = 1) : s_(std::make_shared<fault_fs_detail::state>(seed)) {}

    // ---- faults and counters

    /// Arms `f`, replacing any fault armed before. It fires once.
    void arm(fault f) const { s_->armed = f; }
    void disarm() const { s_->armed.reset(); }
    [[nodiscard]] bool armed() const noexcept { return s_->armed.has_value(); }
    /// The last fault that fired (kept across reboots until another fires).
    [[nodiscard]] const std::optional<fired_fault>& fired() const noexcept { return s_->fired; }
    void forget_fired() const { s_->fired.reset(); }
    /// Whether a crash happened and no reboot/restart followed yet.
    [[nodiscard]] bool crashed() const noexcept { return s_->crashed; }
    /// Mutating operations since the file system was made.
    [[nodiscard]] std::uint64_t operations() const noexcept { return s_->total; }
    [[nodiscard]] std::uint64_t operations(fs_op op) const noexcept {
        return s_->by_kind[static_cast<std::size_t>(op)];
    }

    /// The power is cut: builds the state that survives (see the file comment).
    template <class Rng>
    void reboot(Rng& rng) const {
        using namespace fault_fs_detail;
        auto coin = [&rng] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
        state& s = *s_;
        auto ns = s.durable;
        for (const ns_change& c : s.unsynced) {
            if (!coin()) continue;
            if (c.kind == ns_change::link) {
                ns[c.to] = c.node;
            } else if (c.kind == ns_change::unlink) {
                ns.erase(c.from);
            } else {
                ns.erase(c.from);
                ns[c.to] = c.node;
            }
        }
        std::map<const inode*, std::shared_ptr<inode>> rebuilt;
        for (auto& [name, node] : ns) {
            auto& fresh = rebuilt[node.get()];
            if (!fresh) fresh = std::make_shared<inode>(after_power_loss(*node, rng));
            node = fresh;
        }
        s.names = ns;
        s.durable = std::move(ns);
        s.unsynced.clear();
        after_restart();
    }

    /// The process dies, the machine does not: the page cache is kept.
    void restart() const { after_restart(); }

    // ---- inspection, for tests

    /// What a read of `p` sees now, or nullopt if it does not exist.
    [[nodiscard]] std::optional<strata::byte_buffer> contents(const std::filesystem::path& p) const {
        const auto it = s_->names.find(fault_fs_detail::key(p));
        if (it == s_->names.end()) return std::nullopt;
        return it->second->cache;
    }
    /// The disk image of the inode `p` names now, or nullopt if it does not exist.
    [[nodiscard]] std::optional<strata::byte_buffer> disk_image(const std::filesystem::path& p) const {
        const auto it = s_->names.find(fault_fs_detail::key(p));
        if (it == s_->names.end()) return std::nullopt;
        return it->second->disk;
    }
    /// Whether `p` has a durable directory entry.
    [[nodiscard]] bool durably_named(const std::filesystem::path& p) const {
        return s_->durable.contains(fault_fs_detail::key(p));
    }
    /// Directory changes not yet made durable.
    [[nodiscard]] std::size_t unsynced_directory_changes() const noexcept { return s_->unsynced.size(); }

    // ---- strata::file_system

    void create_directories(const std::filesystem::path& dir) const {
        alive();
        std::string k = fault_fs_detail::key(dir);
        while (true) {
            if (s_->names.contains(k))
                throw strata::changelog_error("strata: cannot create directory " + dir.string() + ": " +
                                              message(EEXIST));
            s_->dirs.insert(k);
            const std::string up = fault_fs_detail::parent(k);
            if (up == k || up == ".") break;
            k = up;
        }
    }

    [[nodiscard]] std::vector<std::string> list(const std::filesystem::path& dir) const {
        alive();
        const std::string k = fault_fs_detail::key(dir);
        if (!s_->dirs.contains(k)) throw strata::changelog_error("strata: cannot list " + dir.string() + ": " + message(ENOENT));
        std::vector<std::string> out;
        auto add = [&](const std::string& entry) {
            if (entry != k && fault_fs_detail::parent(entry) == k)
                out.push_back(std::filesystem::path(entry).filename().string());
        };
        for (const auto& [name, node] : s_->names) add(name);
        for (const auto& d : s_->dirs) add(d);
        return out;
    }

    [[nodiscard]] bool exists(const std::filesystem::path& p) const {
        alive();
        const std::string k = fault_fs_detail::key(p);
        return s_->names.contains(k) || s_->dirs.contains(k);
    }

    [[nodiscard]] file open_read(const std::filesystem::path& p) const { return open_existing(p, true, false, false); }
    [[nodiscard]] file open_append(const std::filesystem::path& p) const { return open_existing(p, false, true, true); }
    [[nodiscard]] file open_write(const std::filesystem::path& p) const { return open_existing(p, false, true, false); }

    [[nodiscard]] file create_new(const std::filesystem::path& p) const {
        const auto f = enter(fs_op::create, p);
        const std::string k = fault_fs_detail::key(p);
        check_parent(k, p, "open");
        if (s_->names.contains(k) || s_->dirs.contains(k)) fail("open", p, EEXIST);
        if (f) fail_before(*f, fs_op::create, p, "open");
        return handle(link_new(k), false, true, true);
    }

    [[nodiscard]] file create_truncated(const std::filesystem::path& p) const {
        const auto f = enter(fs_op::create, p);
        const std::string k = fault_fs_detail::key(p);
        check_parent(k, p, "open");
        if (s_->dirs.contains(k)) fail("open", p, EISDIR);
        if (f) fail_before(*f, fs_op::create, p, "open");
        if (const auto it = s_->names.find(k); it != s_->names.end()) {
            resize(*it->second, 0);
            return handle(it->second, false, true, false);
        }
        return handle(link_new(k), false, true, false);
    }

    [[nodiscard]] std::uint64_t size(const file& f, const std::filesystem::path& p) const {
        alive();
        usable(f, p, "fstat");
        return f.node_->cache.size();
    }

    [[nodiscard]] std::size_t read_at(const file& f, std::span<std::byte> out, std::uint64_t pos,
                                      const std::filesystem::path& p) const {
        alive();
        usable(f, p, "pread");
        if (!f.readable_) fail("pread", p, EBADF);
        const auto& c = f.node_->cache;
        if (pos >= c.size()) return 0;
        const std::size_t n = std::min<std::size_t>(out.size(), c.size() - static_cast<std::size_t>(pos));
        std::copy_n(c.begin() + static_cast<std::ptrdiff_t>(pos), n, out.begin());
        return n;
    }

    void append(const file& f, strata::bytes_view data, const std::filesystem::path& p) const {
        const auto fl = enter(fs_op::append, p);
        usable(f, p, "write");
        if (!f.writable_) fail("write", p, EBADF);
        write_faulted(fl, fs_op::append, *f.node_, data, f.node_->cache.size(), p, "write");
    }

    void write_at(const file& f, strata::bytes_view data, std::uint64_t pos, const std::filesystem::path& p) const {
        const auto fl = enter(fs_op::write_at, p);
        usable(f, p, "pwrite");
        if (!f.writable_) fail("pwrite", p, EBADF);
        // O_APPEND: Linux pwrite appends whatever the position.
        write_faulted(fl, fs_op::write_at, *f.node_, data, f.appends_ ? f.node_->cache.size() : pos, p, "pwrite");
    }

    void sync_data(const file& f, const std::filesystem::path& p) const {
        const auto fl = enter(fs_op::sync_data, p);
        usable(f, p, "fdatasync");
        fault_fs_detail::inode& n = *f.node_;
        if (fl && *fl == fault_kind::eio) {
            n.undetermined.insert(n.dirty.begin(), n.dirty.end());
            record_fired(*fl, fs_op::sync_data, p, 0);
            fail("fdatasync", p, EIO);
        }
        if (fl) fail_before(*fl, fs_op::sync_data, p, "fdatasync");
        strata::byte_buffer image = n.cache;
        for (const std::uint64_t page : n.undetermined) copy_page(n.disk, image, page);
        n.disk = std::move(image);
        n.dirty = n.undetermined;
        n.size_dirty = false;
    }

    void truncate(const file& f, std::uint64_t size, const std::filesystem::path& p) const {
        const auto fl = enter(fs_op::truncate, p);
        usable(f, p, "ftruncate");
        if (!f.writable_) fail("ftruncate", p, EINVAL);
        if (fl) fail_before(*fl, fs_op::truncate, p, "ftruncate");
        resize(*f.node_, size);
    }

    void rename(const std::filesystem::path& from, const std::filesystem::path& to) const {
        const auto fl = enter(fs_op::rename, from);
        const std::string a = fault_fs_detail::key(from), b = fault_fs_detail::key(to);
        const auto it = s_->names.find(a);
        if (it == s_->names.end()) fail("rename", from, ENOENT);
        check_parent(b, to, "rename");
        if (s_->dirs.contains(b)) fail("rename", to, EISDIR);
        if (fl) fail_before(*fl, fs_op::rename, from, "rename");
        if (a == b) return;
        auto node = it->second;
        s_->names.erase(it);
        s_->names[b] = node;
        s_->unsynced.push_back({fault_fs_detail::ns_change::move, a, b, std::move(node)});
    }

    void remove(const std::filesystem::path& p) const {
        const auto fl = enter(fs_op::remove, p);
        const std::string k = fault_fs_detail::key(p);
        const auto it = s_->names.find(k);
        if (it == s_->names.end()) {
            throw strata::changelog_error("strata: cannot remove " + p.string() + ": no such file");
        }
        if (fl) fail_before(*fl, fs_op::remove, p, "unlink");
        s_->names.erase(it);
        s_->unsynced.push_back({fault_fs_detail::ns_change::unlink, k, {}, nullptr});
    }

    void sync_directory(const std::filesystem::path& dir) const {
        const auto fl = enter(fs_op::sync_directory, dir);
        const std::string d = fault_fs_detail::key(dir);
        if (!s_->dirs.contains(d)) fail("open", dir, ENOENT);
        if (fl) fail_before(*fl, fs_op::sync_directory, dir, "fsync");
        using fault_fs_detail::parent;
        std::erase_if(s_->durable, [&](const auto& e) { return parent(e.first) == d; });
        for (const auto& [name, node] : s_->names)
            if (parent(name) == d) s_->durable[name] = node;
        std::vector<fault_fs_detail::ns_change> left;
        for (auto& c : s_->unsynced) {
            const bool from_here = !c.from.empty() && parent(c.from) == d;
            const bool to_here = !c.to.empty() && parent(c.to) == d;
            if (!from_here && !to_here) {
                left.push_back(std::move(c));
            } else if (c.kind == fault_fs_detail::ns_change::move && from_here != to_here) {
                // A rename across directories: the other directory's half stays unsynced.
                if (from_here) left.push_back({fault_fs_detail::ns_change::link, {}, c.to, c.node});
                else left.push_back({fault_fs_detail::ns_change::unlink, c.from, {}, nullptr});
            }
        }
        s_->unsynced = std::move(left);
    }

    [[nodiscard]] file lock(const std::filesystem::path& p) const {
        alive();
        const std::string k = fault_fs_detail::key(p);
        check_parent(k, p, "open");
        std::shared_ptr<fault_fs_detail::inode> node;
        if (const auto it = s_->names.find(k); it != s_->names.end()) node = it->second;
        else node = link_new(k);
        auto& held = s_->locks[k];
        if (!held.expired())
            throw strata::changelog_error("strata: file_log in " + p.parent_path().string() +
                                          " is already open elsewhere");
        file out = handle(std::move(node), true, true, false);
        out.lock_ = std::make_shared<fault_fs_detail::lock_token>();
        held = out.lock_;
        return out;
    }

private:
    [[nodiscard]] static std::string message(int err) { return std::generic_category().message(err); }

    [[noreturn]] static void fail(const char* call, const std::filesystem::path& p, int err) {
        throw strata::changelog_error("strata: " + std::string(call) + " failed for " + p.string() + ": " +
                                      message(err));
    }

    void alive() const {
        if (s_->crashed) throw simulated_crash{*s_->fired};
    }

    /// Counts a mutating operation; @returns the fault it must suffer, if any.
    [[nodiscard]] std::optional<fault_kind> enter(fs_op op, const std::filesystem::path&) const {
        alive();
        fault_fs_detail::state& s = *s_;
        ++s.total;
        const std::uint64_t nth = ++s.by_kind[static_cast<std::size_t>(op)];
        if (!s.armed) return std::nullopt;
        const fault& a = *s.armed;
        const bool hit = a.only ? (*a.only == op && nth == a.at) : s.total == a.at;
        if (!hit) return std::nullopt;
        const fault_kind k = a.kind;
        s.armed.reset();
        return k;
    }

    void record_fired(fault_kind k, fs_op op, const std::filesystem::path& p, std::size_t written) const {
        s_->fired = fired_fault{k, op, s_->total, p.string(), written};
    }

    /// A fault on an operation that does nothing before it fails or crashes.
    [[noreturn]] void fail_before(fault_kind k, fs_op op, const std::filesystem::path& p, const char* call) const {
        record_fired(k, op, p, 0);
        if (k == fault_kind::eio) fail(call, p, EIO);
        if (k == fault_kind::enospc) fail(call, p, ENOSPC);
        s_->crashed = true;
        throw simulated_crash{*s_->fired};
    }

    void write_faulted(std::optional<fault_kind> fl, fs_op op, fault_fs_detail::inode& n, strata::bytes_view data,
                       std::uint64_t pos, const std::filesystem::path& p, const char* call) const {
        if (!fl) {
            write(n, data, pos);
            return;
        }
        if (*fl == fault_kind::eio || *fl == fault_kind::crash) fail_before(*fl, op, p, call);
        // torn_crash, enospc: a strict prefix reaches the cache first.
        const std::size_t keep =
            data.empty() ? 0 : std::uniform_int_distribution<std::size_t>(0, data.size() - 1)(s_->rng);
        write(n, data.first(keep), pos);
        record_fired(*fl, op, p, keep);
        if (*fl == fault_kind::enospc) fail(call, p, ENOSPC);
        s_->crashed = true;
        throw simulated_crash{*s_->fired};
    }

    static void mark(fault_fs_detail::inode& n, std::uint64_t from, std::uint64_t to) {
        using fault_fs_detail::page_size;
        for (std::uint64_t page = from / page_size; page * page_size < to; ++page) {
            n.dirty.insert(page);
            n.undetermined.erase(page);  // written again: the next sync_data writes it
        }
    }

    static void write(fault_fs_detail::inode& n, strata::bytes_view data, std::uint64_t pos) {
        if (data.empty()) return;
        const std::uint64_t end = pos + data.size();
        if (end > n.cache.size()) {
            mark(n, n.cache.size(), pos);  // a hole of zeros is written too
            n.cache.resize(static_cast<std::size_t>(end));
            n.size_dirty = true;
        }
        std::copy(data.begin(), data.end(), n.cache.begin() + static_cast<std::ptrdiff_t>(pos));
        mark(n, pos, end);
    }

    static void resize(fault_fs_detail::inode& n, std::uint64_t size) {
        if (size == n.cache.size()) return;
        const std::uint64_t old = n.cache.size();
        n.cache.resize(static_cast<std::size_t>(size));
        n.size_dirty = true;
        if (size > old) mark(n, old, size);
        else if (size % fault_fs_detail::page_size != 0) mark(n, size, size + 1);  // the partial last page
    }

    /// Copies page `page` of `from` (zeros past its end) into `to`, within to's size.
    static void copy_page(const strata::byte_buffer& from, strata::byte_buffer& to, std::uint64_t page) {
        using fault_fs_detail::page_size;
        const std::uint64_t first = page * page_size;
        const std::uint64_t last = std::min<std::uint64_t>(first + page_size, to.size());
        for (std::uint64_t i = first; i < last; ++i)
            to[static_cast<std::size_t>(i)] = i < from.size() ? from[static_cast<std::size_t>(i)] : std::byte{0};
    }

    template <class Rng>
    static fault_fs_detail::inode after_power_loss(const fault_fs_detail::inode& n, Rng& rng) {
        auto coin = [&rng] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
        fault_fs_detail::inode out;
        std::size_t size = n.disk.size();
        if (n.size_dirty && coin()) size = n.cache.size();
        strata::byte_buffer image(size, std::byte{0});
        std::copy_n(n.disk.begin(), std::min(size, n.disk.size()), image.begin());
        for (const std::uint64_t page : n.dirty)
            if (coin()) copy_page(n.cache, image, page);
        out.cache = image;
        out.disk = std::move(image);
        return out;
    }

    void after_restart() const {
        fault_fs_detail::state& s = *s_;
        s.locks.clear();
        s.armed.reset();
        s.crashed = false;
        ++s.boot;
    }

    void usable(const file& f, const std::filesystem::path& p, const char* call) const {
        if (!f.node_) fail(call, p, EBADF);
        if (f.boot_ != s_->boot)
            throw strata::changelog_error("strata: " + std::string(call) + " failed for " + p.string() +
                                          ": stale handle, opened before a restart");
    }

    void check_parent(const std::string& k, const std::filesystem::path& p, const char* call) const {
        if (!s_->dirs.contains(fault_fs_detail::parent(k))) fail(call, p, ENOENT);
    }

    [[nodiscard]] std::shared_ptr<fault_fs_detail::inode> link_new(const std::string& k) const {
        auto node = std::make_shared<fault_fs_detail::inode>();
        s_->names[k] = node;
        s_->unsynced.push_back({fault_fs_detail::ns_change::link, {}, k, node});
        return node;
    }

    [[nodiscard]] file handle(std::shared_ptr<fault_fs_detail::inode> node, bool readable, bool writable,
                              bool appends) const {
        file f;
        f.node_ = std::move(node);
        f.boot_ = s_->boot;
        f.readable_ = readable;
        f.writable_ = writable;
        f.appends_ = appends;
        return f;
    }

    [[nodiscard]] file open_existing(const std::filesystem::path& p, bool readable, bool writable, bool appends) const {
        alive();
        const std::string k = fault_fs_detail::key(p);
        const auto it = s_->names.find(k);
        if (it == s_->names.end()) fail("open", p, s_->dirs.contains(k) ? EISDIR : ENOENT);
        return handle(it->second, readable, writable, appends);
    }

    std::shared_ptr<fault_fs_detail::state> s_;
};

static_assert(strata::file_system<fault_file_system>);

}  // namespace test_support
