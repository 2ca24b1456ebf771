#pragma once
/// @file
/// @brief `decorate(store, layers...)`: layers given in any order are put in
/// the one valid order at compile time.

#include <strata/decorators/closure.hpp>
#include <strata/decorators/layer.hpp>

#include <boost/hana/fold_left.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/sort.hpp>
#include <boost/hana/transform.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/unique.hpp>
#include <boost/hana/flatten.hpp>

#include <type_traits>
#include <utility>

namespace strata {

namespace detail {
template <class C>
constexpr auto rank_of(const C&) {
    return boost::hana::int_c<static_cast<int>(std::remove_cvref_t<C>::kind)>;
}
}  // namespace detail

/// @brief Decorates `store` with `layers` (closures such as `logged(log)`,
/// `cached(opts)`, `metered(registry)`, or policies composed from them) in
/// the canonical order logged, cached, metered, whatever order they are
/// given in. A layer given twice is a compile-time error.
template <class S, class... Layers>
auto decorate(S&& store, Layers&&... layers) {
    namespace hana = boost::hana;
    // Each check is one static_assert; a failed one yields a rejected stack,
    // which absorbs every later use, so it stays the only error.
    if constexpr (!state_store<std::remove_cvref_t<S>>) {
        static_assert(state_store<std::remove_cvref_t<S>>,
                      "strata::decorate: the first argument is not a state store. A store needs a "
                      "member `name()` returning something convertible to std::string_view");
        return detail::rejected_stack{};
    } else if constexpr (!(detail::is_closure<Layers> && ...)) {
        static_assert((detail::is_closure<Layers> && ...),
                      "strata::decorate: every argument after the store must be a layer such as "
                      "logged(log), cached(options) or metered(registry)");
        return detail::rejected_stack{};
    } else {
        // Policies contribute their layers one by one.
        auto flat = hana::flatten(hana::make_tuple(detail::flatten(std::forward<Layers>(layers))...));
        auto sorted = hana::sort(std::move(flat), [](const auto& a, const auto& b) {
            return detail::rank_of(a) < detail::rank_of(b);
        });
        // Sorted ranks hold a duplicate exactly when removing adjacent repeats shortens them.
        using ranks = decltype(hana::transform(sorted, [](const auto& c) { return detail::rank_of(c); }));
        constexpr bool unique = decltype(hana::length(hana::unique(std::declval<ranks>())) ==
                                         hana::length(std::declval<ranks>()))::value;
        static_assert(unique,
                      "strata::decorate: a layer is given twice; each of logged, cached and metered "
                      "may appear at most once");
        if constexpr (unique) {
            return hana::fold_left(std::move(sorted), std::forward<S>(store), [](auto&& acc, auto&& layer) {
                return std::forward<decltype(layer)>(layer)(std::forward<decltype(acc)>(acc));
            });
        } else {
            return detail::rejected_stack{};
        }
    }
}

}  // namespace strata
