#pragma once
/// @file
/// @brief Which codec `logged(log)` uses when none is given.

#include <strata/codec/kv_codec.hpp>
#include <strata/codec/timestamped_kv_codec.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/store_traits.hpp>

#include <type_traits>

namespace strata {

namespace detail {
template <class S>
concept has_member_codec = requires { typename S::codec_type; };
template <class S>
concept has_traits_codec = requires { typename store_traits<S>::codec_type; };

/// A kv store of timestamped<V> values (a concept, so that a store without
/// mapped_type is simply not one).
template <class S>
concept timestamped_kv_store = kv_store<S> && is_timestamped_v<typename S::mapped_type>;

struct no_default_codec {};

template <class S>
auto default_codec_of() {
    if constexpr (has_member_codec<S>) return typename S::codec_type{};
    else if constexpr (has_traits_codec<S>) return typename store_traits<S>::codec_type{};
    else if constexpr (timestamped_kv_store<S>)
        return timestamped_kv_codec<typename S::key_type, typename S::mapped_type::value_type>{};
    else if constexpr (kv_store<S>) return kv_codec<typename S::key_type, typename S::mapped_type>{};
    else return no_default_codec{};
}
}  // namespace detail

/// @brief Whether strata can find a codec for S by itself: the store's own
/// `codec_type`, `store_traits<S>::codec_type`, or, for kv stores, the
/// `kv_codec` made from the key and value serdes (in that order).
template <class S>
inline constexpr bool has_default_codec_v =
    !std::is_same_v<decltype(detail::default_codec_of<S>()), detail::no_default_codec>;

/// @brief The codec `logged(log)` uses for store type S.
template <class S>
    requires has_default_codec_v<S>
using default_codec_t = decltype(detail::default_codec_of<S>());

}  // namespace strata
