# Sourced by the scripts that need a Kafka broker for a while (benchmarks,
# the shared-state demo): one place for "use the broker that runs, or start
# one and stop it at the end".
#
#   broker_up LOG     starts scripts/kafka-broker.sh unless a broker runs
#                     (its output appended to LOG), then exports its
#                     environment (STRATA_KAFKA_BOOTSTRAP, ...)
#   broker_down LOG   stops the broker if broker_up started it, unless
#                     STRATA_BENCH_KEEP_BROKER=1; safe to call twice
#
# The test scripts (test.sh, test-thread-sanitizer.sh, test-kafka-4.sh)
# always start their own broker and stop it, and call kafka-broker.sh directly.

strata_broker_script="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/kafka-broker.sh"
strata_broker_started=0

broker_up() {
  local log="${1:-/dev/null}"
  if ! "${strata_broker_script}" status >/dev/null 2>&1; then
    "${strata_broker_script}" start >>"${log}" 2>&1 || {
      echo "the Kafka broker did not start; see ${log}" >&2
      return 1
    }
    strata_broker_started=1
  fi
  eval "$("${strata_broker_script}" env)"
  export STRATA_KAFKA_BROKER_SCRIPT="${strata_broker_script}"
}

broker_down() {
  local log="${1:-/dev/null}"
  if ((strata_broker_started)) && [[ "${STRATA_BENCH_KEEP_BROKER:-0}" != 1 ]]; then
    "${strata_broker_script}" stop >>"${log}" 2>&1 || true
  fi
  strata_broker_started=0
}
