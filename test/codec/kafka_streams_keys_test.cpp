// Kafka Streams' byte layouts of window, session and timestamped store keys
// and values (codec/kafka_streams_keys.hpp): the bytes are spelled out here
// from the layouts of WindowKeySchema, SessionKeySchema and
// ValueAndTimestampSerializer (big-endian, as Java's ByteBuffer writes), and
// bytes that cannot be such a key are refused, not read past.

#include <strata/codec/kafka_streams_keys.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace ks = strata::kafka_streams;
using strata::byte_buffer;
using strata::bytes_view;

namespace {
byte_buffer bytes(std::initializer_list<int> v) {
    byte_buffer out;
    for (int b : v) out.push_back(static_cast<std::byte>(b));
    return out;
}
byte_buffer text(const std::string& s) {
    byte_buffer out;
    for (char c : s) out.push_back(static_cast<std::byte>(c));
    return out;
}
std::string text_of(bytes_view b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
}  // namespace

TEST_CASE("kafka streams keys: a window store key is the key, the window's start and a sequence number",
          "[codec][kafka-streams]") {
    const byte_buffer key = text("ab");
    // start 0x0102030405060708 ms, seqnum 0x0a0b0c0d
    const byte_buffer encoded = ks::encode_window_key(key, 0x0102030405060708, 0x0a0b0c0d);
    CHECK(encoded == bytes({'a', 'b', 1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d}));
    const ks::window_key k = ks::decode_window_key(encoded);
    CHECK(text_of(k.key) == "ab");
    CHECK(k.start_ms == 0x0102030405060708);
    CHECK(k.seqnum == 0x0a0b0c0d);

    // The default sequence number is 0, and negative times keep their sign.
    const byte_buffer minus = ks::encode_window_key(key, -1);
    CHECK(minus == bytes({'a', 'b', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}));
    CHECK(ks::decode_window_key(minus).start_ms == -1);
    CHECK(ks::decode_window_key(minus).seqnum == 0);

    // An empty key is a key: twelve bytes of suffix alone.
    const ks::window_key empty = ks::decode_window_key(ks::encode_window_key({}, 5, 1));
    CHECK(empty.key.empty());
    CHECK(empty.start_ms == 5);
    CHECK(empty.seqnum == 1);

    // Windows of one key sort by their start, as in Kafka Streams' store
    // (for starts of the same sign: its byte order is that of the bits).
    CHECK(ks::encode_window_key(key, 1000) < ks::encode_window_key(key, 2000));
    CHECK(ks::encode_window_key(key, 255) < ks::encode_window_key(key, 256));
}

TEST_CASE("kafka streams keys: a session store key is the key, the session's end, then its start",
          "[codec][kafka-streams]") {
    const byte_buffer key = text("k");
    const byte_buffer encoded = ks::encode_session_key(key, 0x10, 0x0200);
    CHECK(encoded == bytes({'k', 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x10}));
    const ks::session_key k = ks::decode_session_key(encoded);
    CHECK(text_of(k.key) == "k");
    CHECK(k.start_ms == 0x10);
    CHECK(k.end_ms == 0x0200);

    // A session of one record starts and ends at once.
    const ks::session_key one = ks::decode_session_key(ks::encode_session_key(key, 7, 7));
    CHECK(one.start_ms == 7);
    CHECK(one.end_ms == 7);

    CHECK_THROWS_AS(ks::encode_session_key(key, 10, 9), strata::usage_error);
    // Bytes naming a session that ends before it starts are not a session.
    const byte_buffer backwards = bytes({'k', 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 10});
    CHECK_THROWS_WITH(ks::decode_session_key(backwards), Catch::Contains("ends (9) before it starts (10)"));
}

TEST_CASE("kafka streams keys: a timestamped value is the timestamp, then the value", "[codec][kafka-streams]") {
    const byte_buffer encoded = ks::encode_timestamped_value(0x0100, text("xyz"));
    CHECK(encoded == bytes({0, 0, 0, 0, 0, 0, 0x01, 0x00, 'x', 'y', 'z'}));
    const ks::timestamped_value v = ks::decode_timestamped_value(encoded);
    CHECK(v.timestamp_ms == 0x0100);
    CHECK(text_of(v.value) == "xyz");

    const ks::timestamped_value extremes =
        ks::decode_timestamped_value(ks::encode_timestamped_value(std::numeric_limits<std::int64_t>::min(), {}));
    CHECK(extremes.timestamp_ms == std::numeric_limits<std::int64_t>::min());
    CHECK(extremes.value.empty());
}

TEST_CASE("kafka streams keys: bytes too short for their time suffix are refused, naming what was decoded",
          "[codec][kafka-streams]") {
    const byte_buffer eleven(11, std::byte{0});
    CHECK_THROWS_AS(ks::decode_window_key(eleven), strata::serde_error);
    CHECK_THROWS_WITH(ks::decode_window_key(eleven),
                      Catch::Contains("window store key") && Catch::Contains("shorter than its 12-byte time suffix"));
    CHECK_THROWS_WITH(ks::decode_session_key(byte_buffer(15, std::byte{0})),
                      Catch::Contains("session store key") && Catch::Contains("16-byte"));
    CHECK_THROWS_WITH(ks::decode_timestamped_value(byte_buffer(7, std::byte{0})),
                      Catch::Contains("timestamped value") && Catch::Contains("truncated"));
    CHECK_THROWS_AS(ks::decode_window_key({}), strata::serde_error);

    // Every length from nothing up to a whole key: refused or decoded
    // within the input, never read past it.
    const byte_buffer whole = ks::encode_session_key(text("key"), 1, 2);
    for (std::size_t n = 0; n <= whole.size(); ++n) {
        const bytes_view cut(whole.data(), n);
        if (n < 16) {
            CHECK_THROWS_AS(ks::decode_session_key(cut), strata::serde_error);
            continue;
        }
        // Cut at the front's end, the times are other bytes: a session
        // that ends before it starts is refused as such.
        try {
            const ks::session_key k = ks::decode_session_key(cut);
            CHECK(k.key.size() == n - 16);
            CHECK(k.end_ms >= k.start_ms);
        } catch (const strata::serde_error& e) {
            CHECK_THAT(e.what(), Catch::Contains("before it starts"));
        }
    }
}
