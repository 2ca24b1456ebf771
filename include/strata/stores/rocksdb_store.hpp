#pragma once
/// @file
/// @brief A key-value store on RocksDB: state larger than memory, kept on
/// disk across restarts. Its own CMake target, `strata::rocksdb`, so that
/// users who do not want RocksDB never link it.
///
///     auto store = strata::rocksdb_store<std::string, account>("accounts", dir / "accounts")
///                | strata::logged(log, {.checkpoint = dir / "checkpoint"})
///                | strata::cached();
///     store.restore();   // only the changelog's tail past the checkpoint
///
/// Writes go to a write batch that reads see (RocksDB's WriteBatchWithIndex)
/// and reach the database together at `flush()`: one write and, by default,
/// one fsync of RocksDB's write-ahead log per flush, none per put. The
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
#include <rocksdb/utilities/write_batch_with_index.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
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
/// the block cache so that its bound covers them; plus the write batch, which
/// holds the updates since the last flush.
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

/// The entries of a scan, decoded one at a time from a RocksDB iterator over
/// the write batch and the database.
template <class K, class V>
class scan {
    struct cursor {
        std::unique_ptr<::rocksdb::Iterator> it;
        std::optional<byte_buffer> hi;  ///< last key included (encoded); none: to the end
        std::string store;
        std::pair<K, V> current{};
        bool at_end = true;

        void settle() {
            at_end = !it->Valid() || (hi && it->key().compare(slice(*hi)) > 0);
            if (at_end) {
                check(it->status(), store, "scan");
                return;
            }
            current = {decode_key<K>(bytes(it->key())), decode<V>(bytes(it->value()))};
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
            c_->it->Next();
            c_->settle();
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
    scan(std::unique_ptr<::rocksdb::Iterator> it, const byte_buffer* lo, std::optional<byte_buffer> hi,
         std::string store)
        : c_(std::make_shared<cursor>()) {
        c_->it = std::move(it);
        c_->hi = std::move(hi);
        c_->store = std::move(store);
        if (lo) c_->it->Seek(slice(*lo));
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
/// last commit wrote, and restore brings it up to its changelog. Keys and values are encoded with strata's
/// serdes; see the file comment for the scan order.
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
        batch_ = std::make_unique<::rocksdb::WriteBatchWithIndex>(::rocksdb::BytewiseComparator(), 0,
                                                                  /*overwrite_key=*/true);
    }

    rocksdb_store(rocksdb_store&& o) noexcept
        : name_(std::move(o.name_)), dir_(std::move(o.dir_)), opts_(std::move(o.opts_)), db_(std::move(o.db_)),
          data_(std::exchange(o.data_, nullptr)), meta_(std::exchange(o.meta_, nullptr)), batch_(std::move(o.batch_)) {}
    rocksdb_store& operator=(rocksdb_store&&) = delete;
    /// Closes the database; updates not committed or flushed are dropped, as
    /// after a crash (a destructor cannot report a failed write).
    ~rocksdb_store() {
        batch_.reset();
        if (!db_) return;
        for (::rocksdb::ColumnFamilyHandle* h : {data_, meta_})
            if (h != nullptr) (void)db_->DestroyColumnFamilyHandle(h);
        (void)db_->Close();
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    [[nodiscard]] const std::filesystem::path& directory() const noexcept { return dir_; }
    /// It keeps its data across restarts: restore starts at its checkpoint.
    [[nodiscard]] static constexpr bool persistent() noexcept { return true; }

    [[nodiscard]] std::optional<V> get(const K& key) const {
        byte_buffer k;
        detail::rocks::encode_key(key, k);
        std::string value;
        const ::rocksdb::Status s =
            batch_->GetFromBatchAndDB(db_.get(), ::rocksdb::ReadOptions(), data_, detail::rocks::slice(k), &value);
        if (s.IsNotFound()) return std::nullopt;
        detail::rocks::check(s, name_, "get");
        return decode<V>(as_bytes(value));
    }

    void put(const K& key, const V& value) {
        byte_buffer k, v;
        detail::rocks::encode_key(key, k);
        encode(value, v);
        detail::rocks::check(batch_->Put(data_, detail::rocks::slice(k), detail::rocks::slice(v)), name_, "put");
    }

    /// @returns whether the key was there
    bool erase(const K& key) {
        const bool was = get(key).has_value();
        if (was) {
            byte_buffer k;
            detail::rocks::encode_key(key, k);
            detail::rocks::check(batch_->Delete(data_, detail::rocks::slice(k)), name_, "erase");
        }
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
        return scan_type(iterator(), &l, std::move(h), name_);
    }
    /// @brief Every entry, in the stored byte order.
    [[nodiscard]] scan_type all() const { return scan_type(iterator(), nullptr, std::nullopt, name_); }

    /// @brief Writes the updates since the last flush to the database, as
    /// one atomic batch, and (with sync_on_flush) fsyncs its write-ahead log.
    /// @throws store_error RocksDB refused the write (a full disk, an I/O error);
    ///         the updates stay in the batch, readable, for the next flush
    void flush() { write_batch(opts_.sync_on_flush); }

    /// @brief Writes the updates since the last commit to the database
    /// together with `changelog_offset`, the changelog offset below which
    /// the store now holds every record, as one atomic batch (fsynced with
    /// sync_on_flush). The logged layer calls it in place of a checkpoint:
    /// at every flush, or under exactly-once once the transaction that holds
    /// the records has committed, so that after a crash the database holds
    /// the last committed state and restore reads only the changelog past it.
    /// @throws store_error RocksDB refused the write; the updates stay in the batch
    void commit(offset_t changelog_offset) {
        byte_buffer v;
        encode(static_cast<std::uint64_t>(changelog_offset), v);
        detail::rocks::check(batch_->Put(meta_, committed_offset_key, detail::rocks::slice(v)), name_, "commit");
        write_batch(opts_.sync_on_flush);
    }

    /// @brief The offset of the last commit(), read from the database; empty
    /// before the first.
    [[nodiscard]] std::optional<offset_t> committed_offset() const {
        std::string v;
        const ::rocksdb::Status s = db_->Get(::rocksdb::ReadOptions(), meta_, committed_offset_key, &v);
        if (s.IsNotFound()) return std::nullopt;
        detail::rocks::check(s, name_, "read its committed offset");
        return static_cast<offset_t>(decode<std::uint64_t>(as_bytes(v)));
    }

    /// @brief Drops the updates since the last commit or flush: the store
    /// reads as the database again (an aborted transaction's updates).
    void discard() { batch_->Clear(); }

    /// @brief During a restore, after each batch of records: they are in the
    /// changelog already, so they go to the database without an fsync and
    /// the write batch does not grow with the changelog.
    void end_restore_batch() { write_batch(false); }

    /// @brief Updates waiting for the next flush, and their size in bytes.
    [[nodiscard]] std::size_t pending_updates() const {
        return static_cast<std::size_t>(batch_->GetWriteBatch()->Count());
    }
    [[nodiscard]] std::size_t pending_bytes() const { return batch_->GetWriteBatch()->GetDataSize(); }

    /// @brief RocksDB's own estimate of the number of keys (exact after a compaction).
    [[nodiscard]] std::uint64_t estimated_keys() const {
        std::uint64_t n = 0;
        db_->GetIntProperty("rocksdb.estimate-num-keys", &n);
        return n;
    }

    /// @brief The database, for what this class does not offer (statistics,
    /// manual compaction). Writing to it directly bypasses the changelog.
    [[nodiscard]] ::rocksdb::DB& database() noexcept { return *db_; }

private:
    static constexpr std::string_view committed_offset_key = "committed-offset";

    [[nodiscard]] std::unique_ptr<::rocksdb::Iterator> iterator() const {
        return std::unique_ptr<::rocksdb::Iterator>(
            batch_->NewIteratorWithBase(data_, db_->NewIterator(::rocksdb::ReadOptions(), data_)));
    }

    void write_batch(bool sync) {
        if (batch_->GetWriteBatch()->Count() == 0) return;
        ::rocksdb::WriteOptions w;
        w.sync = sync;
        detail::rocks::check(db_->Write(w, batch_->GetWriteBatch()), name_, "write its batch to " + dir_.string());
        batch_->Clear();
    }

    std::string name_;
    std::filesystem::path dir_;
    rocksdb_options opts_;
    std::unique_ptr<::rocksdb::DB> db_;
    ::rocksdb::ColumnFamilyHandle* data_ = nullptr;  ///< the entries
    ::rocksdb::ColumnFamilyHandle* meta_ = nullptr;  ///< the committed offset
    std::unique_ptr<::rocksdb::WriteBatchWithIndex> batch_;
};

}  // namespace strata
