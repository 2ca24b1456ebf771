// strata's common parts, compiled once for the tutorial built with
// STRATA_SEPARATE_COMPILATION (test/consumers/CMakeLists.txt).
#include <strata/separate_compilation.hpp>
