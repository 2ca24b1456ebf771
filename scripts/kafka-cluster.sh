#!/usr/bin/env bash
# Runs a cluster of real Apache Kafka brokers on 127.0.0.1, for the tests and
# the campaign that need a partition's leader to die while the cluster goes
# on. Each node is one scripts/kafka-broker.sh (KRaft, broker and controller
# in one JVM) with a run dir, ports and node id of its own; the nodes form
# one controller quorum, and topics and the internal ones are replicated to
# every node (min.insync.replicas 2). Each node is reached through its own
# TCP fault proxy (test/support/tcp_proxy.py), which it advertises: clients
# and the other nodes' replication go through it, so `delay` slows the
# whole cluster's network.
#
# Usage: scripts/kafka-cluster.sh COMMAND [ARGS]
#
#   start [--keep-data]   start every node on fresh data (or on the data of a
#                         previous run) and wait until each serves requests;
#                         nodes already running are left alone
#   stop                  stop every node
#   kill N                SIGKILL node N, keeping its data: a crash
#   start-node N          start node N again on its data
#   pause N | resume N    SIGSTOP / SIGCONT node N
#   delay MS | pass       every proxy holds each chunk MS ms / forwards at once
#   status                each node's state; exit 0 if all run
#   env                   print `export STRATA_KAFKA_BOOTSTRAP=...` (every node)
#   bootstrap             print the bootstrap list
#   leader TOPIC [PART]   print the id of the node that leads the partition
#                         (partition 0 by default); -1 while none does
#   topics ARGS...        kafka-topics against the cluster
#   node N ARGS...        any kafka-broker.sh command for node N
#
# Environment (all optional):
#   STRATA_KAFKA_CLUSTER_SIZE     nodes (3)
#   STRATA_KAFKA_CLUSTER_PORT     node k's client port (its proxy's) is this
#                                 + k - 1, the broker's own listener this + 50
#                                 + k - 1, its controller port this + 100 +
#                                 k - 1 (9192): clear of the single broker's
#                                 9092/9093, so both can run at once
#   STRATA_KAFKA_CLUSTER_DIR      run dirs of the nodes (<cache>/kafka-cluster)
#   STRATA_KAFKA_HEAP             each node's JVM heap (256m)
# and the version and cache settings of kafka-broker.sh.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "${script_dir}/.." && pwd)"
readonly script_dir repo_dir
readonly broker="${script_dir}/kafka-broker.sh"
readonly size="${STRATA_KAFKA_CLUSTER_SIZE:-3}"
readonly base_port="${STRATA_KAFKA_CLUSTER_PORT:-9192}"
readonly cluster_dir="${STRATA_KAFKA_CLUSTER_DIR:-${STRATA_CACHE_DIR:-${repo_dir}/.cache}/kafka-cluster}"
readonly id_file="${cluster_dir}/cluster.id"
readonly proxy_script="${repo_dir}/test/support/tcp_proxy.py"

say() { echo "kafka-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

[[ "${size}" =~ ^[1-9]$ ]] || die "STRATA_KAFKA_CLUSTER_SIZE must be 1 to 9"

client_port() { echo $((base_port + $1 - 1)); }
listener_port() { echo $((base_port + 50 + $1 - 1)); }
controller_port() { echo $((base_port + 100 + $1 - 1)); }
proxy_dir() { echo "${cluster_dir}/proxy-$1"; }

bootstrap() {
  local k list=""
  for ((k = 1; k <= size; k++)); do list+="${list:+,}127.0.0.1:$(client_port "${k}")"; done
  echo "${list}"
}

voters() {
  local k list=""
  for ((k = 1; k <= size; k++)); do list+="${list:+,}${k}@127.0.0.1:$(controller_port "${k}")"; done
  echo "${list}"
}

check_node() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= size)) || die "name a node from 1 to ${size}"
}

# Runs kafka-broker.sh for node $1 with the rest of the arguments.
node() {
  local k="$1"
  shift
  local replication=3
  ((size < 3)) && replication="${size}"
  STRATA_KAFKA_RUN_DIR="${cluster_dir}/node-${k}" \
    STRATA_KAFKA_PORT="$(listener_port "${k}")" \
    STRATA_KAFKA_EXTRA_PROPERTIES="advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "${k}")" \
    STRATA_KAFKA_CONTROLLER_PORT="$(controller_port "${k}")" \
    STRATA_KAFKA_NODE_ID="${k}" \
    STRATA_KAFKA_QUORUM_VOTERS="$(voters)" \
    STRATA_KAFKA_CLUSTER_ID="$(cat "${id_file}" 2>/dev/null || true)" \
    STRATA_KAFKA_REPLICATION="${replication}" \
    "${broker}" "$@"
}

# Node k's proxy: 127.0.0.1:client_port -> listener_port, left running if
# it runs.
start_proxy() {
  local k="$1" dir
  dir="$(proxy_dir "${k}")"
  mkdir -p "${dir}"
  if [[ -f "${dir}/pid" ]] && kill -0 "$(cat "${dir}/pid")" 2>/dev/null; then return; fi
  rm -f "${dir}/control.sock"
  nohup python3 "${proxy_script}" --port "$(client_port "${k}")" --target "$(listener_port "${k}")" \
    --control "${dir}/control.sock" </dev/null >"${dir}/proxy.log" 2>&1 &
  echo "$!" >"${dir}/pid"
  local waited=0
  until [[ -S "${dir}/control.sock" ]]; do
    ((waited++ < 100)) || die "the proxy of node ${k} did not start (${dir}/proxy.log)"
    sleep 0.1
  done
}

stop_proxy() {
  local dir
  dir="$(proxy_dir "$1")"
  [[ -f "${dir}/pid" ]] || return 0
  kill "$(cat "${dir}/pid")" 2>/dev/null || true
  rm -f "${dir}/pid"
}

# Sends one command to every proxy; fails unless each answers ok.
proxy_command() {
  local k
  for ((k = 1; k <= size; k++)); do
    python3 - "$(proxy_dir "${k}")/control.sock" "$*" <<'PY' || die "the proxy of node ${k} refused '$*'"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
answer = s.makefile().readline().strip()
sys.exit(0 if answer.startswith("ok") else answer)
PY
  done
}

cmd_start() {
  local keep=""
  case "${1:-}" in
    "") ;;
    --keep-data) keep="--keep-data" ;;
    *) die "start: unknown option '$1' (expected --keep-data)" ;;
  esac
  mkdir -p "${cluster_dir}"
  "${broker}" fetch
  # Every node of a fresh cluster formats with one cluster id.
  if [[ -z "${keep}" || ! -f "${id_file}" ]]; then
    local running=0 k
    for ((k = 1; k <= size; k++)); do node "${k}" status >/dev/null 2>&1 && running=1; done
    ((running)) || "${broker}" new-cluster-id >"${id_file}"
  fi
  local pids=() k failed=0
  for ((k = 1; k <= size; k++)); do start_proxy "${k}"; done
  # In parallel: a node's broker waits for the controller quorum, which
  # needs a majority of the nodes up.
  for ((k = 1; k <= size; k++)); do
    node "${k}" start ${keep} 2>"${cluster_dir}/node-${k}.out" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "${pid}" || failed=1; done
  for ((k = 1; k <= size; k++)); do sed "s/^/[node ${k}] /" "${cluster_dir}/node-${k}.out" >&2; done
  ((failed == 0)) || die "not every node started (logs in ${cluster_dir}/node-*/logs)"
  say "ready: $(bootstrap)"
}

cmd_stop() {
  local pids=() k
  mkdir -p "${cluster_dir}"
  for ((k = 1; k <= size; k++)); do
    node "${k}" stop 2>"${cluster_dir}/node-${k}.out" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "${pid}" || true; done
  for ((k = 1; k <= size; k++)); do sed "s/^/[node ${k}] /" "${cluster_dir}/node-${k}.out" >&2; done
  for ((k = 1; k <= size; k++)); do stop_proxy "${k}"; done
}

cmd_status() {
  local k all=0
  for ((k = 1; k <= size; k++)); do
    node "${k}" status 2>&1 | sed "s/^/[node ${k}] /" >&2
    ((PIPESTATUS[0] == 0)) || all=3
  done
  return "${all}"
}

# The leader of a partition, from a metadata request (kcat, the same
# librdkafka as strata).
cmd_leader() {
  local topic="${1:?leader: name a topic}" part="${2:-0}"
  command -v kcat >/dev/null || die "kcat not found (scripts/setup.sh installs it)"
  local line
  line="$(kcat -b "$(bootstrap)" -L -t "${topic}" -m 5 2>/dev/null | grep -E "^ +partition ${part}, leader " || true)"
  [[ -n "${line}" ]] || { echo -1; return; }
  echo "${line}" | sed -E 's/^ +partition [0-9]+, leader (-?[0-9]+),.*/\1/'
}

main() {
  local cmd="${1:-}"
  (($#)) && shift
  case "${cmd}" in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    kill) check_node "${1:-}"; node "$1" kill ;;
    start-node) check_node "${1:-}"; start_proxy "$1"; node "$1" start --keep-data ;;
    pause) check_node "${1:-}"; node "$1" pause ;;
    resume) check_node "${1:-}"; node "$1" resume ;;
    delay) [[ "${1:-}" =~ ^[0-9]+$ ]] || die "delay: give milliseconds"; proxy_command delay "$1" ;;
    pass) proxy_command pass ;;
    status) cmd_status ;;
    env) echo "export STRATA_KAFKA_BOOTSTRAP=$(bootstrap)" ;;
    bootstrap) bootstrap ;;
    leader) cmd_leader "$@" ;;
    topics) node 1 tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" "$@" ;;
    node) check_node "${1:-}"; local k="$1"; shift; node "${k}" "$@" ;;
    "" | -h | --help | help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' ;;
    *) die "unknown command '${cmd}' (try --help)" ;;
  esac
}

main "$@"
