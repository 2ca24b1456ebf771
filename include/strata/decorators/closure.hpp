#pragma once
/// @file
/// @brief Pipe syntax for decorators: `store | logged(log) | cached(opts)`,
/// and reusable policies composed from closures: `cached(c) | metered(r)`.
///
/// A closure is a decorator waiting for its store. The `|` operators are
/// hidden friends of the closure base, so they are found only when a closure
/// is an operand and never hijack another library's pipes.

#include <strata/decorators/layer.hpp>

#include <boost/hana/concat.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/unpack.hpp>

#include <type_traits>
#include <utility>

namespace strata {

template <class Derived>
struct layer_closure;

namespace detail {
template <class T>
concept is_closure = std::is_base_of_v<layer_closure<std::remove_cvref_t<T>>, std::remove_cvref_t<T>>;

/// Checks that closure C may wrap store S and says, in one static_assert,
/// what is wrong when it may not. Only the first failed check fires.
template <class C, class S>
constexpr bool check_layer_order() {
    using store = std::remove_cvref_t<S>;
    constexpr layer_kind kind = std::remove_cvref_t<C>::kind;
    if constexpr (std::is_same_v<store, rejected_stack>) {
        return false;  // an inner layer already said what is wrong
    } else if constexpr (!state_store<store>) {
        static_assert(state_store<store>,
                      "strata: the left operand of `|` is not a state store. A store needs a member "
                      "`name()` returning something convertible to std::string_view "
                      "(see strata::state_store)");
        return false;
    } else if constexpr (has_layer_v<store, kind>) {
        static_assert(!has_layer_v<store, kind>,
                      "strata: this layer is already in the store stack; each of logged, cached "
                      "and metered may appear at most once");
        return false;
    } else if constexpr (outer_rank<store>() > static_cast<int>(kind)) {
        static_assert(outer_rank<store>() < static_cast<int>(kind),
                      "strata: layers out of order. Stack them inner to outer as "
                      "`store | logged(log) | cached(opts) | metered(registry)`, or let "
                      "strata::decorate(store, layers...) order them");
        return false;
    } else {
        return true;
    }
}

template <class C>
constexpr auto flatten(C&& c) {
    if constexpr (requires { std::forward<C>(c).layers(); })
        return std::forward<C>(c).layers();
    else
        return boost::hana::make_tuple(std::forward<C>(c));
}
}  // namespace detail

/// @brief Several closures applied in order: a reusable policy.
template <class... Closures>
class composed_closure;

/// @brief CRTP base of every decorator closure. Derived provides
/// `static constexpr layer_kind kind` and `wrap(store)`, which builds the
/// decorated store; the base supplies the checks and the `|` operators.
template <class Derived>
struct layer_closure {
    /// @brief Decorates `s`. Checks the stack first, so a misuse gives one
    /// readable static_assert rather than a template backtrace.
    template <class S>
    constexpr auto operator()(S&& s) const& {
        if constexpr (detail::check_layer_order<Derived, S>())
            return static_cast<const Derived&>(*this).wrap(std::forward<S>(s));
        else
            return detail::rejected_stack{};
    }
    template <class S>
    constexpr auto operator()(S&& s) && {
        if constexpr (detail::check_layer_order<Derived, S>())
            return static_cast<Derived&&>(*this).wrap(std::forward<S>(s));
        else
            return detail::rejected_stack{};
    }

    /// store | closure
    template <class S>
        requires(!detail::is_closure<S>)
    friend constexpr auto operator|(S&& s, const Derived& c) {
        return c(std::forward<S>(s));
    }
    template <class S>
        requires(!detail::is_closure<S>)
    friend constexpr auto operator|(S&& s, Derived&& c) {
        return std::move(c)(std::forward<S>(s));
    }

    /// closure | closure: a policy to reuse on many stores
    template <class Other>
        requires detail::is_closure<Other>
    friend constexpr auto operator|(Derived a, Other&& b) {
        auto all = boost::hana::concat(detail::flatten(std::move(a)),
                                       detail::flatten(std::forward<Other>(b)));
        return boost::hana::unpack(std::move(all), [](auto&&... cs) {
            return composed_closure<std::remove_cvref_t<decltype(cs)>...>(std::move(cs)...);
        });
    }
};

template <class... Closures>
class composed_closure : public layer_closure<composed_closure<Closures...>> {
public:
    constexpr explicit composed_closure(Closures... cs) : layers_(std::move(cs)...) {}

    // Each layer checks the stack as it is applied; `store | policy` comes
    // from the base and lands here, since these hide the base's call operators.
    template <class S>
    constexpr auto operator()(S&& s) const& {
        return boost::hana::fold_left(layers_, std::forward<S>(s),
                                      [](auto&& acc, const auto& c) { return c(std::forward<decltype(acc)>(acc)); });
    }
    template <class S>
    constexpr auto operator()(S&& s) && {
        return boost::hana::fold_left(std::move(layers_), std::forward<S>(s), [](auto&& acc, auto&& c) {
            return std::forward<decltype(c)>(c)(std::forward<decltype(acc)>(acc));
        });
    }

    [[nodiscard]] constexpr const boost::hana::tuple<Closures...>& layers() const& { return layers_; }
    [[nodiscard]] constexpr boost::hana::tuple<Closures...> layers() && { return std::move(layers_); }

private:
    boost::hana::tuple<Closures...> layers_;
};

}  // namespace strata

