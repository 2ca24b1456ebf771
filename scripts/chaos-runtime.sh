#!/usr/bin/env bash
# The runtime's fault campaign at length: test/runtime/chaos_test.cpp on
# three brokers (scripts/kafka-cluster.sh starts them), FAULTS faults under
# each guarantee, in rounds of ROUND faults (a fresh application each round,
# so that a failure names a short seeded run to replay).
# `ctest -L '^runtime_campaign$'` runs one short round (the test command
# does);
# docs/reliability.md gives this script's figures.
#
# Usage: scripts/chaos-runtime.sh [FAULTS per guarantee, default 500] [ROUND, default 25]
# Replay a failed round: STRATA_CHAOS_SEED=<seed it printed> STRATA_CHAOS_FAULTS=<ROUND> \
#   build/test/runtime_chaos_test
# STRATA_CHAOS_KINDS=broker,coordinator (any of kill, handoff, latency,
# zombie, pause, broker, coordinator, duplicate) draws only those faults; a
# seed replays with the same kinds only. A stalled round's log has, for each
# partition, the inputs written and committed, and each instance's metrics.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
faults="${1:-500}"
round="${2:-25}"
build="${STRATA_BUILD_DIR:-${root}/build}"
# Each run keeps its logs in a directory of its own.
log_dir="${STRATA_CHAOS_LOG_DIR:-${root}/.cache/chaos}/$(date +%Y%m%d-%H%M%S)"

"${root}/scripts/setup.sh" >/dev/null
cmake --build "${build}" --target runtime_chaos_test runtime_aggregate_app
export STRATA_KAFKA_BROKER_SCRIPT="${root}/scripts/kafka-broker.sh"
mkdir -p "${log_dir}/bin"
# The campaign runs copies of the test and its application, so that the tree
# can be rebuilt while it runs; the log names the commit they were built from.
cp "${build}/test/runtime_chaos_test" "${build}/test/runtime_aggregate_app" "${log_dir}/bin/"
export STRATA_AGGREGATE_APP="${log_dir}/bin/runtime_aggregate_app"
# The instances' logs and state of a failed round stay (the round's log names
# them); a round that passed removes its own.
export STRATA_KEEP_TEST_DIRS=1
# A crashed instance leaves a core (where kernel.core_pattern says).
export STRATA_TEST_CORES=1
# The group consumers' librdkafka debug log, for the rounds that fail.
export STRATA_CHAOS_DEBUG="${STRATA_CHAOS_DEBUG-cgrp}"
echo "chaos-runtime: built from $(git -C "${root}" rev-parse --short HEAD)$(git -C "${root}" diff --quiet HEAD -- include test || echo ' with uncommitted changes')"

rounds=$(((faults + round - 1) / round))
started=${SECONDS}
failed=0
for ((r = 1; r <= rounds; r++)); do
  seed="$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')"
  out="${log_dir}/round-${r}.log"
  if STRATA_CHAOS_SEED="${seed}" STRATA_CHAOS_FAULTS="${round}" "${log_dir}/bin/runtime_chaos_test" >"${out}" 2>&1; then
    echo "round ${r}/${rounds} (seed ${seed}): $(grep -h 'every invariant held' "${out}" | sed 's/^chaos //' | paste -sd ';' -)"
    sed -n 's/^chaos .*: instance logs in //p' "${out}" | xargs -r rm -rf
  else
    failed=$((failed + 1))
    echo "round ${r}/${rounds} (seed ${seed}): FAILED, log ${out}"
  fi
done
total=$((rounds * round * 2))
echo "chaos-runtime: ${total} faults (${rounds} rounds of ${round} per guarantee), ${failed} failed rounds, $(((SECONDS - started) / 60)) min"
grep -h 'every invariant held' "${log_dir}"/round-*.log 2>/dev/null | grep -o '[a-z]*=[0-9]*' | awk -F= '{n[$1]+=$2} END {for (k in n) printf "%s=%d ", k, n[k]; print ""}'
((failed == 0))
