#pragma once
/// @file
/// @brief Every decorator, the pipe syntax and `decorate`.

#include <strata/decorators/cached.hpp>
#include <strata/decorators/closure.hpp>
#include <strata/decorators/decorate.hpp>
#include <strata/decorators/layer.hpp>
#include <strata/decorators/logged.hpp>
#include <strata/decorators/metered.hpp>
