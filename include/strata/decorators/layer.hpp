#pragma once
/// @file
/// @brief What every decorator shares: its place in the stack, and the
/// functions that reach through a stack (base, innermost, layer, query).

#include <strata/core/concepts.hpp>
#include <strata/decorators/detail/rejected.hpp>

#include <type_traits>
#include <utility>

namespace strata {

/// @brief The kinds of layer, in their one valid order from inner to outer
/// (Kafka Streams stacks its wrappers the same way): the changelog sees what
/// the cache writes back, and the meter times everything beneath it.
enum class layer_kind : int { logged = 0, cached = 1, metered = 2 };

/// @brief A decorator: a state store that wraps an inner one. Its type names
/// its `inner_type` and its `kind`, and `base()` returns the inner store.
template <class S>
concept decorator = state_store<S> && requires(S& s) {
    typename S::inner_type;
    { S::kind } -> std::convertible_to<layer_kind>;
    s.base();
};

namespace detail {

template <class S>
constexpr int outer_rank() {
    if constexpr (decorator<S>) return static_cast<int>(S::kind);
    else return -1;
}

template <class S, layer_kind K>
constexpr bool has_layer() {
    if constexpr (decorator<S>) {
        if constexpr (S::kind == K) return true;
        else return has_layer<typename S::inner_type, K>();
    } else {
        return false;
    }
}

template <class T, class S>
constexpr bool has_type_in_stack() {
    if constexpr (std::is_same_v<T, S>) return true;
    else if constexpr (decorator<S>) return has_type_in_stack<T, typename S::inner_type>();
    else return false;
}

template <template <class...> class T, class S>
struct is_instance_of : std::false_type {};
template <template <class...> class T, class... A>
struct is_instance_of<T, T<A...>> : std::true_type {};

template <template <class...> class T, class S>
constexpr bool has_template_in_stack() {
    if constexpr (is_instance_of<T, S>::value) return true;
    else if constexpr (decorator<S>) return has_template_in_stack<T, typename S::inner_type>();
    else return false;
}

template <class>
inline constexpr bool always_false = false;

/// A decorator over a kv store is a kv store: it names the same key and
/// mapped types. Over any other store it names nothing.
template <class Inner, bool KV = kv_store<Inner>>
struct kv_types_of {};
template <class Inner>
struct kv_types_of<Inner, true> {
    using key_type = typename Inner::key_type;
    using mapped_type = typename Inner::mapped_type;
};

}  // namespace detail

/// @brief True when the stack S has a layer of kind K anywhere in it.
template <class S, layer_kind K>
inline constexpr bool has_layer_v = detail::has_layer<std::remove_cvref_t<S>, K>();

/// @brief The user's store at the bottom of a stack (the store itself when
/// it is not decorated), with the constness and value category of `s`.
template <class S>
[[nodiscard]] constexpr decltype(auto) innermost(S&& s) noexcept {
    if constexpr (decorator<std::remove_cvref_t<S>>) return innermost(std::forward<S>(s).base());
    else return std::forward<S>(s);
}

/// @brief The layer of type T in the stack `s`: the user's store type or a
/// full decorator type. Lets a caller reach members the decorators do not
/// forward.
template <class T, class S>
[[nodiscard]] constexpr auto& layer(S& s) noexcept {
    using self = std::remove_const_t<S>;
    if constexpr (std::is_same_v<T, self> || std::is_same_v<self, detail::rejected_stack>) {
        return s;
    } else if constexpr (decorator<self> && detail::has_type_in_stack<T, self>()) {
        return layer<T>(s.base());
    } else {
        static_assert(detail::always_false<T>,
                      "strata::layer<T>(store): no layer of type T in this store stack");
        return detail::rejected_layer();  // absorbs what the caller does next
    }
}

/// @brief The first layer, from the outside in, that is an instance of the
/// template T, e.g. `layer<cached_store>(s).stats()`.
template <template <class...> class T, class S>
[[nodiscard]] constexpr auto& layer(S& s) noexcept {
    using self = std::remove_const_t<S>;
    if constexpr (detail::is_instance_of<T, self>::value || std::is_same_v<self, detail::rejected_stack>) {
        return s;
    } else if constexpr (decorator<self> && detail::has_template_in_stack<T, self>()) {
        return layer<T>(s.base());
    } else {
        static_assert(detail::always_false<S>,
                      "strata::layer<T>(store): this store stack has no such layer");
        return detail::rejected_layer();  // absorbs what the caller does next
    }
}


/// @brief Runs a read-only query against the user's store at the bottom of a
/// stack, for what the store offers beyond the concepts (an index lookup, a
/// scan). The decorators keep the inner store current at every moment, so the
/// answer includes every update applied so far.
template <class S, class F>
    requires std::invocable<F, const std::remove_cvref_t<decltype(innermost(std::declval<const S&>()))>&>
decltype(auto) query(const S& s, F&& f) {
    return std::forward<F>(f)(innermost(s));
}
/// A stack a static_assert rejected answers nothing, without a second error.
template <class F>
constexpr detail::absorbed query(const detail::rejected_stack&, F&&) noexcept {
    return {};
}

namespace detail {
/// Calls f, then after(), and returns what f returned (a decorated apply
/// hands back the store's result once its own work after the update is done).
template <class F, class After>
std::invoke_result_t<F> invoke_then(F&& f, After&& after) {
    using result = std::invoke_result_t<F>;
    if constexpr (std::is_void_v<result>) {
        std::forward<F>(f)();
        std::forward<After>(after)();
    } else {
        result r = std::forward<F>(f)();
        std::forward<After>(after)();
        return static_cast<result>(r);
    }
}

/// @brief What every decorator forwards unchanged to the store it wraps:
/// its name, close(), persistent(), query(), and the reads get, find, range
/// and all, which a layer redefines when it adds to them (the cache answers
/// get and find, the meter times them all). Over a store with find(), get()
/// is built from find(): the value is copied once, at the top of the stack,
/// not once per layer. Derived provides base().
template <class Derived, class Inner>
class layer_base : public kv_types_of<Inner> {
public:
    using inner_type = Inner;

    template <class S = Inner>
        requires kv_store<S>
    [[nodiscard]] auto get(const typename S::key_type& k) const {
        if constexpr (has_kv_find<S>) return optional_of(self().base().find(k));
        else return self().base().get(k);
    }
    template <class S = Inner>
        requires has_kv_find<S>
    [[nodiscard]] auto find(const typename S::key_type& k) const {
        return self().base().find(k);
    }
    template <class S = Inner>
        requires ordered_kv_store<S>
    [[nodiscard]] auto range(const typename S::key_type& lo, const typename S::key_type& hi) const {
        return self().base().range(lo, hi);
    }
    template <class S = Inner>
        requires ordered_kv_store<S> || requires(const S& s) { s.all(); }
    [[nodiscard]] auto all() const {
        return self().base().all();
    }

    [[nodiscard]] std::string_view name() const noexcept { return self().base().name(); }
    void close() {
        if constexpr (has_close<Inner>) static_cast<Derived&>(*this).base().close();
    }
    [[nodiscard]] bool persistent() const { return is_persistent(self().base()); }

    /// @brief `strata::query(*this, f)`: f reads the user's store.
    template <class F>
    decltype(auto) query(F&& f) const {
        return strata::query(self(), std::forward<F>(f));
    }

private:
    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};
}  // namespace detail

}  // namespace strata
