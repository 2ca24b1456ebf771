#!/usr/bin/env bash
# Runs a real single-node Apache Kafka broker (KRaft, broker and controller in
# one JVM) on 127.0.0.1 for strata's Kafka tests. The broker's jars come from
# Maven Central through scripts/kafka/pom.xml, since no Debian package ships a
# broker; they are downloaded once into a cache folder.
#
# Usage: scripts/kafka-broker.sh COMMAND [ARGS]
#
#   fetch                 download the broker's jars into the cache (once)
#   start                 start a broker on a freshly formatted data dir and
#                         wait until it serves requests; a no-op when one is
#                         already running
#   start --keep-data     start on the data left by a previous run (after
#                         `stop` or `kill`), as a broker that comes back would
#   stop                  SIGTERM, then SIGKILL after a timeout; a no-op when
#                         none is running
#   kill                  SIGKILL at once, keeping the data: a crash
#   restart               stop, then start --keep-data
#   pause | resume        SIGSTOP / SIGCONT: a broker that hangs and comes back
#   status                say whether it runs; exit 0 if it does, 3 if not
#   env                   print `export STRATA_KAFKA_BOOTSTRAP=...` lines
#   log [N]               print the last N (default 50) lines of server.log
#   classpath             print the broker classpath ("<libs>/*")
#   topics ARGS...        run Kafka's kafka-topics tool against the broker
#                         (e.g. topics --create --topic t --config cleanup.policy=compact)
#   tool CLASS ARGS...    run any main class from the broker's jars
#   new-cluster-id        print a new KRaft cluster id
#
# Environment (all optional):
#   STRATA_KAFKA_VERSION          Kafka version from Maven Central (3.9.1);
#                                 4.x (e.g. 4.4.0) works too: its jars come
#                                 through scripts/kafka/pom-4.xml and it logs
#                                 through log4j2 instead of log4j 1
#   STRATA_CACHE_DIR              cache root (<repo>/.cache); the jars go to
#                                 $STRATA_CACHE_DIR/kafka-<version>/libs
#   STRATA_KAFKA_LIBS_DIR         the jar folder itself, overriding the above
#   STRATA_KAFKA_RUN_DIR          runtime files: config, data, logs, pid
#                                 ($STRATA_CACHE_DIR/kafka-run)
#   STRATA_KAFKA_PORT             client port (9092)
#   STRATA_KAFKA_CONTROLLER_PORT  KRaft controller port (9093)
#   STRATA_KAFKA_HEAP             JVM max heap (256m)
#   STRATA_KAFKA_JVM_OPTS         JVM options besides the heap (a small
#                                 footprint; see default_jvm_opts below)
#   STRATA_KAFKA_START_TIMEOUT    seconds to wait for readiness (120)
#   STRATA_KAFKA_STOP_TIMEOUT     seconds between SIGTERM and SIGKILL (30)
#   STRATA_KAFKA_EXTRA_PROPERTIES extra server.properties lines, appended last
#                                 (later lines win)
#   STRATA_KAFKA_SECURE_PORT      a second client listener, SASL_SSL with SCRAM-SHA-256
#                                 (9094 for the broker on 9092, else none), on a single
#                                 broker only; its
#                                 certificate is signed by a test CA made in the run
#                                 dir (scripts/make-test-certs.sh), its user
#                                 `strata` with the password `strata-secret`;
#                                 `env` prints them. 0: none
#
# One node of a cluster (scripts/kafka-cluster.sh sets these for each node):
#   STRATA_KAFKA_NODE_ID          this node's id (1)
#   STRATA_KAFKA_QUORUM_VOTERS    the KRaft voters, id@host:port,... (this
#                                 node alone)
#   STRATA_KAFKA_CLUSTER_ID       the cluster id to format with (a new one)
#   STRATA_KAFKA_REPLICATION      replication factor of new topics and of the
#                                 internal ones (1); above 1, min.insync.replicas
#                                 is 2
#
# Tests can drive it too: `kill` then `start --keep-data` makes the broker go
# away in the middle of a write and come back with the same log, on the same
# port. Every command that changes state takes a lock, so concurrent callers
# are serialised.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "${script_dir}/.." && pwd)"
readonly script_dir repo_dir
readonly config_dir="${script_dir}/kafka"  # the broker's configuration and logging files

readonly kafka_version="${STRATA_KAFKA_VERSION:-3.9.1}"
readonly cache_dir="${STRATA_CACHE_DIR:-${repo_dir}/.cache}"
readonly libs_dir="${STRATA_KAFKA_LIBS_DIR:-${cache_dir}/kafka-${kafka_version}/libs}"
readonly run_dir="${STRATA_KAFKA_RUN_DIR:-${cache_dir}/kafka-run}"
readonly port="${STRATA_KAFKA_PORT:-9092}"
readonly controller_port="${STRATA_KAFKA_CONTROLLER_PORT:-9093}"
readonly heap="${STRATA_KAFKA_HEAP:-256m}"
# Serial GC and the client compiler only: the broker starts faster and stays
# smaller, which matters more on a two-core machine than peak throughput.
# Benchmarks against the broker may want STRATA_KAFKA_JVM_OPTS=-XX:+UseG1GC.
readonly default_jvm_opts="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
readonly jvm_opts="${STRATA_KAFKA_JVM_OPTS:-${default_jvm_opts}}"
readonly start_timeout="${STRATA_KAFKA_START_TIMEOUT:-120}"
readonly stop_timeout="${STRATA_KAFKA_STOP_TIMEOUT:-30}"
readonly kafka_major="${kafka_version%%.*}"
readonly node_id="${STRATA_KAFKA_NODE_ID:-1}"
readonly quorum_voters="${STRATA_KAFKA_QUORUM_VOTERS:-${node_id}@127.0.0.1:${controller_port}}"
readonly replication="${STRATA_KAFKA_REPLICATION:-1}"
[[ "${replication}" =~ ^[1-9][0-9]*$ ]] || { echo "kafka-broker: error: STRATA_KAFKA_REPLICATION must be a positive number" >&2; exit 1; }
if ((replication > 1)); then readonly min_isr=2; else readonly min_isr=1; fi
# Kafka 4 replaced log4j 1 (reload4j) with log4j2: another logging backend in
# the pom, another config file format and system property.
if [[ "${kafka_major}" =~ ^[0-9]+$ ]] && ((kafka_major >= 4)); then
  readonly log4j2=1
  readonly pom="${script_dir}/kafka/pom-4.xml"
else
  readonly log4j2=0
  readonly pom="${script_dir}/kafka/pom.xml"
fi

readonly bootstrap="127.0.0.1:${port}"
# The SASL_SSL listener: a single broker only (a cluster's nodes would share the port).
# By default only the broker of the default port has one (9094): the tests'
# other brokers take ports of their own around theirs.
if [[ -n "${STRATA_KAFKA_QUORUM_VOTERS:-}" ]]; then
  secure_port=0
elif [[ "${port}" == 9092 ]]; then
  secure_port="${STRATA_KAFKA_SECURE_PORT:-9094}"
else
  secure_port="${STRATA_KAFKA_SECURE_PORT:-0}"
fi
readonly secure_port
readonly certs_dir="${run_dir}/certs"
readonly scram_user=strata scram_password=strata-secret
readonly data_dir="${run_dir}/data"
readonly logs_dir="${run_dir}/logs"
readonly pid_file="${run_dir}/broker.pid"
readonly props_file="${run_dir}/server.properties"
if ((log4j2)); then
  readonly log4j_file="${run_dir}/log4j2.properties"
  readonly tools_log4j_file="${run_dir}/tools-log4j2.properties"
  readonly log4j_property="-Dlog4j2.configurationFile"
else
  readonly log4j_file="${run_dir}/log4j.properties"
  readonly tools_log4j_file="${run_dir}/tools-log4j.properties"
  readonly log4j_property="-Dlog4j.configuration"
fi
readonly console_file="${logs_dir}/console.out"
readonly server_log="${logs_dir}/server.log"

say() { echo "kafka-broker: $*" >&2; }
die() { say "error: $*"; exit 1; }

# --- jars -------------------------------------------------------------------

# The marker records what the folder was made from (version and pom), so a
# second run trusts it without starting Maven, and an edited pom or another
# version re-fetches.
fetch_stamp() {
  echo "kafka ${kafka_version} pom $(sha256sum "${pom}" | cut -d' ' -f1)"
}

libs_ready() {
  [[ -f "${libs_dir}/.complete" && "$(cat "${libs_dir}/.complete")" == "$(fetch_stamp)" ]]
}

cmd_fetch() {
  libs_ready && return 0
  command -v mvn >/dev/null || die "mvn not found (scripts/setup.sh installs Maven)"
  mkdir -p "$(dirname "${libs_dir}")"
  # Two test runs starting at once must not both fill the same folder.
  exec 8>"$(dirname "${libs_dir}")/.fetch.lock"
  flock -w 600 8 || die "timed out waiting for another fetch"
  if libs_ready; then exec 8>&-; return 0; fi

  say "fetching Kafka ${kafka_version} jars from Maven Central into ${libs_dir}"
  # Copy into a temporary folder and rename at the end, so an interrupted
  # download never leaves a folder that looks complete.
  local tmp="${libs_dir}.tmp.$$"
  rm -rf "${tmp}"
  local mvn_log
  mvn_log="$(dirname "${libs_dir}")/fetch.log"
  if ! mvn -B -q -f "${pom}" dependency:copy-dependencies \
      -Dkafka.version="${kafka_version}" -DincludeScope=runtime \
      -DoutputDirectory="${tmp}" >"${mvn_log}" 2>&1; then
    rm -rf "${tmp}"
    tail -n 30 "${mvn_log}" >&2
    die "mvn could not fetch the Kafka ${kafka_version} jars (log: ${mvn_log})"
  fi
  [[ -f "${tmp}/kafka_2.13-${kafka_version}.jar" ]] || { rm -rf "${tmp}"; die "kafka_2.13-${kafka_version}.jar missing after mvn"; }
  fetch_stamp >"${tmp}/.complete"
  rm -rf "${libs_dir}"
  mv "${tmp}" "${libs_dir}"
  exec 8>&-
  say "fetched $(find "${libs_dir}" -name '*.jar' | wc -l) jars"
}

# --- process bookkeeping ----------------------------------------------------

# Prints the broker's pid if the pid file names a live broker started from
# this run dir (a pid reused by another process does not count).
running_pid() {
  [[ -f "${pid_file}" ]] || return 1
  local pid
  pid="$(cat "${pid_file}")"
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/${pid}/cmdline" ]] || return 1
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
  [[ "${cmdline}" == *kafka.Kafka*"${props_file}"* ]] || return 1
  # A zombie (killed, not yet reaped by its parent) is not a running broker.
  [[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null)" != Z ]] || return 1
  echo "${pid}"
}

port_open() {
  # bash's /dev/tcp: a plain TCP connect, no client needed.
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The broker answers a metadata request; kcat uses the same librdkafka as
# strata. Without a topic name the request creates nothing.
broker_answers() {
  if command -v kcat >/dev/null; then
    kcat -b "${bootstrap}" -L -m 5 >/dev/null 2>&1
  else
    port_open "${port}"
  fi
}

lock_run_dir() {
  mkdir -p "${run_dir}"
  exec 9>"${run_dir}/.lock"
  flock -w $((start_timeout + stop_timeout + 60)) 9 || die "timed out waiting for another kafka-broker.sh command"
}

# --- configuration ----------------------------------------------------------

# A KRaft cluster id is a UUID in URL-safe base64 without padding (22 chars).
# Kafka never hands out one that starts with '-', so neither do we.
random_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)"
    [[ "${id}" != -* ]] && { echo "${id}"; return; }
  done
}

# Fills a template of scripts/kafka/ ("@NAME@" -> value, for NAME=value
# pairs after the file name) and prints it.
render() {
  local template="$1" text
  shift
  shopt -u patsub_replacement 2>/dev/null || true  # bash 5.2: a '&' in a value is itself
  text="$(<"${config_dir}/${template}")"
  local pair
  for pair in "$@"; do
    text="${text//@${pair%%=*}@/${pair#*=}}"
  done
  printf '%s\n' "${text}"
}

# The broker's configuration and logging, from the files in scripts/kafka/.
write_config() {
  local secure_listener="" secure_advertised=""
  if ((secure_port > 0)); then
    secure_listener=",SASL_SSL://127.0.0.1:${secure_port}"
    secure_advertised=",SASL_SSL://127.0.0.1:${secure_port}"
  fi
  render broker.properties NODE_ID="${node_id}" QUORUM_VOTERS="${quorum_voters}" PORT="${port}" \
    CONTROLLER_PORT="${controller_port}" SECURE_LISTENER="${secure_listener}" \
    SECURE_ADVERTISED="${secure_advertised}" DATA_DIR="${data_dir}" REPLICATION="${replication}" \
    MIN_ISR="${min_isr}" >"${props_file}"
  if ((secure_port > 0)); then
    printf '\n' >>"${props_file}"
    render broker-sasl-ssl.properties CERTS_DIR="${certs_dir}" >>"${props_file}"
  fi
  if [[ -n "${STRATA_KAFKA_EXTRA_PROPERTIES:-}" ]]; then
    printf '\n# From STRATA_KAFKA_EXTRA_PROPERTIES\n%s\n' "${STRATA_KAFKA_EXTRA_PROPERTIES}" >>"${props_file}"
  fi
  # server.log is what readiness is read from; the cleaner and the state
  # change logs get their own files so server.log stays readable. Kafka 4.x
  # reads log4j2's syntax.
  if ((log4j2)); then
    cp "${config_dir}/broker-log4j2.properties" "${log4j_file}"
    cp "${config_dir}/tools-log4j2.properties" "${tools_log4j_file}"
  else
    cp "${config_dir}/broker-log4j.properties" "${log4j_file}"
    cp "${config_dir}/tools-log4j.properties" "${tools_log4j_file}"
  fi
}

# --- commands ---------------------------------------------------------------

cmd_start() {
  local keep_data=0
  case "${1:-}" in
    "") ;;
    --keep-data) keep_data=1 ;;
    *) die "start: unknown option '$1' (expected --keep-data)" ;;
  esac
  command -v java >/dev/null || die "java not found (scripts/setup.sh installs a JDK)"
  cmd_fetch
  lock_run_dir

  local pid
  if pid="$(running_pid)"; then
    # Same run dir, other ports: the caller would talk to the wrong address.
    grep -q "^advertised.listeners=PLAINTEXT://${bootstrap}\(,\|$\)" "${props_file}" \
      || die "a broker from ${run_dir} already runs on other ports ($(grep '^advertised.listeners=' "${props_file}")); stop it or set STRATA_KAFKA_RUN_DIR"
    say "already running (pid ${pid}) on ${bootstrap}"
    return 0
  fi
  rm -f "${pid_file}"
  # Kafka would fail to bind anyway; saying so here is clearer than its stack trace.
  local ports=("${port}" "${controller_port}")
  ((secure_port > 0)) && ports+=("${secure_port}")
  for p in "${ports[@]}"; do
    port_open "${p}" && die "port ${p} is already in use by another process (set STRATA_KAFKA_PORT / STRATA_KAFKA_CONTROLLER_PORT)"
  done

  mkdir -p "${logs_dir}"
  write_config
  if ((secure_port > 0)) && [[ ! -f "${certs_dir}/broker-keystore.pem" ]]; then
    "${script_dir}/make-test-certs.sh" "${certs_dir}"
    cat "${certs_dir}/server.key" "${certs_dir}/server.pem" >"${certs_dir}/broker-keystore.pem"
  fi
  local scram=()
  ((secure_port > 0)) && scram=(--add-scram "SCRAM-SHA-256=[name=${scram_user},password=${scram_password}]")
  if ((keep_data)) && [[ -f "${data_dir}/meta.properties" ]]; then
    say "starting on the existing data in ${data_dir}"
  else
    ((keep_data)) && say "no previous data in ${data_dir}: formatting a new one"
    rm -rf "${data_dir}" "${logs_dir:?}"/*
    local cluster_id="${STRATA_KAFKA_CLUSTER_ID:-}"
    [[ -n "${cluster_id}" ]] || cluster_id="$(random_cluster_id)"
    java -cp "${libs_dir}/*" "${log4j_property}=file:${tools_log4j_file}" \
      kafka.tools.StorageTool format -t "${cluster_id}" -c "${props_file}" "${scram[@]}" \
      >"${logs_dir}/format.out" 2>&1 \
      || { cat "${logs_dir}/format.out" >&2; die "formatting ${data_dir} failed"; }
    say "formatted ${data_dir} (cluster id ${cluster_id})"
  fi

  # Marks where this start's log begins: the readiness check must not be
  # fooled by "Kafka Server started" from an earlier run (with --keep-data).
  local log_start=0
  [[ -f "${server_log}" ]] && log_start="$(wc -c <"${server_log}")"

  # A broker keeps up to four files open per partition (log, offset, time
  # and, once a transaction was aborted there, transaction index): at
  # 11,000 partitions the machine's 20,000 descriptors ran out ("Too many
  # open files") and the broker shut down. Kafka's documentation asks for
  # 100,000; root may raise the limit, anyone else gets the hard limit.
  ulimit -n 100000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  # setsid: the broker gets its own session, so a test runner that signals
  # its process group (Ctrl-C, a timeout) does not take the broker with it.
  # 9>&- 8>&-: the broker must not inherit (and hold forever) our lock files.
  # shellcheck disable=SC2086 # jvm_opts is a list of options
  setsid java -Xms64m -Xmx"${heap}" ${jvm_opts} \
    -Dkafka.logs.dir="${logs_dir}" "${log4j_property}=file:${log4j_file}" \
    -cp "${libs_dir}/*" kafka.Kafka "${props_file}" \
    </dev/null >>"${console_file}" 2>&1 9>&- 8>&- &
  pid=$!
  # Not a job of this shell: no "Killed" notice if it has to be killed below.
  disown "${pid}"
  echo "${pid}" >"${pid_file}"
  say "started pid ${pid}, waiting up to ${start_timeout}s for ${bootstrap}"

  local started=${SECONDS}
  while :; do
    if ! kill -0 "${pid}" 2>/dev/null; then
      rm -f "${pid_file}"
      fail_start "the broker exited during startup"
    fi
    if [[ -f "${server_log}" ]] \
        && tail -c +$((log_start + 1)) "${server_log}" | grep -q "Kafka Server started" \
        && broker_answers; then
      break
    fi
    if ((SECONDS - started >= start_timeout)); then
      kill -KILL "${pid}" 2>/dev/null || true
      rm -f "${pid_file}"
      fail_start "not ready after ${start_timeout}s (killed pid ${pid})"
    fi
    sleep 0.25
  done
  say "ready on ${bootstrap} after $((SECONDS - started))s (pid ${pid})"
}

fail_start() {
  say "error: $1; last lines of the logs:"
  [[ -f "${server_log}" ]] && tail -n 40 "${server_log}" >&2
  [[ -f "${console_file}" ]] && tail -n 20 "${console_file}" >&2
  exit 1
}

cmd_stop() {
  lock_run_dir
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "${pid_file}"
    say "not running"
    return 0
  fi
  say "stopping pid ${pid}"
  # A paused broker would never see the SIGTERM.
  kill -CONT "${pid}" 2>/dev/null || true
  kill -TERM "${pid}" 2>/dev/null || true
  local started=${SECONDS}
  while kill -0 "${pid}" 2>/dev/null && running_pid >/dev/null; do
    if ((SECONDS - started >= stop_timeout)); then
      say "still alive after ${stop_timeout}s: SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  wait_gone "${pid}"
  rm -f "${pid_file}"
  say "stopped after $((SECONDS - started))s"
}

# Waits until the process is gone and its ports are released.
wait_gone() {
  local i
  for ((i = 0; i < 100; i++)); do
    running_pid >/dev/null || break
    sleep 0.1
  done
  for ((i = 0; i < 100; i++)); do
    port_open "${port}" || break
    sleep 0.1
  done
}

cmd_kill() {
  lock_run_dir
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "${pid_file}"
    say "not running"
    return 0
  fi
  kill -KILL "${pid}" 2>/dev/null || true
  wait_gone "${pid}"
  rm -f "${pid_file}"
  say "killed pid ${pid}; data kept in ${data_dir} (start --keep-data brings it back)"
}

cmd_signal() {
  local sig="$1" what="$2" pid
  pid="$(running_pid)" || die "not running"
  kill "-${sig}" "${pid}"
  say "${what} pid ${pid}"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    local state
    state="$(awk '{print $3}' "/proc/${pid}/stat")"
    if [[ "${state}" == T ]]; then
      say "paused (pid ${pid}) on ${bootstrap}"
    elif broker_answers; then
      say "running (pid ${pid}) on ${bootstrap}, rss $(($(ps -o rss= -p "${pid}") / 1024)) MiB"
    else
      say "process ${pid} alive but ${bootstrap} does not answer"
    fi
    return 0
  fi
  say "not running"
  return 3
}

cmd_env() {
  echo "export STRATA_KAFKA_BOOTSTRAP=${bootstrap}"
  echo "export STRATA_KAFKA_LIBS_DIR=${libs_dir}"
  if ((secure_port > 0)); then
    echo "export STRATA_KAFKA_SECURE_BOOTSTRAP=127.0.0.1:${secure_port}"
    echo "export STRATA_KAFKA_SECURE_CA=${certs_dir}/ca.pem"
    echo "export STRATA_KAFKA_SCRAM_USER=${scram_user}"
    echo "export STRATA_KAFKA_SCRAM_PASSWORD=${scram_password}"
    echo "export STRATA_KAFKA_CERTS_DIR=${certs_dir}"
  fi
}

run_tool() {
  cmd_fetch
  mkdir -p "${run_dir}"
  [[ -f "${tools_log4j_file}" ]] || write_config
  java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    "${log4j_property}=file:${tools_log4j_file}" -cp "${libs_dir}/*" "$@"
}

main() {
  local cmd="${1:-}"
  (($#)) && shift
  case "${cmd}" in
    fetch) cmd_fetch ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    kill) cmd_kill ;;
    restart) cmd_stop; cmd_start --keep-data ;;
    pause) cmd_signal STOP paused ;;
    resume) cmd_signal CONT resumed ;;
    status) cmd_status ;;
    env) cmd_env ;;
    new-cluster-id) random_cluster_id ;;
    log) tail -n "${1:-50}" "${server_log}" ;;
    classpath) cmd_fetch; echo "${libs_dir}/*" ;;
    topics) run_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "${bootstrap}" "$@" ;;
    tool) (($#)) || die "tool: name a main class"; run_tool "$@" ;;
    "" | -h | --help | help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' ;;
    *) die "unknown command '${cmd}' (try --help)" ;;
  esac
}

main "$@"
