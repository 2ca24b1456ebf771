#pragma once
// The seed of a randomized test: STRATA_TEST_SEED when it is set, else the
// test's own fixed default. A run is then repeatable: a test prints its seed
// (with INFO, so it shows when the test fails), and setting STRATA_TEST_SEED
// to that number reruns the same random choices.

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace test_support {

/// @returns STRATA_TEST_SEED as an unsigned decimal number when it is set and
/// not empty, else `fallback`.
/// @throws std::invalid_argument STRATA_TEST_SEED is set but is not such a
/// number (a typo must not quietly run the default seed instead)
inline std::uint64_t seed(std::uint64_t fallback) {
    const char* env = std::getenv("STRATA_TEST_SEED");
    if (env == nullptr || *env == '\0') return fallback;
    const std::string_view text(env);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        throw std::invalid_argument("STRATA_TEST_SEED='" + std::string(text) +
                                    "' is not an unsigned decimal number");
    return value;
}

}  // namespace test_support
