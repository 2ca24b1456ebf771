#pragma once
/// @file
/// @brief The serde for any type defined with `BOOST_HANA_DEFINE_STRUCT`
/// (or adapted with `BOOST_HANA_ADAPT_STRUCT`): its fields one after
/// another, in declaration order, each in its own serde's format.
///
/// There is no header, no field names and no count, so the encoding is as
/// small as the fields themselves; the price is that adding, removing or
/// reordering fields changes the format. Nested structs, vectors of structs
/// and optional fields work because each field is just another serde.

#include <strata/core/byte_reader.hpp>
#include <strata/core/bytes.hpp>
#include <strata/core/concepts.hpp>
#include <strata/serde/length_prefix.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/unpack.hpp>

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace strata {

namespace detail::serdes {

/// T models Boost.Hana's Struct concept.
template <class T>
concept hana_struct = boost::hana::Struct<T>::value;

/// The type of the field an accessor pair reaches in a T.
template <class T, class Accessor>
using hana_field_t = std::remove_cvref_t<decltype(boost::hana::second(std::declval<Accessor>())(
    std::declval<T&>()))>;

/// Every field of the Hana struct T has a serde. Computed from types only,
/// so it is usable in a constraint.
template <class T>
inline constexpr bool hana_fields_serializable =
    decltype(boost::hana::unpack(boost::hana::accessors<T>(), [](auto... accessor) {
        return std::bool_constant<(serializable<hana_field_t<T, decltype(accessor)>> && ...)>{};
    }))::value;

/// The sum of the smallest encodings of T's fields.
template <class T>
inline constexpr std::size_t hana_min_size =
    decltype(boost::hana::unpack(boost::hana::accessors<T>(), [](auto... accessor) {
        return std::integral_constant<std::size_t,
                                      (min_encoded_size<hana_field_t<T, decltype(accessor)>>() + ... +
                                       std::size_t{0})>{};
    }))::value;

/// A field's name as a template argument, so that the compiler prints it.
template <std::size_t N>
struct field_name {
    char text[N] = {};
};

template <class HanaString>
constexpr auto field_name_of() {
    constexpr const char* text = boost::hana::to<const char*>(HanaString{});
    constexpr std::size_t size = decltype(boost::hana::length(HanaString{}))::value;
    field_name<size + 1> name;
    for (std::size_t i = 0; i < size; ++i) name.text[i] = text[i];
    return name;
}

/// Fails with the struct, the field's name and the field's type in the
/// compiler's "In instantiation of" line.
template <class Struct, field_name Field, class FieldType>
constexpr bool no_serde_for_field() {
    static_assert(serializable<FieldType>,
                  "strata: a field of a BOOST_HANA_DEFINE_STRUCT type has no serde (Struct, Field and "
                  "FieldType in the instantiation above name the struct, the field and its type): "
                  "specialize strata::serde<FieldType> or define FieldType with BOOST_HANA_DEFINE_STRUCT");
    return false;
}

/// Every field of the Hana struct T has a serde; if not, one static_assert
/// per field that lacks one, inside nested structs too.
template <class T>
constexpr bool check_hana_fields();

template <class T, class Accessor>
constexpr bool check_hana_field() {
    using field = hana_field_t<T, Accessor>;
    if constexpr (serializable<field>) {
        return true;
    } else if constexpr (hana_struct<field>) {
        return check_hana_fields<field>();  // the field's own field is the one to name
    } else {
        using name = std::remove_cvref_t<decltype(boost::hana::first(std::declval<Accessor>()))>;
        return no_serde_for_field<T, field_name_of<name>(), field>();
    }
}

template <class T>
constexpr bool check_hana_fields() {
    return decltype(boost::hana::unpack(boost::hana::accessors<T>(), [](auto... accessor) {
        return std::bool_constant<(check_hana_field<T, decltype(accessor)>() && ...)>{};
    }))::value;
}

}  // namespace detail::serdes

/// @brief Any Boost.Hana Struct whose fields all have serdes: the fields in
/// declaration order, nothing in between.
///
/// Reading default-constructs a T and assigns each field as it is decoded,
/// so T must be default-constructible.
template <class T>
    requires detail::serdes::hana_struct<T> && detail::serdes::hana_fields_serializable<T>
struct serde<T> {
    static constexpr std::size_t min_size = detail::serdes::hana_min_size<T>;

    static void write(const T& v, byte_buffer& out) {
        boost::hana::for_each(boost::hana::accessors<T>(), [&](const auto& accessor) {
            using field = detail::serdes::hana_field_t<T, decltype(accessor)>;
            serde<field>::write(boost::hana::second(accessor)(v), out);
        });
    }

    [[nodiscard]] static T read(byte_reader& in) {
        static_assert(std::default_initializable<T>,
                      "strata: a BOOST_HANA_DEFINE_STRUCT type is decoded by default-constructing it "
                      "and assigning each field in turn: give it a default constructor");
        T v{};
        boost::hana::for_each(boost::hana::accessors<T>(), [&](const auto& accessor) {
            using field = detail::serdes::hana_field_t<T, decltype(accessor)>;
            boost::hana::second(accessor)(v) = serde<field>::read(in);
        });
        return v;
    }
};

}  // namespace strata
