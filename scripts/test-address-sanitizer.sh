#!/usr/bin/env bash
# The unit suite (every test that needs no broker) under AddressSanitizer and
# UndefinedBehaviorSanitizer, built with g++ into build-asan/. Any report
# (a leak, an overflow, a use after free, undefined behaviour) fails the test
# that produced it. Extra arguments go to ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_ASAN_BUILD_DIR:-${root}/build-asan}"

bash "${root}/scripts/setup.sh" >/dev/null
# No Kafka, gateway, examples or tools: the unit suite only. -O1 (as the
# sanitizer's own documentation advises) and line tables only (-g1): reports
# still name file and line, and the build takes half the time of -O2 -g.
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSTRATA_SANITIZE=address \
      -DSTRATA_WITH_KAFKA=OFF -DSTRATA_WITH_GATEWAY=OFF -DSTRATA_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "${build}" -j "$(nproc)"

export ASAN_OPTIONS="detect_leaks=1 abort_on_error=0 exitcode=67 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 exitcode=68 ${UBSAN_OPTIONS:-}"
# The simulation of the runtime's coordination runs 5,000 seeds per case in
# the main suite; under the sanitizers, 500 (about 45 s).
export STRATA_SIM_SEEDS="${STRATA_SIM_SEEDS:-500}"
# The compile-fail, consumer and header tests only build code: they check
# diagnostics and packaging, not memory, and run in the main suite.
ctest --test-dir "${build}" --output-on-failure -j "$(nproc)" -E "^(compile_fail|consumer|headers):" "$@"
