#pragma once
/// @file
/// @brief What the logged layer checks at compile time, each failure
/// reported by one static_assert that names what is missing.

#include <strata/core/concepts.hpp>

namespace strata::detail {

/// Whether updates of type U can be applied and logged; if not, one
/// static_assert says why (a function of U alone, so it fires once
/// however many callers instantiate apply_unlogged).
template <class Inner, class Codec, class U>
constexpr bool logged_accepts() {
    if constexpr (!store_for<Inner, const U&>) {
        static_assert(store_for<Inner, const U&>,
                      "strata::logged: the store has no apply() for this update type");
        return false;
    } else if constexpr (!changelog_codec_for<Codec, Inner, U> && !observing_codec_for<Codec, Inner, U>) {
        static_assert(changelog_codec_for<Codec, Inner, U> || observing_codec_for<Codec, Inner, U>,
                      "strata::logged: the codec cannot say which keys this update touches; give it "
                      "a member `touched(const Store&, const Update&)` returning a range of keys (or "
                      "`apply_observed(Store&, const Update&)`, which applies it and returns them)");
        return false;
    } else {
        return true;
    }
}

/// Whether Codec is a changelog_codec for Store; if not, one static_assert
/// names the first member it lacks (the compiler's context names both types).
template <class Codec, class Store>
constexpr bool check_codec() {
    if constexpr (!requires { typename Codec::key_type; }) {
        static_assert(requires { typename Codec::key_type; },
                      "strata::logged: the codec is missing `using key_type = ...;`, the key of one unit "
                      "of the store's state (see strata::changelog_codec)");
        return false;
    } else if constexpr (!has_write_key<Codec>) {
        static_assert(has_write_key<Codec>,
                      "strata::logged: the codec is missing write_key(const key_type&, byte_buffer&) const, "
                      "which writes a unit's record key (see strata::changelog_codec)");
        return false;
    } else if constexpr (!has_write_value<Codec, Store>) {
        static_assert(has_write_value<Codec, Store>,
                      "strata::logged: the codec is missing write_value(const Store&, const key_type&, "
                      "byte_buffer&) const -> bool for this store type (is it the codec of another store?), "
                      "which writes a unit's current state (see strata::changelog_codec)");
        return false;
    } else if constexpr (!has_restore<Codec, Store>) {
        static_assert(has_restore<Codec, Store>,
                      "strata::logged: the codec is missing restore(Store&, record_view) const for this "
                      "store type, which re-creates a unit from its record (see strata::changelog_codec)");
        return false;
    } else {
        return true;
    }
}

}  // namespace strata::detail
