#pragma once
/// @file
/// @brief Customization for store types their users cannot edit.

namespace strata {

/// @brief Specialize for a store type you cannot edit, to tell strata what a
/// member would otherwise say. Recognised members:
/// - `using codec_type = ...;` the changelog codec `logged(log)` uses for
///   this store when none is given (a store may instead declare its own
///   `using codec_type = ...;`).
///
/// The primary template is empty: strata then looks at the store itself.
template <class Store>
struct store_traits {};

}  // namespace strata
