#pragma once
/// @file
/// @brief The serde for `std::optional<T>`: one presence byte (0x00 empty,
/// 0x01 a value follows), then the value.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace strata {

/// @brief `std::optional<T>` for any serializable T: 0x00, or 0x01 and the
/// value. Any other presence byte is rejected, so that each value has
/// exactly one encoding.
template <class T>
    requires serializable<T>
struct serde<std::optional<T>> {
    static constexpr std::size_t min_size = 1;

    static void write(const std::optional<T>& v, byte_buffer& out) {
        if (!v) {
            out.push_back(std::byte{0});
            return;
        }
        out.push_back(std::byte{1});
        serde<T>::write(*v, out);
    }

    [[nodiscard]] static std::optional<T> read(byte_reader& in) {
        const std::size_t at = in.position();
        const auto present = std::to_integer<unsigned>(in.take(1)[0]);
        if (present == 0) return std::nullopt;
        if (present != 1) {
            throw serde_error(in.type_name(), at,
                              "an optional's presence byte must be 0x00 or 0x01, found " +
                                  std::to_string(present));
        }
        return std::optional<T>(serde<T>::read(in));
    }
};

}  // namespace strata
