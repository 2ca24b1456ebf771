#!/usr/bin/env bash
# The query gateway's latency (benchmarks/gateway): a GET answered locally
# and one forwarded to the owning instance, next to the same HTTP server
# answering a constant, in one run. Builds the benchmark (Release), starts a
# broker with scripts/kafka-broker.sh unless one is running, and runs it
# twice: with the process free to use every core, and pinned to one core
# (taskset), which takes the placement of its threads out of the figures.
# Prints both tables; raw output goes to build-bench/results/gateway/.
#
# Usage: scripts/bench-gateway.sh [--requests 20000] [--reps 5] [--keys 10000] [--cpu 1]
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

requests=20000 reps=5 keys=10000 cpu=1
while (($#)); do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-gateway: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "bench-gateway: $*" >&2; }

bash scripts/setup.sh >/dev/null
out_dir="${repo_dir}/build-bench/results/gateway/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${out_dir}"
log="${out_dir}/run.log"
say "building benchmarks/gateway (Release)"
cmake -S benchmarks/gateway -B build-bench/gateway -G Ninja -DCMAKE_BUILD_TYPE=Release >>"${log}" 2>&1
cmake --build build-bench/gateway -j2 >>"${log}" 2>&1

source scripts/lib/broker.sh
broker_up "${log}"
trap 'broker_down "${log}"' EXIT

args=(--bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --requests "${requests}" --reps "${reps}" --keys "${keys}")
echo "Machine: $(nproc) cores, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
echo "### Free to use every core"
echo
build-bench/gateway/gateway_bench "${args[@]}" 2>>"${log}" | tee "${out_dir}/free.txt"
echo
echo "### Pinned to core ${cpu} (taskset -c ${cpu})"
echo
taskset -c "${cpu}" build-bench/gateway/gateway_bench "${args[@]}" 2>>"${log}" | tee "${out_dir}/pinned.txt"
