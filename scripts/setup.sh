#!/usr/bin/env bash
# Installs, idempotently, every system package strata's build, tests, demo and
# benchmarks need. Safe to run again: it only installs what is missing.
#
# Usage: scripts/setup.sh [--with-clang]
#   --with-clang  also clang-15, which the test command needs: the core is
#                 checked with clang++-15 too, and the ThreadSanitizer build
#                 and the fuzz targets are built with it
set -euo pipefail
with_clang=0
while (($#)); do
  case "$1" in
    --with-clang) with_clang=1; shift ;;
    *) echo "strata setup: unknown option $1" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev librange-v3-dev catch2
  librdkafka-dev kcat libbenchmark-dev
  gdb  # the runtime tests print the stacks of an instance that does not stop in time
  iproute2  # network namespaces: an instance cut off from the broker (runtime_partition_test, bench-failover.sh)
  nlohmann-json3-dev libcli11-dev libssl-dev openssl
  librocksdb-dev libsqlite3-dev
  maven openjdk-17-jdk-headless
)
((with_clang)) && packages+=(clang-15 libclang-common-15-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# A JDK and Maven may come with the machine rather than from Debian: accept them.
filtered=()
for p in "${missing[@]}"; do
  case "$p" in
    maven) command -v mvn >/dev/null 2>&1 || filtered+=("$p") ;;
    openjdk-17-jdk-headless) command -v java >/dev/null 2>&1 || filtered+=("$p") ;;
    *) filtered+=("$p") ;;
  esac
done

if ((${#filtered[@]})); then
  echo "strata setup: installing ${filtered[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${filtered[@]}"
else
  echo "strata setup: all system packages present"
fi
