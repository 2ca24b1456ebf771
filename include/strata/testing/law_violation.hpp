#pragma once
/// @file
/// @brief The error the law checkers of strata/testing/ throw.

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace strata::testing {

/// @brief A store broke a law. The message names the law, the seed of the
/// history that broke it, the step (-1: after the history) and what differed.
class law_violation : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

namespace detail {

[[noreturn]] inline void violated(const char* law, std::uint64_t seed, int step, const std::string& what) {
    std::ostringstream out;
    out << "strata law violated: " << law << " (seed " << seed << ", step " << step << "): " << what;
    throw law_violation(out.str());
}

}  // namespace detail
}  // namespace strata::testing
