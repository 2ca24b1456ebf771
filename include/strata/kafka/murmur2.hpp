#pragma once
/// @file
/// @brief Kafka's murmur2 hash and the partition that Kafka's Java producer
/// picks for a keyed record, reproduced bit for bit, so that strata writes
/// every key to the partition a Java client (Kafka Streams included) would.

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

namespace strata::kafka {

namespace detail {

/// @brief Reads one byte as the 0..255 value Java gets from `b & 0xff`.
[[nodiscard]] constexpr std::uint32_t murmur2_byte(std::byte b) noexcept {
    return std::to_integer<std::uint32_t>(b);
}

}  // namespace detail

/// @brief The 32-bit murmur2 hash of `data`, exactly as Java's
/// `org.apache.kafka.common.utils.Utils.murmur2(byte[])` computes it
/// (seed 0x9747b28c).
///
/// Java computes in wrapping `int` arithmetic with `>>>` (logical) shifts and
/// masks every byte with `& 0xff`; here the same is done in `std::uint32_t`,
/// where wrap-around is defined, and the bits are reinterpreted as a signed
/// value at the end. Bytes are read little-endian in blocks of four; the one
/// to three tail bytes are mixed in with Java's falling-through switch, which
/// multiplies by `m` once for any non-empty tail.
[[nodiscard]] constexpr std::int32_t murmur2(std::span<const std::byte> data) noexcept {
    constexpr std::uint32_t seed = 0x9747b28cU;
    constexpr std::uint32_t m = 0x5bd1e995U;
    constexpr int r = 24;

    const std::size_t length = data.size();
    // Java's length is an int; a byte[] never exceeds INT32_MAX elements, so
    // only the low 32 bits of a (hypothetically) larger size would matter.
    std::uint32_t h = seed ^ static_cast<std::uint32_t>(length);

    const std::size_t body = length & ~std::size_t{3};
    for (std::size_t i = 0; i < body; i += 4) {
        std::uint32_t k = detail::murmur2_byte(data[i]) |
                          (detail::murmur2_byte(data[i + 1]) << 8U) |
                          (detail::murmur2_byte(data[i + 2]) << 16U) |
                          (detail::murmur2_byte(data[i + 3]) << 24U);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }

    switch (length & 3U) {
        case 3:
            h ^= detail::murmur2_byte(data[body + 2]) << 16U;
            [[fallthrough]];
        case 2:
            h ^= detail::murmur2_byte(data[body + 1]) << 8U;
            [[fallthrough]];
        case 1:
            h ^= detail::murmur2_byte(data[body]);
            h *= m;
            break;
        default:
            break;
    }

    h ^= h >> 13U;
    h *= m;
    h ^= h >> 15U;
    return std::bit_cast<std::int32_t>(h);
}

/// @brief Java's `Utils.toPositive(int)`: clears the sign bit (`x & 0x7fffffff`).
/// Unlike `std::abs`, it is defined for INT32_MIN (giving 0) and maps a
/// negative value to `x + 2^31`, not to `-x`.
[[nodiscard]] constexpr std::int32_t to_positive(std::int32_t x) noexcept {
    return std::bit_cast<std::int32_t>(std::bit_cast<std::uint32_t>(x) & 0x7fffffffU);
}

/// @brief The partition Kafka's Java producer picks for a record with a non-null
/// key when no partitioner is configured (`BuiltInPartitioner.partitionForKey`,
/// formerly `DefaultPartitioner`): `to_positive(murmur2(key)) % num_partitions`.
/// librdkafka's `murmur2` / `murmur2_random` partitioners agree; its default
/// (`consistent_random`, CRC32) does not.
///
/// An empty key is hashed like any other; only a null key (no key at all) is
/// spread by the Java producer without hashing. Precondition:
/// `num_partitions > 0`.
[[nodiscard]] constexpr std::int32_t default_partition(std::span<const std::byte> key,
                                                       std::int32_t num_partitions) noexcept {
    assert(num_partitions > 0);
    return to_positive(murmur2(key)) % num_partitions;
}

}  // namespace strata::kafka
