#!/usr/bin/env bash
# Runs strata's Kafka tests (ctest label "kafka") against a Kafka 4.x broker
# instead of the default 3.9.1 one: its own ports and run dir, so a 3.9.1
# broker on 9092 (scripts/test.sh's) keeps running undisturbed. Uses an
# existing build (STRATA_BUILD_DIR, default <repo>/build) as it is; only a
# missing one is configured and built (with -j STRATA_JOBS, default 2). Extra arguments go to ctest (e.g. -R restore).
#
# Environment (all optional):
#   STRATA_KAFKA_VERSION          broker version (4.4.0)
#   STRATA_KAFKA_PORT             client port (19692)
#   STRATA_KAFKA_CONTROLLER_PORT  controller port (19693)
#   STRATA_KAFKA_RUN_DIR          broker run dir (/tmp/kafka4-run)
#   STRATA_BUILD_DIR              build dir (<repo>/build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_BUILD_DIR:-${root}/build}"
broker="${root}/scripts/kafka-broker.sh"

# Exported, so that tests which kill and restart the broker through
# STRATA_KAFKA_BROKER_SCRIPT reach this same 4.x broker, not the default one.
export STRATA_KAFKA_VERSION="${STRATA_KAFKA_VERSION:-4.4.0}"
export STRATA_KAFKA_PORT="${STRATA_KAFKA_PORT:-19692}"
export STRATA_KAFKA_CONTROLLER_PORT="${STRATA_KAFKA_CONTROLLER_PORT:-19693}"
export STRATA_KAFKA_RUN_DIR="${STRATA_KAFKA_RUN_DIR:-/tmp/kafka4-run}"

if [[ ! -f "${build}/CMakeCache.txt" ]]; then
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DSTRATA_WARNINGS_AS_ERRORS=ON
  cmake --build "${build}" -j "${STRATA_JOBS:-2}"
fi

"${broker}" start
trap '"${broker}" stop' EXIT
eval "$("${broker}" env)"
export STRATA_KAFKA_BROKER_SCRIPT="${broker}"

# The interoperability test's Kafka Streams peer is built against Kafka
# Streams 3.9.1 (its pom); it talks to the 4.x broker as a 3.9.1 client.
peer_wrapper="${STRATA_KAFKA_RUN_DIR}/peer-kafka-streams"
mkdir -p "${STRATA_KAFKA_RUN_DIR}"
cat >"${peer_wrapper}" <<WRAPPER
#!/usr/bin/env bash
STRATA_KAFKA_VERSION="${STRATA_PEER_KAFKA_VERSION:-3.9.1}" exec "${root}/scripts/peer-kafka-streams.sh" "\$@"
WRAPPER
chmod +x "${peer_wrapper}"
"${peer_wrapper}" build
export STRATA_PEER_KAFKA_STREAMS="${peer_wrapper}"

echo "strata: Kafka tests against Kafka ${STRATA_KAFKA_VERSION} on ${STRATA_KAFKA_BOOTSTRAP}" >&2
ctest --test-dir "${build}" --output-on-failure -L kafka "$@"
