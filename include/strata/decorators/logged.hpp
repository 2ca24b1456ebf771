#pragma once
/// @file
/// @brief `logged`: writes the current state of every unit an update touches
/// to a changelog, so the store can be rebuilt after a crash.

#include <strata/codec/default_codec.hpp>
#include <strata/core/concepts.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/detail/held.hpp>
#include <strata/decorators/detail/logged_checks.hpp>
#include <strata/decorators/logged_options.hpp>
#include <strata/decorators/logged_store.hpp>

#include <type_traits>
#include <utility>

namespace strata {

namespace detail {
/// Stands for "the store's default codec" until the store type is known.
struct use_default_codec {};
}  // namespace detail

/// @brief The closure that `logged(log[, codec][, options])` returns.
template <class LogArg, class CodecArg>
class logged_closure : public layer_closure<logged_closure<LogArg, CodecArg>> {
public:
    static constexpr layer_kind kind = layer_kind::logged;

    template <class L>
    logged_closure(L&& log, CodecArg codec, logged_options opts)
        : log_(std::forward<L>(log)), codec_(std::move(codec)), opts_(std::move(opts)) {}

    template <class S>
    auto wrap(S&& s) const& {
        return build(std::forward<S>(s), log_, codec_, opts_);
    }
    template <class S>
    auto wrap(S&& s) && {
        return build(std::forward<S>(s), std::move(log_), std::move(codec_), std::move(opts_));
    }

private:
    template <class S, class H, class C>
    static auto build(S&& s, H&& log, C&& codec, logged_options opts) {
        using store = std::remove_cvref_t<S>;
        if constexpr (!changelog<std::remove_cvref_t<LogArg>>) {
            return detail::rejected_stack{};  // logged(log) already said why
        } else if constexpr (std::is_same_v<CodecArg, detail::use_default_codec>) {
            static_assert(has_default_codec_v<store>,
                          "strata::logged: no changelog codec for this store. Pass one, "
                          "`logged(log, my_codec{})`, or declare `using codec_type = my_codec;` "
                          "in the store, or specialize strata::store_traits<Store>");
            if constexpr (has_default_codec_v<store>)
                return finish<store>(std::forward<S>(s), std::forward<H>(log), default_codec_t<store>{},
                                     std::move(opts));
            else
                return detail::rejected_stack{};
        } else {
            return finish<store>(std::forward<S>(s), std::forward<H>(log), std::forward<C>(codec),
                                 std::move(opts));
        }
    }
    template <class Store, class S, class H, class C>
    static auto finish(S&& s, H&& log, C&& codec, logged_options opts) {
        using codec_t = std::remove_cvref_t<C>;
        if constexpr (detail::check_codec<codec_t, Store>())
            return logged_store<Store, detail::held_for<LogArg>, codec_t>(
                Store(std::forward<S>(s)), detail::held_for<LogArg>(std::forward<H>(log)),
                std::forward<C>(codec), std::move(opts));
        else
            return detail::rejected_stack{};
    }

    detail::held_for<LogArg> log_;
    CodecArg codec_;
    logged_options opts_;
};

namespace detail {
template <class L>
void check_changelog() {
    static_assert(changelog<std::remove_cvref_t<L>>,
                  "strata::logged: the argument is not a changelog. It needs `append(record_view)`, "
                  "`flush() -> offset_t`, `end_offset() -> offset_t` and `replay(from)` "
                  "(see strata::changelog)");
}
}  // namespace detail

/// @brief `store | logged(log)`: log with the store's default codec.
/// A changelog passed as an lvalue is referenced (it must outlive the store);
/// an rvalue is moved into the store.
template <class L>
    requires(!state_store<std::remove_cvref_t<L>>)
auto logged(L&& log, logged_options opts = {}) {
    detail::check_changelog<L>();
    return logged_closure<L, detail::use_default_codec>(std::forward<L>(log), {}, std::move(opts));
}

/// @brief `store | logged(log, codec)`: log through an explicit codec.
template <class L, class Codec>
    requires(!state_store<std::remove_cvref_t<L>> && !std::is_same_v<std::remove_cvref_t<Codec>, logged_options>)
auto logged(L&& log, Codec codec, logged_options opts = {}) {
    detail::check_changelog<L>();
    return logged_closure<L, Codec>(std::forward<L>(log), std::move(codec), std::move(opts));
}

/// @brief `logged(store, log, ...)`: the direct form of `store | logged(log, ...)`.
template <class S, class L, class... Rest>
    requires state_store<std::remove_cvref_t<S>>
auto logged(S&& store, L&& log, Rest&&... rest) {
    return std::forward<S>(store) | logged(std::forward<L>(log), std::forward<Rest>(rest)...);
}

}  // namespace strata
