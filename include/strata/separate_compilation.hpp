#pragma once
/// @file
/// @brief Compiles, once, the parts of strata that do not depend on a
/// program's own types: the file log on POSIX files, the metrics registry
/// and its Prometheus rendering, and the lookup of a metered store's metrics.
///
/// strata is header-only: every translation unit that uses the file log
/// compiles it again. A program with many of them can compile these parts
/// once instead, as Asio's separate compilation does:
///
/// 1. define `STRATA_SEPARATE_COMPILATION` for the whole program (e.g.
///    `target_compile_definitions(app PRIVATE STRATA_SEPARATE_COMPILATION)`):
///    the headers then declare these parts `extern template`, and the
///    translation units that include them no longer generate their code;
/// 2. include this header in exactly one .cpp file of the program.
///
/// docs/examples/tutorial.cpp compiles in 4.8 s this way instead of 7.8 s
/// (docs/benchmarks.md, "Compile time").

#if !defined(STRATA_SEPARATE_COMPILATION)
#error "strata/separate_compilation.hpp: define STRATA_SEPARATE_COMPILATION for the whole program, then include this header in one .cpp file"
#endif

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/metered.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/metrics/registry.hpp>

#include <mutex>
#include <string>

namespace strata {
template class basic_file_log<posix_file_system>;
}  // namespace strata

namespace strata::detail {
template store_instruments::store_instruments(metrics::registry&, const std::string&, const metrics::labels&,
                                              std::uint32_t);
}  // namespace strata::detail

namespace strata::metrics {
template class basic_registry<std::mutex>;
template void write_prometheus(std::string&, const registry&);
template std::string to_prometheus(const registry&);
}  // namespace strata::metrics
