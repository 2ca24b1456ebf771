#pragma once
/// @file
/// @brief Holds an argument by reference when it came as an lvalue and by
/// value when it came as an rvalue, as range views hold their ranges: a
/// changelog passed by name stays the caller's, a temporary is owned.

#include <memory>
#include <type_traits>
#include <utility>

namespace strata::detail {

template <class T>
class held {
public:
    template <class U>
        requires(!std::is_same_v<std::remove_cvref_t<U>, held>)
    explicit held(U&& v) : value_(std::forward<U>(v)) {}
    T& get() noexcept { return value_; }
    const T& get() const noexcept { return value_; }

private:
    T value_;
};

template <class T>
class held<T&> {
public:
    explicit held(T& v) noexcept : ptr_(std::addressof(v)) {}
    T& get() const noexcept { return *ptr_; }

private:
    T* ptr_;
};

/// held<T&> for lvalues, held<T> for rvalues.
template <class Arg>
using held_for = held<std::conditional_t<std::is_lvalue_reference_v<Arg>, Arg, std::remove_cvref_t<Arg>>>;

}  // namespace strata::detail
