#!/usr/bin/env bash
# Builds and runs the Kafka Streams peer of strata's benchmarks
# (benchmarks/peers/kafka-streams): the same workloads done by Kafka Streams
# at the broker's Kafka version, and the Kafka Streams side of the changelog
# interoperability test.
#
# Usage: scripts/peer-kafka-streams.sh COMMAND [OPTIONS]
#
#   build                 build the peer (once; again only when its sources change)
#   jar                   build if needed, print the path of the runnable jar
#   write ...             logged writes into an inmemory or rocksdb store
#   restore ...           restore a store from an existing changelog
#   interop-write ...     Kafka Streams writes A-S-changelog from a records file
#   interop-read ...      Kafka Streams restores A-S-changelog and dumps it
#   interop-kind-write ...  the same for a window, session, timestamped or versioned store
#   interop-kind-read ...
#   runtime ...           one long-lived instance of the runtime benchmark's app,
#                         until SIGTERM/SIGINT (prints event lines, not JSON)
#   runtime-feed ...      write input records for runtime
#   remove-members ...    remove every member of an application's group at once
#                         (a stopped Kafka Streams application's, see docs/runtime.md)
#   help                  this text and the peer's own option list
#
# Each run command but runtime prints one JSON line on stdout; logs go to
# stderr. Without --bootstrap, $STRATA_KAFKA_BOOTSTRAP is used (see
# scripts/kafka-broker.sh env).
#
# Example:
#   scripts/kafka-broker.sh start && eval "$(scripts/kafka-broker.sh env)"
#   scripts/peer-kafka-streams.sh write --updates 1M --keys 100k --store inmemory --cache-bytes 0
#
# Environment (all optional):
#   STRATA_CACHE_DIR        cache root (<repo>/.cache); the build goes to
#                           $STRATA_CACHE_DIR/peer-kafka-streams
#   STRATA_KAFKA_VERSION    must match the pom's kafka.version (3.9.1)
#   STRATA_PEER_HEAP        JVM max heap (1g)
#   STRATA_PEER_JVM_OPTS    more JVM options (e.g. -XX:+UseParallelGC, or
#                           -Dorg.slf4j.simpleLogger.defaultLogLevel=info)
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "${script_dir}/.." && pwd)"
readonly script_dir repo_dir

readonly project_dir="${repo_dir}/benchmarks/peers/kafka-streams"
readonly cache_dir="${STRATA_CACHE_DIR:-${repo_dir}/.cache}"
readonly out_dir="${cache_dir}/peer-kafka-streams"
readonly build_dir="${out_dir}/build"
readonly jar="${build_dir}/peer.jar"
readonly heap="${STRATA_PEER_HEAP:-1g}"
readonly kafka_version="${STRATA_KAFKA_VERSION:-3.9.1}"

say() { echo "peer-kafka-streams: $*" >&2; }
die() { say "error: $*"; exit 1; }

# What the build was made from: the pom and every source file. A matching
# stamp means no Maven run at all.
build_stamp() {
  (cd "${project_dir}" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

build_ready() {
  [[ -f "${build_dir}/.complete" && -f "${jar}" && "$(cat "${build_dir}/.complete")" == "$(build_stamp)" ]]
}

cmd_build() {
  build_ready && return 0
  command -v mvn >/dev/null || die "mvn not found (scripts/setup.sh installs Maven)"
  command -v java >/dev/null || die "java not found (scripts/setup.sh installs a JDK)"
  local pom_version
  pom_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "${project_dir}/pom.xml")"
  [[ "${pom_version}" == "${kafka_version}" ]] \
    || die "the peer is pinned to Kafka ${pom_version} but STRATA_KAFKA_VERSION is ${kafka_version}; the peer must match the broker (edit kafka.version in ${project_dir}/pom.xml)"
  mkdir -p "${out_dir}"
  # Two callers at once must not build into the same folder.
  exec 8>"${out_dir}/.build.lock"
  flock -w 600 8 || die "timed out waiting for another build"
  if build_ready; then exec 8>&-; return 0; fi

  say "building ${project_dir} into ${build_dir}"
  local stamp tmp log
  stamp="$(build_stamp)"
  tmp="${build_dir}.tmp.$$"
  log="${out_dir}/build.log"
  rm -rf "${tmp}"
  # Offline first: after one successful build every artifact is in the local
  # Maven repository and nothing is downloaded. Online only if that fails.
  if ! mvn -B -q -o -f "${project_dir}/pom.xml" -Dpeer.build.dir="${tmp}" package >"${log}" 2>&1; then
    say "offline build failed, building online (first build, or new dependencies)"
    rm -rf "${tmp}"
    if ! mvn -B -q -f "${project_dir}/pom.xml" -Dpeer.build.dir="${tmp}" package >"${log}" 2>&1; then
      rm -rf "${tmp}"
      tail -n 40 "${log}" >&2
      die "mvn could not build the peer (log: ${log})"
    fi
  fi
  [[ -f "${tmp}/peer.jar" && -f "${tmp}/lib/kafka-streams-${kafka_version}.jar" ]] \
    || { rm -rf "${tmp}"; die "build finished without peer.jar or kafka-streams-${kafka_version}.jar"; }
  echo "${stamp}" >"${tmp}/.complete"
  rm -rf "${build_dir}"
  mv "${tmp}" "${build_dir}"
  exec 8>&-
  say "built ${jar}"
}

cmd_run() {
  cmd_build
  local args=("$@")
  local have_bootstrap=0 a
  for a in "${args[@]:1}"; do
    [[ "${a}" == --bootstrap || "${a}" == --bootstrap=* ]] && have_bootstrap=1
  done
  if ((!have_bootstrap)); then
    [[ -n "${STRATA_KAFKA_BOOTSTRAP:-}" ]] \
      || die "no --bootstrap and no STRATA_KAFKA_BOOTSTRAP (eval \"\$(scripts/kafka-broker.sh env)\")"
    args+=(--bootstrap "${STRATA_KAFKA_BOOTSTRAP}")
  fi
  # shellcheck disable=SC2086 # STRATA_PEER_JVM_OPTS is a list of options
  exec java -Xms256m -Xmx"${heap}" ${STRATA_PEER_JVM_OPTS:-} -jar "${jar}" "${args[@]}"
}

main() {
  local cmd="${1:-}"
  case "${cmd}" in
    build) cmd_build ;;
    jar) cmd_build; echo "${jar}" ;;
    write | restore | interop-write | interop-read | interop-kind-write | interop-kind-read | runtime | runtime-feed | remove-members) cmd_run "$@" ;;
    "" | -h | --help | help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
      if build_ready; then echo; java -jar "${jar}" --help; fi
      ;;
    *) die "unknown command '${cmd}' (try --help)" ;;
  esac
}

main "$@"
