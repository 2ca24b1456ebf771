// Fuzz target: changelog codecs restoring records into a fresh store:
// strata::kv_codec over three key/value type pairs, table_codec, the codec
// of the relational table in docs/examples/relational_table.hpp, and the
// window and session codecs (Kafka Streams' key layouts), and the
// timestamped and versioned codecs (times in the record's timestamp).
//
// Input: one byte that picks the codec and store (modulo 8), then records,
// each: a flags byte (bit 0: tombstone, bit 1: a timestamp follows), the
// timestamp (i64 little-endian, only with bit 1), a u16 little-endian key
// length, the key, and unless a tombstone a u16 value length and the value.
// A short input ends the last record early.
//
// Each record is restored on its own into one store (a rejected record is
// strata::serde_error and changes nothing), and all of them through
// strata::restore_from over a memory_log into another store (a rejected
// record stops it with strata::restore_error, the serde_error nested).
// Expected: afterwards the first store holds exactly the last accepted
// record of each key (compared as encoded bytes: every serde has one
// encoding per value), and the second store equals the first when nothing
// was rejected. Anything else is a finding.
//
// A window, session or versioned store drops what its retention has
// passed, so "the last record of each key" is not its contents; for those
// the second store must equal the first when nothing was rejected, and the
// records the codec writes for the first store's contents must restore a
// third store equal to it (what restore accepts, write_key, write_value and
// record_timestamp give back). A timestamped store is checked as a kv
// store, and also holds each key's last time.

#include "codec_types.hpp"
#include "fuzz_support.hpp"

#include <relational_table.hpp>

#include <strata/changelog/memory_log.hpp>
#include <strata/codec/kv_codec.hpp>
#include <strata/codec/timestamped_kv_codec.hpp>
#include <strata/core/error.hpp>
#include <strata/restore/restore.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>
#include <strata/stores/session_store.hpp>
#include <strata/stores/timestamped.hpp>
#include <strata/stores/versioned_store.hpp>
#include <strata/stores/window_store.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using strata::byte_buffer;
using strata_fuzz::account_key;
using strata_fuzz::report;

/// Owning records parsed from the input.
std::vector<strata::record> parse_records(strata_fuzz::input& in) {
    std::vector<strata::record> out;
    while (!in.empty()) {
        strata::record r;
        const std::uint8_t flags = in.u8();
        if ((flags & 2) != 0) r.timestamp = static_cast<std::int64_t>(in.u64());
        const auto key = in.bytes(in.u16());
        r.key.assign(key.begin(), key.end());
        if ((flags & 1) == 0) {
            const auto value = in.bytes(in.u16());
            r.value.emplace(value.begin(), value.end());
        }
        r.offset = out.size();
        out.push_back(std::move(r));
    }
    return out;
}

/// The last accepted record of each key, as bytes.
using model = std::map<byte_buffer, byte_buffer>;

/// The key a record restores, as bytes: its own key for a kv store.
byte_buffer record_key(const strata::record& r) { return r.key; }

template <class Store, class Codec, class Encoded, class KeyOf = byte_buffer (*)(const strata::record&)>
void run(const std::vector<strata::record>& records, Store one, Store all, const Codec& codec, Encoded&& encoded,
         KeyOf key_of = record_key) {
    model expected;
    bool rejected = false;
    for (const auto& r : records) {
        try {
            codec.restore(one, r.view());
        } catch (const strata::serde_error&) {
            rejected = true;
            continue;
        }
        if (r.value) expected[key_of(r)] = *r.value;
        else expected.erase(key_of(r));
    }
    strata_fuzz::expect(encoded(one) == expected, "the store does not hold the last accepted record of each key");

    strata::memory_log log;
    for (const auto& r : records) static_cast<void>(log.append(r.view()));
    static_cast<void>(log.flush());
    try {
        const auto p = strata::restore_from(all, log, codec);
        strata_fuzz::expect(!rejected, "restore_from accepted a record the codec rejects");
        strata_fuzz::expect(p.records_done == records.size(), "restore_from did not restore every record");
        strata_fuzz::expect(encoded(all) == expected, "restore_from built another state than restoring one by one");
    } catch (const strata::restore_error& e) {
        strata_fuzz::expect(rejected, "restore_from rejected a record the codec accepts");
        try {
            std::rethrow_if_nested(e);
            strata_fuzz::finding("a restore_error without the codec's error nested");
        } catch (const strata::restore_error&) {
            strata_fuzz::finding("a restore_error nests another restore_error");
        } catch (const strata::serde_error&) {
        }
    }
}

/// A kv store's contents as encoded keys and values.
template <class Store>
model encoded_kv(const Store& s) {
    model out;
    for (const auto& [k, v] : s.all()) out[strata::encode(k)] = strata::encode(v);
    return out;
}

/// Restores the records one by one into `one` and all at once into `all`,
/// then writes `one`'s contents through the codec and restores them into
/// `again`: a windowed store, whose contents the retention decides.
template <class Store, class Codec, class UnitsOf, class Contents>
void run_windowed(const std::vector<strata::record>& records, Store one, Store all, Store again, const Codec& codec,
                  UnitsOf units_of, Contents contents) {
    bool rejected = false;
    for (const auto& r : records) {
        try {
            codec.restore(one, r.view());
        } catch (const strata::serde_error&) {
            rejected = true;
        }
    }
    strata::memory_log log;
    for (const auto& r : records) static_cast<void>(log.append(r.view()));
    static_cast<void>(log.flush());
    try {
        static_cast<void>(strata::restore_from(all, log, codec));
        strata_fuzz::expect(!rejected, "restore_from accepted a record the codec rejects");
        strata_fuzz::expect(contents(all) == contents(one), "restore_from built another state than restoring one by one");
    } catch (const strata::restore_error&) {
        strata_fuzz::expect(rejected, "restore_from rejected a record the codec accepts");
    }

    // Oldest first, as units_of() yields them: none expires on the way back in.
    strata::memory_log written;
    for (const auto& unit : units_of(one)) {
        byte_buffer key, value;
        codec.write_key(unit, key);
        const bool live = codec.write_value(one, unit, value);
        strata::record_view r{key, std::nullopt};
        if (live) r.value = strata::bytes_view(value);
        if constexpr (requires { codec.record_timestamp(one, unit); }) r.timestamp = codec.record_timestamp(one, unit);
        static_cast<void>(written.append(r));
    }
    static_cast<void>(written.flush());
    try {
        static_cast<void>(strata::restore_from(again, written, codec));
    } catch (const strata::restore_error&) {
        strata_fuzz::finding("a record the codec wrote does not restore");
    }
    strata_fuzz::expect(contents(again) == contents(one), "the codec's own records restore another state");
}

/// The units a windowed store holds, in the order all() gives them.
template <class Store, class UnitOf>
auto units_by(UnitOf unit_of) {
    return [unit_of](const Store& s) {
        std::vector<std::decay_t<decltype(unit_of(s.all().front()))>> out;
        for (const auto& e : s.all()) out.push_back(unit_of(e));
        return out;
    };
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata_fuzz::allocation_watch watch(size, {});
    strata_fuzz::input in(data, size);
    const std::uint8_t which = in.u8() % 8;
    const std::vector<strata::record> records = parse_records(in);
    switch (which) {
        case 0: {
            using store = strata::ordered_map_store<std::string, std::int64_t>;
            run(records, store("one"), store("all"), strata::kv_codec<std::string, std::int64_t>{},
                encoded_kv<store>);
            break;
        }
        case 1: {
            using store = strata::ordered_map_store<account_key, report>;
            run(records, store("one"), store("all"), strata::kv_codec<account_key, report>{}, encoded_kv<store>);
            break;
        }
        case 2: {
            using store = strata::ordered_map_store<std::int64_t, std::vector<std::optional<std::string>>>;
            run(records, store("one"), store("all"),
                strata::kv_codec<std::int64_t, std::vector<std::optional<std::string>>>{}, encoded_kv<store>);
            break;
        }
        case 4: {
            using store = strata::window_store<std::string, std::int64_t>;
            const strata::window_store_options o{std::chrono::milliseconds(10), std::chrono::milliseconds(1000)};
            run_windowed(records, store("one", o), store("all", o), store("again", o),
                         strata::window_codec<std::string, std::int64_t>{}, units_by<store>([](const auto& e) {
                             return e.window;
                         }),
                         [](const store& s) { return s.all(); });
            break;
        }
        case 5: {
            using store = strata::session_store<std::string, std::int64_t>;
            const strata::session_store_options o{std::chrono::milliseconds(1000)};
            run_windowed(records, store("one", o), store("all", o), store("again", o),
                         strata::session_codec<std::string, std::int64_t>{}, units_by<store>([](const auto& e) {
                             return e.session;
                         }),
                         [](const store& s) { return s.all(); });
            break;
        }
        case 6: {
            using store = strata::ordered_map_store<std::string, strata::timestamped<std::int64_t>>;
            store one("one");
            run(records, store("one"), store("all"), strata::timestamped_kv_codec<std::string, std::int64_t>{},
                [](const store& s) {
                    model out;
                    for (const auto& [k, v] : s.all()) out[strata::encode(k)] = strata::encode(v.value);
                    return out;
                });
            // Each key holds the time of its last accepted record.
            std::map<std::string, std::int64_t> times;
            for (const auto& r : records) {
                try {
                    strata::timestamped_kv_codec<std::string, std::int64_t>{}.restore(one, r.view());
                } catch (const strata::serde_error&) {
                    continue;
                }
                if (r.value) times[strata::decode<std::string>(r.key)] = r.timestamp;
                else times.erase(strata::decode<std::string>(r.key));
            }
            for (const auto& [k, t] : times)
                strata_fuzz::expect(one.get(k) && one.get(k)->timestamp == t, "a key lost its record's time");
            break;
        }
        case 7: {
            using store = strata::versioned_store<std::string, std::int64_t>;
            const strata::versioned_store_options o{std::chrono::milliseconds(1000)};
            // Versions in time order, so none is older than the history on the way back in.
            const auto units = [](const store& s) {
                std::vector<strata::versioned_key<std::string>> out;
                for (const auto& [v, value] : s.all_versions()) out.push_back(v);
                std::stable_sort(out.begin(), out.end(),
                                 [](const auto& a, const auto& b) { return a.timestamp < b.timestamp; });
                return out;
            };
            run_windowed(records, store("one", o), store("all", o), store("again", o),
                         strata::versioned_codec<std::string, std::int64_t>{}, units,
                         [](const store& s) { return s.all_versions(); });
            break;
        }
        case 3:
            run(records, example::employee_table("one"), example::employee_table("all"), example::table_codec{},
                [](const example::employee_table& t) {
                    model out;
                    for (const auto& [id, row] : t.rows()) out[strata::encode(id)] = strata::encode(row);
                    return out;
                },
                // table_codec files a row under the primary key in its value,
                // not under the record's key (the two agree in every record it
                // writes; nothing checks that they agree in bytes read back).
                [](const strata::record& r) {
                    return r.value ? strata::encode(strata::decode<example::employee>(*r.value).id) : r.key;
                });
            break;
    }
    return 0;
}
