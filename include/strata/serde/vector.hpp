#pragma once
/// @file
/// @brief The serde for `std::vector<T>`: a u32 big-endian element count,
/// then the elements one after another.
///
/// The count is checked against the remaining bytes (count x the smallest
/// encoding of T) before any memory is reserved, so a corrupt count cannot
/// make the reader allocate more than the input could describe.
///
/// That check needs the element's smallest encoding (`min_encoded_size<T>`).
/// Where it is 0 (a user serde that does not declare `min_size`, or a struct
/// with no fields) the count can name at most the remaining bytes plus 4096
/// elements (`max_elements_beyond_input`); a larger one is refused as corrupt.
/// The reader reserves no more than the remaining bytes and stops at the
/// first element that runs out of input. Elements that were read from no
/// bytes at all are counted over the whole decode (every vector, nested ones
/// too): more than the input's size plus 4096 of them is refused as corrupt.
/// Give such serdes a `min_size`.
///
/// `byte_buffer` (`std::vector<std::byte>`) nested in a composite is this
/// format too: count, then the bytes. As a whole record it is raw bytes like
/// Kafka's ByteArraySerializer; see encode.hpp.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/arithmetic.hpp>
#include <strata/serde/length_prefix.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail::serdes {
/// One-byte types whose encoding is their own byte: vectors of them are
/// copied in one go. (`bool` is one byte too, but every byte is checked.)
template <class T>
concept bytewise = std::same_as<T, std::byte> || std::same_as<T, char> ||
                   std::same_as<T, signed char> || std::same_as<T, unsigned char>;
}  // namespace detail::serdes

/// @brief `std::vector<T>` for any serializable T: u32 big-endian count,
/// then each element's own encoding.
template <class T>
    requires serializable<T>
struct serde<std::vector<T>> {
    static constexpr std::size_t min_size = detail::serdes::length_prefix_size;

    static void write(const std::vector<T>& v, byte_buffer& out) {
        detail::serdes::write_length(v.size(), out, "a std::vector");
        if constexpr (detail::serdes::bytewise<T>) {
            const std::size_t at = out.size();
            out.resize(at + v.size());
            if (!v.empty()) std::memcpy(out.data() + at, v.data(), v.size());
        } else {
            for (const auto& e : v) serde<T>::write(e, out);
        }
    }

    [[nodiscard]] static std::vector<T> read(byte_reader& in) {
        constexpr std::size_t min_each = min_encoded_size<T>();
        const std::size_t n = detail::serdes::read_length(in, min_each, "element count");
        std::vector<T> v;
        if constexpr (detail::serdes::bytewise<T>) {
            const bytes_view b = in.take(n);
            v.resize(n);
            if (n != 0) std::memcpy(v.data(), b.data(), n);
        } else {
            // With min_each == 0 the count was not checked: reserve no more
            // than the input could hold and let the vector grow past that.
            v.reserve(min_each > 0 ? n : std::min(n, in.remaining()));
            for (std::size_t i = 0; i < n; ++i) {
                if constexpr (min_each == 0) {
                    const std::size_t at = in.position();
                    v.push_back(serde<T>::read(in));
                    // Elements read from no bytes cost memory but no input: a
                    // whole decode makes at most its input's size plus 4096 of
                    // them, however many vectors (nested ones too) count them.
                    if (in.position() == at &&
                        in.count_empty_element() >
                            in.position() + in.remaining() + detail::serdes::max_elements_beyond_input)
                        in.fail("more elements that encode to no bytes than the input's " +
                                std::to_string(in.position() + in.remaining()) + " bytes plus " +
                                std::to_string(detail::serdes::max_elements_beyond_input) +
                                " (corrupt input)");
                } else {
                    v.push_back(serde<T>::read(in));
                }
            }
        }
        return v;
    }
};

}  // namespace strata
