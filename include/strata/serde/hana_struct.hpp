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
