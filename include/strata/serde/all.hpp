#pragma once
/// @file
/// @brief Every serde strata ships, plus `encode` and `decode`.
///
/// Include this (or encode.hpp, which pulls in the same set) rather than
/// single family headers when you serialize composites: whether
/// `std::vector<std::string>` has a serde depends on serde<std::string>
/// having been declared first.

#include <strata/serde/arithmetic.hpp>
#include <strata/serde/encode.hpp>
#include <strata/serde/hana_struct.hpp>
#include <strata/serde/length_prefix.hpp>
#include <strata/serde/optional.hpp>
#include <strata/serde/string.hpp>
#include <strata/serde/type_name.hpp>
#include <strata/serde/vector.hpp>
