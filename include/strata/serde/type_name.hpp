#pragma once
/// @file
/// @brief Readable type names for error messages, computed at compile time.
///
/// A `serde_error` has to say which type failed to decode. The compiler's own
/// spelling is often unreadable (`std::__cxx11::basic_string<char>`,
/// `long int`), so the common types get the names a user wrote in the source
/// (`std::string`, `std::int64_t`), and vectors and optionals are named from
/// their element's readable name. Everything else falls back to the
/// compiler's spelling, which is still exact.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

namespace detail::serdes {

/// The compiler's spelling of T, cut out of the signature of this function.
/// The signature text is a string literal, so the view stays valid forever.
/// The return type is `auto` so that the signature names no other type:
/// GCC would list such types after T ("[with T = X; std::string_view = ...]").
template <class T>
constexpr auto compiler_type_name() {
#if defined(__GNUC__) || defined(__clang__)
    constexpr std::string_view signature = __PRETTY_FUNCTION__;  // "... [with T = long int]"
    constexpr std::string_view marker = "T = ";
    constexpr std::size_t begin = signature.find(marker) + marker.size();
    constexpr std::size_t semicolon = signature.find(';', begin);
    constexpr std::size_t end = semicolon != std::string_view::npos ? semicolon : signature.rfind(']');
    return signature.substr(begin, end - begin);
#else
    return std::string_view("unknown type");
#endif
}

/// Joins string views at compile time into one array with static storage,
/// so that names built from other names can be used as `std::string_view`s.
template <const std::string_view&... parts>
struct join_names {
    static constexpr auto storage = [] {
        std::array<char, (parts.size() + ... + 0) + 1> out{};
        std::size_t i = 0;
        for (std::string_view p : {parts...})
            for (char c : p) out[i++] = c;
        return out;
    }();
    static constexpr std::string_view value{storage.data(), storage.size() - 1};
};

}  // namespace detail::serdes

/// @brief The readable name of T used in error messages.
///
/// Specialize it (with a `static constexpr std::string_view value`) when the
/// compiler's spelling of one of your types is too noisy to read.
/// @tparam T the type to name
template <class T>
struct type_name_of {
    static constexpr std::string_view value = detail::serdes::compiler_type_name<T>();
};

/// @brief The readable name of T, e.g. `std::vector<std::int64_t>`.
template <class T>
inline constexpr std::string_view type_name_v = type_name_of<T>::value;

/// @brief The readable name of T, e.g. `std::vector<std::int64_t>`.
template <class T>
[[nodiscard]] constexpr std::string_view type_name() noexcept {
    return type_name_of<T>::value;
}

// Names as written in source. The fixed-width aliases name whichever
// fundamental type they stand for on this platform; the other fundamental
// types (`long long` where std::int64_t is `long`) keep the compiler's name.
#define STRATA_DETAIL_NAME_TYPE(type, text)                \
    template <>                                            \
    struct type_name_of<type> {                            \
        static constexpr std::string_view value = text;    \
    }

STRATA_DETAIL_NAME_TYPE(bool, "bool");
STRATA_DETAIL_NAME_TYPE(char, "char");
STRATA_DETAIL_NAME_TYPE(std::int8_t, "std::int8_t");
STRATA_DETAIL_NAME_TYPE(std::uint8_t, "std::uint8_t");
STRATA_DETAIL_NAME_TYPE(std::int16_t, "std::int16_t");
STRATA_DETAIL_NAME_TYPE(std::uint16_t, "std::uint16_t");
STRATA_DETAIL_NAME_TYPE(std::int32_t, "std::int32_t");
STRATA_DETAIL_NAME_TYPE(std::uint32_t, "std::uint32_t");
STRATA_DETAIL_NAME_TYPE(std::int64_t, "std::int64_t");
STRATA_DETAIL_NAME_TYPE(std::uint64_t, "std::uint64_t");
STRATA_DETAIL_NAME_TYPE(float, "float");
STRATA_DETAIL_NAME_TYPE(double, "double");
STRATA_DETAIL_NAME_TYPE(std::byte, "std::byte");
STRATA_DETAIL_NAME_TYPE(std::string, "std::string");

#undef STRATA_DETAIL_NAME_TYPE

namespace detail::serdes {
inline constexpr std::string_view vector_open = "std::vector<";
inline constexpr std::string_view optional_open = "std::optional<";
inline constexpr std::string_view angle_close = ">";
}  // namespace detail::serdes

template <class T>
struct type_name_of<std::vector<T>> {
    static constexpr std::string_view value =
        detail::serdes::join_names<detail::serdes::vector_open, type_name_of<T>::value, detail::serdes::angle_close>::value;
};

template <class T>
struct type_name_of<std::optional<T>> {
    static constexpr std::string_view value =
        detail::serdes::join_names<detail::serdes::optional_open, type_name_of<T>::value, detail::serdes::angle_close>::value;
};

}  // namespace strata
