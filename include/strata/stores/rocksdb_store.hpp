#pragma once
/// @file
/// @brief A key-value store on RocksDB: state larger than memory, kept on
/// disk across restarts. Its own CMake target, `strata::rocksdb`, so that
/// users who do not want RocksDB never link it.
///
///     auto store = strata::rocksdb_store<std::string, account>("accounts", dir / "accounts")
///                | strata::logged(log)
///                | strata::cached();
///     store.restore();   // only the changelog's tail past the store's last commit
///
/// Writes wait in an ordered map of pending updates that reads and scans
/// see before the database, and reach the database together at a commit or
/// flush, as one RocksDB write batch: one write and, by default, one fsync
/// of RocksDB's write-ahead log per flush, none per put. (A map of its own
/// rather than RocksDB's WriteBatchWithIndex: a put into that index costs
/// 3.3 us where a map insert costs a tenth, see docs/stores/rocksdb.md.) The
/// changelog is the durability between flushes. The store keeps the
/// changelog offset it holds in the database, written in the same atomic
/// batch as the updates below it (`commit`, a `self_checkpointing_store`):
/// the logged layer flushes the changelog first and commits this store with
/// the flushed offset next, so a store reopened after a crash holds exactly
/// its last commit and restores only the changelog past it. Under
/// exactly-once the commit waits for the Kafka transaction's, so the
/// database never holds an aborted transaction's updates and the store is
/// never wiped.
///
/// Keys are stored as their serde bytes, except that a signed integer's
/// sign bit is flipped, and scans run in the byte order of what is stored:
/// numeric order for integers, byte-wise (unsigned) order for strings, which
/// is std::string's own order, and the order of the serde's bytes for other
/// types (for a struct: field by field, each in its own byte order).

#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/serde/encode.hpp>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

/// @brief How a rocksdb_store opens its database. RocksDB's memory is the
/// block cache, the memtables (`write_buffer_bytes` times
/// `max_write_buffers`), and the index and filter blocks, which are kept in
/// the block cache so that its bound covers them; plus the pending updates,
/// those since the last commit or flush (`pending_bytes()`).
struct rocksdb_options {
    std::size_t block_cache_bytes = std::size_t{32} << 20;  ///< read cache, shared by data, index and filter blocks
    std::size_t write_buffer_bytes = std::size_t{16} << 20;  ///< one memtable
    int max_write_buffers = 2;                                ///< memtables at most
    ::rocksdb::CompressionType compression = ::rocksdb::kLZ4Compression;
    /// Whether flush() fsyncs RocksDB's write-ahead log. Off, a flushed batch
    /// survives a killed process but not a power loss.
    bool sync_on_flush = true;
    bool create_if_missing = true;
    /// Any other RocksDB option, set last (e.g. `o.max_open_files = 256`).
    std::function<void(::rocksdb::Options&)> tune = {};
};

namespace detail::rocks {

/// A store key as the bytes RocksDB orders: its serde bytes (big-endian for
/// integers), with a signed integer's sign bit flipped so that negative
/// numbers sort first.
template <class K>
void encode_key(const K& k, byte_buffer& out) {
    out.clear();
    encode(k, out);
    if constexpr (std::is_integral_v<K> && std::is_signed_v<K>) out.front() ^= std::byte{0x80};
}

template <class K>
[[nodiscard]] K decode_key(bytes_view b) {
    if constexpr (std::is_integral_v<K> && std::is_signed_v<K>) {
        byte_buffer flipped(b.begin(), b.end());
        if (!flipped.empty()) flipped.front() ^= std::byte{0x80};
        return decode<K>(flipped);
    } else {
        return decode<K>(b);
    }
}

/// An empty buffer's data() may be null, which RocksDB's comparisons assert against.
[[nodiscard]] inline ::rocksdb::Slice slice(bytes_view b) noexcept {
    return b.empty() ? ::rocksdb::Slice("", 0) : ::rocksdb::Slice(reinterpret_cast<const char*>(b.data()), b.size());
}
[[nodiscard]] inline bytes_view bytes(const ::rocksdb::Slice& s) noexcept {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// Throws store_error naming the store, what it was doing and RocksDB's status.
inline void check(const ::rocksdb::Status& s, std::string_view store, std::string_view what) {
    if (!s.ok())
        throw store_error("strata::rocksdb_store '" + std::string(store) + "': cannot " + std::string(what) + ": " +
                          s.ToString());
}

[[nodiscard]] inline std::string_view chars(bytes_view b) noexcept {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// The updates since the last commit, by stored key, in RocksDB's order:
/// std::string compares bytes as unsigned char, as RocksDB's default
/// comparator does. A value, or none for an erase.
using pending_map = std::map<std::string, std::optional<byte_buffer>, std::less<>>;

/// The entries of a scan: the database's merged with the pending updates
/// (which win), decoded one at a time.
template <class K, class V>
class scan {
    struct cursor {
        std::unique_ptr<::rocksdb::Iterator> it;  ///< the database
        pending_map::const_iterator p, p_end;     ///< the pending updates in range
        std::optional<std::string> hi;            ///< last key included (stored form); none: to the end
        std::string store;
        std::pair<K, V> current{};
        bool at_end = true;
        bool from_database = false;  ///< where `current` came from

        [[nodiscard]] bool database_valid() const {
            return it->Valid() && (!hi || it->key().compare(::rocksdb::Slice(*hi)) <= 0);
        }
        /// Moves to the next live entry at or after the two positions.
        void settle() {
            for (;;) {
                const bool in_database = database_valid();
                if (!in_database) check(it->status(), store, "scan");
                const bool in_pending = p != p_end;
                if (!in_database && !in_pending) {
                    at_end = true;
                    return;
                }
                const int order =
                    !in_database ? 1 : !in_pending ? -1 : it->key().compare(::rocksdb::Slice(p->first));
                if (order < 0) {
                    current = {decode_key<K>(bytes(it->key())), decode<V>(bytes(it->value()))};
                    at_end = false;
                    from_database = true;
                    return;
                }
                if (order == 0) it->Next();  // the pending update replaces the stored entry
                if (p->second) {
                    current = {decode_key<K>(as_bytes(p->first)), decode<V>(*p->second)};
                    at_end = false;
                    from_database = false;
                    return;
                }
                ++p;  // a pending erase
            }
        }
        void advance() {
            if (from_database) it->Next();
            else ++p;
            settle();
        }
    };

public:
    class iterator {
    public:
        using value_type = std::pair<K, V>;
        using difference_type = std::ptrdiff_t;

        iterator() = default;
        explicit iterator(cursor* c) : c_(c) {}
        const value_type& operator*() const { return c_->current; }
        const value_type* operator->() const { return &c_->current; }
        iterator& operator++() {
            c_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& i, std::default_sentinel_t) { return i.c_ == nullptr || i.c_->at_end; }

    private:
        cursor* c_ = nullptr;
    };

    /// An empty scan.
    scan() = default;
    /// From the first key >= lo (or the first key), to hi (or the end).
    scan(std::unique_ptr<::rocksdb::Iterator> it, const pending_map& pending, std::optional<std::string> lo,
         std::optional<std::string> hi, std::string store)
        : c_(std::make_shared<cursor>()) {
        c_->it = std::move(it);
        c_->p = lo ? pending.lower_bound(*lo) : pending.begin();
        c_->p_end = hi ? pending.upper_bound(*hi) : pending.end();
        c_->hi = std::move(hi);
        c_->store = std::move(store);
        if (lo) c_->it->Seek(::rocksdb::Slice(*lo));
        else c_->it->SeekToFirst();
        c_->settle();
    }

    /// Each scan is one pass: begin() continues where the last pass stopped.
    [[nodiscard]] iterator begin() const { return iterator(c_.get()); }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

private:
    std::shared_ptr<cursor> c_;
};

}  // namespace detail::rocks

/// @brief A persistent key-value store on RocksDB; models `ordered_kv_store`.
///
/// Reads see every write, committed or not. `commit(offset)` (and `flush()`,
/// without an offset) writes the updates since the last one to the database
/// as one atomic batch; a store closed or killed before it keeps what its
/// last commit wrote, and restore brings it up to its changelog. Keys and
/// values are encoded with strata's serdes; see the file comment for the
/// scan order.
///
/// One process opens a directory once: RocksDB locks it, and a second open
/// fails with store_error naming the directory.
///
/// @tparam K key type with a serde
/// @tparam V value type with a serde
template <class K, class V>
class rocksdb_store {
public:
    using key_type = K;
    using mapped_type = V;
    using put_type = put_op<K, V>;
    using erase_type = erase_op<K>;
    using scan_type = detail::rocks::scan<K, V>;

    /// @brief Opens (by default creates) the database in `directory`.
    /// @throws store_error RocksDB cannot open it (damaged files, a directory
    ///         another store holds, an option RocksDB refuses), with RocksDB's reason
    rocksdb_store(std::string name, std::filesystem::path directory, rocksdb_options o = {})
        : name_(std::move(name)), dir_(std::move(directory)), opts_(std::move(o)) {
        ::rocksdb::Options ro;
        ro.create_if_missing = opts_.create_if_missing;
        ro.write_buffer_size = opts_.write_buffer_bytes;
        ro.max_write_buffer_number = opts_.max_write_buffers;
        ro.compression = opts_.compression;
        ::rocksdb::BlockBasedTableOptions table;
        table.block_cache = ::rocksdb::NewLRUCache(opts_.block_cache_bytes);
        table.cache_index_and_filter_blocks = true;  // inside the cache's bound
        ro.table_factory.reset(::rocksdb::NewBlockBasedTableFactory(table));
        if (opts_.tune) opts_.tune(ro);
        ro.create_missing_column_families = ro.create_if_missing;
        if (ro.create_if_missing) {
            std::error_code ec;
            std::filesystem::create_directories(dir_, ec);
        }
        // The entries live in the default column family; the committed
        // changelog offset in one of its own, so that scans never see it and
        // a commit writes both in one atomic batch.
        const std::vector<::rocksdb::ColumnFamilyDescriptor> families = {
            {::rocksdb::kDefaultColumnFamilyName, ::rocksdb::ColumnFamilyOptions(ro)},
            {"strata", ::rocksdb::ColumnFamilyOptions(ro)}};
        std::vector<::rocksdb::ColumnFamilyHandle*> handles;
        ::rocksdb::DB* db = nullptr;
        detail::rocks::check(::rocksdb::DB::Open(::rocksdb::DBOptions(ro), dir_.string(), families, &handles, &db),
                             name_, "open " + dir_.string());
        db_.reset(db);
        data_ = handles.at(0);
        meta_ = handles.at(1);
    }

    rocksdb_store(rocksdb_store&& o) noexcept
        : name_(std::move(o.name_)), dir_(std::move(o.dir_)), opts_(std::move(o.opts_)), db_(std::move(o.db_)),
          data_(std::exchange(o.data_, nullptr)), meta_(std::exchange(o.meta_, nullptr)),
          pending_(std::move(o.pending_)), pending_bytes_(std::exchange(o.pending_bytes_, 0)) {}
    rocksdb_store& operator=(rocksdb_store&&) = delete;
    /// Closes the database; updates not committed or flushed are dropped, as
    /// after a crash (a destructor cannot report a failed write).
    ~rocksdb_store() { close(); }

    /// @brief Closes the database now, dropping the updates not committed,
    /// as the destructor does, and lets go of the directory's lock: the
    /// runtime closes a task's stores before a new task object opens the
    /// same directory. Any later use (but destruction) throws usage_error.
    void close() noexcept {
        discard();
        if (!db_) return;
        for (::rocksdb::ColumnFamilyHandle* h : {data_, meta_})
            if (h != nullptr) (void)db_->DestroyColumnFamilyHandle(h);
        data_ = meta_ = nullptr;
        (void)db_->Close();
        db_.reset();
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    [[nodiscard]] const std::filesystem::path& directory() const noexcept { return dir_; }
    /// It keeps its data across restarts: restore starts at its checkpoint.
    [[nodiscard]] static constexpr bool persistent() noexcept { return true; }

    [[nodiscard]] std::optional<V> get(const K& key) const {
        byte_buffer k;
        detail::rocks::encode_key(key, k);
        if (const auto it = pending_.find(detail::rocks::chars(k)); it != pending_.end()) {
            if (!it->second) return std::nullopt;
            return decode<V>(*it->second);
        }
        ::rocksdb::PinnableSlice value;
        const ::rocksdb::Status s = db().Get(::rocksdb::ReadOptions(), data_, detail::rocks::slice(k), &value);
        if (s.IsNotFound()) return std::nullopt;
        detail::rocks::check(s, name_, "get");
        return decode<V>(detail::rocks::bytes(value));
    }

    void put(const K& key, const V& value) {
        byte_buffer k, v;
        detail::rocks::encode_key(key, k);
        encode(value, v);
        set_pending(k, std::move(v));
    }

    /// @returns whether the key was there
    bool erase(const K& key) {
        byte_buffer k;
        detail::rocks::encode_key(key, k);
        bool was = false;
        if (const auto it = pending_.find(detail::rocks::chars(k)); it != pending_.end()) {
            was = it->second.has_value();
        } else {
            ::rocksdb::PinnableSlice value;
            const ::rocksdb::Status s = db().Get(::rocksdb::ReadOptions(), data_, detail::rocks::slice(k), &value);
            if (!s.IsNotFound()) detail::rocks::check(s, name_, "erase");
            was = s.ok();
        }
        if (was) set_pending(k, std::nullopt);
        return was;
    }

    void apply(const put_type& u) { put(u.key, u.value); }
    void apply(const erase_type& u) { erase(u.key); }

    /// @brief Entries with lo <= key <= hi in the stored byte order (see the
    /// file comment), as an input range of `std::pair<K, V>`, decoded as it
    /// is read. Invalidated by writes to the store.
    [[nodiscard]] scan_type range(const K& lo, const K& hi) const {
        byte_buffer l, h;
        detail::rocks::encode_key(lo, l);
        detail::rocks::encode_key(hi, h);
        if (std::lexicographical_compare(h.begin(), h.end(), l.begin(), l.end())) return {};
        return scan_type(iterator(), pending_, std::string(detail::rocks::chars(l)),
                         std::string(detail::rocks::chars(h)), name_);
    }
    /// @brief Every entry, in the stored byte order.
    [[nodiscard]] scan_type all() const { return scan_type(iterator(), pending_, std::nullopt, std::nullopt, name_); }

    /// @brief Writes the updates since the last flush to the database, as
    /// one atomic batch, and (with sync_on_flush) fsyncs its write-ahead log.
    /// @throws store_error RocksDB refused the write (a full disk, an I/O error);
    ///         the updates stay pending, readable, for the next flush
    void flush() { write_pending(opts_.sync_on_flush, std::nullopt); }

    /// @brief Writes the updates since the last commit to the database
    /// together with `changelog_offset`, the changelog offset below which
    /// the store now holds every record, as one atomic batch (fsynced with
    /// sync_on_flush). The logged layer calls it in place of a checkpoint:
    /// at every flush, or under exactly-once once the transaction that holds
    /// the records has committed, so that after a crash the database holds
    /// the last committed state and restore reads only the changelog past it.
    /// @throws store_error RocksDB refused the write; the updates stay pending
    void commit(offset_t changelog_offset) { write_pending(opts_.sync_on_flush, changelog_offset); }

    /// @brief The offset of the last commit(), read from the database; empty
    /// before the first.
    [[nodiscard]] std::optional<offset_t> committed_offset() const {
        std::string v;
        const ::rocksdb::Status s = db().Get(::rocksdb::ReadOptions(), meta_, committed_offset_key, &v);
        if (s.IsNotFound()) return std::nullopt;
        detail::rocks::check(s, name_, "read its committed offset");
        return static_cast<offset_t>(decode<std::uint64_t>(as_bytes(v)));
    }

    /// @brief Drops the updates since the last commit or flush: the store
    /// reads as the database again (an aborted transaction's updates).
    void discard() {
        pending_.clear();
        pending_bytes_ = 0;
    }

    /// @brief During a restore, after each batch of records: they are in the
    /// changelog already, so they go to the database without an fsync and
    /// the pending updates do not grow with the changelog.
    void end_restore_batch() { write_pending(false, std::nullopt); }

    /// @brief Keys with an update waiting for the next commit or flush, and
    /// the bytes of their stored keys and values.
    [[nodiscard]] std::size_t pending_updates() const noexcept { return pending_.size(); }
    [[nodiscard]] std::size_t pending_bytes() const noexcept { return pending_bytes_; }

    /// @brief RocksDB's own estimate of the number of keys (exact after a compaction).
    [[nodiscard]] std::uint64_t estimated_keys() const {
        std::uint64_t n = 0;
        db().GetIntProperty("rocksdb.estimate-num-keys", &n);
        return n;
    }

    /// @brief The database, for what this class does not offer (statistics,
    /// manual compaction). Writing to it directly bypasses the changelog.
    [[nodiscard]] ::rocksdb::DB& database() { return db(); }

private:
    static constexpr std::string_view committed_offset_key = "committed-offset";

    [[nodiscard]] ::rocksdb::DB& db() const {
        if (!db_) throw usage_error("strata::rocksdb_store '" + name_ + "': used after close()");
        return *db_;
    }

    [[nodiscard]] std::unique_ptr<::rocksdb::Iterator> iterator() const {
        return std::unique_ptr<::rocksdb::Iterator>(db().NewIterator(::rocksdb::ReadOptions(), data_));
    }

    void set_pending(const byte_buffer& key, std::optional<byte_buffer> value) {
        const std::size_t value_bytes = value ? value->size() : 0;
        auto [it, inserted] = pending_.try_emplace(std::string(detail::rocks::chars(key)));
        if (inserted) pending_bytes_ += key.size();
        else if (it->second) pending_bytes_ -= it->second->size();
        it->second = std::move(value);
        pending_bytes_ += value_bytes;
    }

    /// Writes the pending updates, and the committed offset if given, as one
    /// atomic batch; keeps them pending if RocksDB refuses.
    void write_pending(bool sync, std::optional<offset_t> committed) {
        if (pending_.empty() && !committed) return;
        ::rocksdb::WriteBatch b;
        for (const auto& [k, v] : pending_) {
            const ::rocksdb::Status s = v ? b.Put(data_, k, detail::rocks::slice(*v)) : b.Delete(data_, k);
            detail::rocks::check(s, name_, "build its write batch");
        }
        if (committed) {
            byte_buffer offset;
            encode(static_cast<std::uint64_t>(*committed), offset);
            detail::rocks::check(b.Put(meta_, committed_offset_key, detail::rocks::slice(offset)), name_, "commit");
        }
        ::rocksdb::WriteOptions w;
        w.sync = sync;
        detail::rocks::check(db().Write(w, &b), name_, "write its batch to " + dir_.string());
        discard();
    }

    std::string name_;
    std::filesystem::path dir_;
    rocksdb_options opts_;
    std::unique_ptr<::rocksdb::DB> db_;
    ::rocksdb::ColumnFamilyHandle* data_ = nullptr;  ///< the entries
    ::rocksdb::ColumnFamilyHandle* meta_ = nullptr;  ///< the committed offset
    detail::rocks::pending_map pending_;             ///< updates since the last commit, read before the database
    std::size_t pending_bytes_ = 0;
};

}  // namespace strata
