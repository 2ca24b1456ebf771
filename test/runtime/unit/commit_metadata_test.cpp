// The metadata committed with input offsets, byte for byte as Kafka Streams
// writes it (TopicPartitionMetadata), so that either can take an
// application over from the other without losing partition time. The
// expected strings were built from the format's description: version byte,
// big-endian partition time, then the map of named values.

#include <catch2/catch.hpp>

#include <strata/runtime/detail/commit_metadata.hpp>

using namespace strata::runtime::detail;

TEST_CASE("commit metadata: strata writes Kafka Streams' format, with its own entry", "[runtime][interop]") {
    commit_metadata m;
    m.partition_time = 1000;
    m.committed_by = "a";
    m.commit_ms = 1796280716154;
    CHECK(encode_commit_metadata(m) == "AgAAAAAAAAPoAAAAAQAAABVzdHJhdGEuY29tbWl0dGVkX2J5PWEAAAGiOqyLeg==");
    const commit_metadata back = decode_commit_metadata(encode_commit_metadata(m));
    CHECK(back.partition_time == 1000);
    CHECK(back.committed_by == "a");
    CHECK(back.commit_ms == 1796280716154);
}

TEST_CASE("commit metadata: what Kafka Streams writes reads as its partition time", "[runtime][interop]") {
    CHECK(decode_commit_metadata("AgAAAAAAAAPo").partition_time == 1000);  // version 2, no processor metadata
    CHECK(decode_commit_metadata("Af//////////").partition_time == -1);   // version 1, unknown time
    CHECK(decode_commit_metadata("AgAAAAAAAAPo").committed_by.empty());
}

TEST_CASE("commit metadata: the older strata format, and damage, read as far as they go", "[runtime][interop]") {
    const commit_metadata old = decode_commit_metadata("strata instance-1 1700000000000");
    CHECK(old.committed_by == "instance-1");
    CHECK(old.commit_ms == 1700000000000);
    CHECK(old.partition_time == -1);
    for (const char* bad : {"", "A", "AgAA", "!!!!", "BwAAAAAAAAPo", "AgAAAAAAAAPoAAAAAQAAAP9z"}) {
        INFO(bad);
        const commit_metadata m = decode_commit_metadata(bad);
        CHECK(m.committed_by.empty());
    }
    CHECK(base64::decode("AgAAAAAAAAPo") == std::string("\x02\0\0\0\0\0\0\x03\xe8", 9));
    for (std::size_t n = 0; n < 7; ++n) {
        const std::string s = std::string("abcdefg").substr(0, n);
        CHECK(base64::decode(base64::encode(s)) == s);
    }
}
