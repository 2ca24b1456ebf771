#!/usr/bin/env bash
# The second of strata's two commands: installs what is missing, builds
# everything, starts a real Kafka broker (from Maven Central jars), and runs
# the whole test suite with ctest. Extra arguments go to ctest (e.g. -R law).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_BUILD_DIR:-${root}/build}"
broker="${root}/scripts/kafka-broker.sh"

bash "${root}/scripts/setup.sh" --with-clang

# While the main build compiles, what the suite needs besides it comes in:
# Chromium, its driver and Selenium (the status page's browser test), the
# Kafka Streams peer of the interoperability test (built now, so that no test
# waits for Maven) and the broker's jars. They mostly wait on the network.
peer="${root}/scripts/peer-kafka-streams.sh"
mkdir -p "${root}/.cache"
prepare_log="${root}/.cache/test-prepare.log"
( bash "${root}/scripts/setup-python.sh" && "${peer}" build && "${broker}" fetch ) >"${prepare_log}" 2>&1 &
prepare=$!

# Debug information as line tables only (-g1): a backtrace or a sanitizer's
# report still names file and line, and the build takes about a fifth less
# than with full -g (docs/benchmarks.md, "Build time of the test command").
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DSTRATA_WARNINGS_AS_ERRORS=ON
cmake --build "${build}" -j "$(nproc)"

if ! wait "${prepare}"; then
  cat "${prepare_log}" >&2
  echo "strata test: installing the browser test's tools, building the Kafka Streams peer or fetching the broker failed (above)" >&2
  exit 1
fi
export STRATA_PEER_KAFKA_STREAMS="${peer}"

# The Kafka tests talk to a real broker; it runs for the length of the suite.
"${broker}" start
trap '"${broker}" stop' EXIT
eval "$("${broker}" env)"
export STRATA_KAFKA_BROKER_SCRIPT="${broker}"

# The runtime's fault campaign (label runtime_campaign) runs its short
# version here (one seed, 3 faults under each guarantee, on three brokers);
# scripts/chaos-runtime.sh runs the long one.
ctest --test-dir "${build}" --output-on-failure -j "$(nproc)" "$@"

# The concurrent parts again, under ThreadSanitizer (clang-15, build-tsan/),
# on the same broker; the unit suite under AddressSanitizer with
# UndefinedBehaviorSanitizer (build-asan/); and the short fuzz run, every
# decoder of untrusted bytes for 10 seconds from its seed corpus
# (build-fuzz/, docs/fuzzing.md). Skipped when ctest was given a selection.
if [ "$#" -eq 0 ]; then
  bash "${root}/scripts/test-thread-sanitizer.sh"
  bash "${root}/scripts/test-address-sanitizer.sh"
  bash "${root}/scripts/fuzz.sh"
fi
