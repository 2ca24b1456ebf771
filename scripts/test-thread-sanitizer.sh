#!/usr/bin/env bash
# The concurrent parts under ThreadSanitizer: the stream runtime, interactive
# queries and the query gateway, built with clang-15 (Debian) and
# -fsanitize=thread into build-tsan/, run against a real broker. A race
# report fails the test that produced it. Extra arguments go to ctest.
#
# librdkafka is not built with the sanitizer; test/support/tsan_c11_threads.cpp
# and test/support/tsan.supp say why that needs a shim and one suppression.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_TSAN_BUILD_DIR:-${root}/build-tsan}"
broker="${root}/scripts/kafka-broker.sh"

bash "${root}/scripts/setup.sh" --with-clang >/dev/null

# Not runtime_scale_test: it bounds the records a warm copy restores when a
# task moves to it, by timing that holds at normal speed; under the
# sanitizer's slowdown it failed once in seven runs without a race report.
# The restorer, standbys and handoffs it exercises run here in
# runtime_failover_test.
targets=(runtime_queries_test runtime_application_test runtime_failover_test
         runtime_local_state_test runtime_bad_records_test runtime_restorer_test gateway_gateway_test
         http_server_test)
CXX=clang++-15 cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DSTRATA_SANITIZE=thread >/dev/null
cmake --build "${build}" -j "$(nproc)" --target "${targets[@]}"

# The broker of the caller (scripts/test.sh), or one of our own.
if [ -z "${STRATA_KAFKA_BOOTSTRAP:-}" ]; then
  "${broker}" start
  trap '"${broker}" stop' EXIT
  eval "$("${broker}" env)"
  export STRATA_KAFKA_BROKER_SCRIPT="${broker}"
fi

# halt_on_error: the first report ends the program with exitcode, so ctest
# shows the test as failed with the report in its output.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=${root}/test/support/tsan.supp external_symbolizer_path=$(command -v llvm-symbolizer-15 || command -v llvm-symbolizer || echo /usr/bin/llvm-symbolizer) ${TSAN_OPTIONS:-}"
regex="^($(IFS='|'; echo "${targets[*]}")):"
ctest --test-dir "${build}" --output-on-failure -R "${regex}" "$@"
