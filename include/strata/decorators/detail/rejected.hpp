#pragma once
/// @file
/// @brief The stack a decorator returns when its static_assert rejected the
/// store: it absorbs every later use, so the user sees one error.

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace strata::detail {

/// What a rejected stack's members return: accepts every use a value of a
/// store's API could be put to (converted, compared, dereferenced,
/// iterated, unpacked into two names) and does nothing, so that the one
/// static_assert that rejected the stack stays the only error.
struct absorbed {
    template <class T>
    constexpr operator T() const {  // NOLINT: converts to whatever the caller expects
        return T{};
    }
    template <class T>
    friend constexpr bool operator==(const absorbed&, const T&) noexcept {
        return false;
    }
    constexpr explicit operator bool() const noexcept { return false; }
    constexpr const absorbed& operator*() const noexcept { return *this; }
    constexpr const absorbed* operator->() const noexcept { return this; }
    template <class... A>
    constexpr absorbed operator()(A&&...) const noexcept {
        return {};
    }
    constexpr const absorbed* begin() const noexcept { return this; }
    constexpr const absorbed* end() const noexcept { return this; }
    template <std::size_t I>
    constexpr absorbed get() const noexcept {
        return {};
    }
};

/// What a closure turns a store into when a check fails (after its one
/// static_assert): a stack on which every later use (apply, get, put,
/// flush, restore, another `| layer`, ...) compiles and does nothing, so
/// the user sees exactly the one error, however the stack is used
/// afterwards.
struct rejected_stack {
    template <class... A>
    constexpr absorbed apply(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed put(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed erase(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed get(A&&...) const noexcept { return {}; }
    template <class... A>
    constexpr absorbed range(A&&...) const noexcept { return {}; }
    template <class... A>
    constexpr absorbed all(A&&...) const noexcept { return {}; }
    template <class... A>
    constexpr absorbed flush(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed restore(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed save_checkpoint(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed close(A&&...) noexcept { return {}; }
    template <class... A>
    constexpr absorbed query(A&&...) const noexcept { return {}; }
    template <class... A>
    constexpr absorbed stats(A&&...) const noexcept { return {}; }
    template <class... A>
    constexpr absorbed changelog(A&&...) noexcept { return {}; }
    constexpr absorbed name() const noexcept { return {}; }
    constexpr rejected_stack& base() noexcept { return *this; }
    constexpr const rejected_stack& base() const noexcept { return *this; }
};

/// What `layer<T>(s)` returns for a layer the stack lacks, after its static_assert.
inline rejected_stack& rejected_layer() noexcept {
    static rejected_stack r;
    return r;
}

}  // namespace strata::detail

// A rejected stack's `auto [k, v] = ...` unpacks into two absorbed values.
template <>
struct std::tuple_size<strata::detail::absorbed> : std::integral_constant<std::size_t, 2> {};
template <std::size_t I>
struct std::tuple_element<I, strata::detail::absorbed> {
    using type = strata::detail::absorbed;
};
