#!/usr/bin/env bash
# Runs the shared-state service (docs/shared-state-service.md) on this
# machine: a Kafka broker (scripts/kafka-broker.sh), three instances on
# 127.0.0.1:8081-8083 with one standby per partition, and, with --load N, N
# agents' reports from the load generator. Ctrl-C stops the instances (and
# the broker, if this script started it).
#
# Usage: scripts/run-shared-state.sh [--load 100000] [--token T] [--instances 3]
#
# Then: http://127.0.0.1:8081/ (the status page), curl 127.0.0.1:8082/objects/obj-7,
#       curl -X PUT -d '{"state":"down"}' 127.0.0.1:8083/objects/obj-7
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

load=0 token="" instances=3
while (($#)); do
  case "$1" in
    --load) load="$2"; shift 2 ;;
    --token) token="$2"; shift 2 ;;
    --instances) instances="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-shared-state: unknown option $1" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target shared_state_service shared_state_load >/dev/null

source scripts/lib/broker.sh
broker_up /dev/stderr

run_dir="$(mktemp -d /tmp/shared-state.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  broker_down /dev/stderr
  echo "run-shared-state: logs and state were in ${run_dir}"
}
trap cleanup EXIT INT TERM

for ((i = 1; i <= instances; i++)); do
  id="$(printf "\\x$(printf %x $((96 + i)))")"  # a, b, c, ...
  args=(--bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --instance "${id}" --port "$((8080 + i))"
        --state "${run_dir}/${id}" --standbys 1)
  [[ -n "${token}" ]] && args+=(--token "${token}")
  build/docs/examples/shared_state_service "${args[@]}" >"${run_dir}/${id}.log" 2>&1 &
  pids+=("$!")
  echo "run-shared-state: instance ${id} on http://127.0.0.1:$((8080 + i))/ (log ${run_dir}/${id}.log)"
done

for ((i = 1; i <= 60; i++)); do
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8081/health", timeout=2)' 2>/dev/null && break
  sleep 1
done
if ((load > 0)); then
  build/docs/examples/shared_state_load --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --count "${load}"
fi
echo "run-shared-state: running; Ctrl-C stops"
wait
