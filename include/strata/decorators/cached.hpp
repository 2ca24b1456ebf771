#pragma once
/// @file
/// @brief `cached`: coalesces changelog records per key between two flushes,
/// and for kv stores serves reads from a bounded LRU cache.

#include <strata/core/concepts.hpp>
#include <strata/decorators/cached_options.hpp>
#include <strata/decorators/cached_store.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/detail/rejected.hpp>

#include <type_traits>
#include <utility>

namespace strata {


/// @brief The closure that `cached(options)` returns.
class cached_closure : public layer_closure<cached_closure> {
public:
    static constexpr layer_kind kind = layer_kind::cached;
    explicit cached_closure(cached_options opts) : opts_(opts) {}

    template <class S>
    auto wrap(S&& s) const {
        using store = std::remove_cvref_t<S>;
        constexpr bool fits = kv_store<store> || detail::logged_beneath<store>;
        static_assert(fits,
                      "strata::cached: over a store that is not key-value, the cache coalesces changelog "
                      "records and needs logged(...) beneath it: `store | logged(log) | cached(opts)`");
        if constexpr (fits) return cached_store<store>(store(std::forward<S>(s)), opts_);
        else return detail::rejected_stack{};
    }

private:
    cached_options opts_;
};

/// @brief `store | cached(options)`.
inline cached_closure cached(cached_options opts = {}) { return cached_closure(opts); }

/// @brief `cached(store, options)`: the direct form of `store | cached(options)`.
template <class S>
    requires state_store<std::remove_cvref_t<S>>
auto cached(S&& store, cached_options opts = {}) {
    return std::forward<S>(store) | cached(opts);
}

}  // namespace strata
