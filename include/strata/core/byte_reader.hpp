#pragma once
/// @file
/// @brief A bounds-checked cursor over bytes, used by every decoder.

#include <strata/core/bytes.hpp>
#include <strata/core/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

/// @brief Reads bytes front to back. Every read is bounds-checked: a short
/// read throws `serde_error` naming the type being decoded and the offset.
class byte_reader {
public:
    /// @param data the bytes to read
    /// @param type_name what is being decoded, for error messages
    explicit byte_reader(bytes_view data, std::string_view type_name = "value") noexcept
        : data_(data), type_name_(type_name) {}

    /// @brief Takes the next n bytes, or throws if fewer remain.
    [[nodiscard]] bytes_view take(std::size_t n) {
        if (n > remaining())
            fail("needs " + std::to_string(n) + " more bytes but only " +
                 std::to_string(remaining()) + " remain (truncated input)");
        bytes_view out = data_.subspan(pos_, n);
        pos_ += n;
        return out;
    }

    [[nodiscard]] std::size_t position() const noexcept { return pos_; }
    [[nodiscard]] std::size_t remaining() const noexcept { return data_.size() - pos_; }
    [[nodiscard]] bool empty() const noexcept { return remaining() == 0; }
    [[nodiscard]] std::string_view type_name() const noexcept { return type_name_; }

    /// @brief Throws a `serde_error` at the current position.
    [[noreturn]] void fail(std::string_view what) const {
        throw serde_error(type_name_, pos_, what);
    }

    /// @brief Counts one more element decoded from no bytes at all (see
    /// serde/vector.hpp, which bounds them per reader).
    /// @returns how many this reader has counted
    std::size_t count_empty_element() noexcept { return ++empty_elements_; }

    /// @brief Throws unless every byte was consumed: trailing bytes mean the
    /// input was not written as this type.
    void expect_end() const {
        if (!empty())
            fail(std::to_string(remaining()) + " trailing bytes after a complete value");
    }

private:
    bytes_view data_;
    std::size_t pos_ = 0;
    std::string_view type_name_;
    std::size_t empty_elements_ = 0;
};

}  // namespace strata
