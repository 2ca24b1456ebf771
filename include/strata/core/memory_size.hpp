#pragma once
/// @file
/// @brief An estimate of the heap and inline bytes a value holds, used to
/// bound caches in bytes rather than entries.

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/second.hpp>

namespace strata {

/// @brief Customization point: specialize `memory_size_of<T>` with a static
/// `std::size_t of(const T&)` for types whose size the defaults get wrong.
template <class T, class Enable = void>
struct memory_size_of {
    static std::size_t of(const T&) noexcept { return sizeof(T); }
};

/// @brief Approximate bytes that `v` occupies: its object plus what it owns.
template <class T>
[[nodiscard]] std::size_t memory_size(const T& v) noexcept {
    return memory_size_of<T>::of(v);
}

template <class C, class Tr, class A>
struct memory_size_of<std::basic_string<C, Tr, A>> {
    static std::size_t of(const std::basic_string<C, Tr, A>& s) noexcept {
        // Short strings live inside the object; longer ones own capacity() chars.
        constexpr std::size_t inline_capacity = 15;
        return sizeof(s) + (s.capacity() > inline_capacity ? (s.capacity() + 1) * sizeof(C) : 0);
    }
};

template <class T, class A>
struct memory_size_of<std::vector<T, A>> {
    static std::size_t of(const std::vector<T, A>& v) noexcept {
        std::size_t n = sizeof(v) + (v.capacity() - v.size()) * sizeof(T);
        for (const auto& e : v) n += memory_size(e);
        return n;
    }
};

template <class T>
struct memory_size_of<std::optional<T>> {
    static std::size_t of(const std::optional<T>& v) noexcept {
        return v ? sizeof(v) - sizeof(T) + memory_size(*v) : sizeof(v);
    }
};

template <class A, class B>
struct memory_size_of<std::pair<A, B>> {
    static std::size_t of(const std::pair<A, B>& p) noexcept {
        return sizeof(p) - sizeof(A) - sizeof(B) + memory_size(p.first) + memory_size(p.second);
    }
};

/// Boost.Hana structs: the sum of their members.
template <class T>
struct memory_size_of<T, std::enable_if_t<boost::hana::Struct<T>::value>> {
    static std::size_t of(const T& v) noexcept {
        std::size_t members = boost::hana::fold_left(
            boost::hana::accessors<T>(), std::size_t{0}, [&](std::size_t n, auto accessor) {
                const auto& m = boost::hana::second(accessor)(v);
                return n + memory_size(m) - sizeof(m);
            });
        return sizeof(T) + members;
    }
};

}  // namespace strata
