#!/usr/bin/env bash
# The first of strata's two commands: installs what is missing, builds the
# demo and runs it on the embedded file changelog (no Kafka needed).
# Arguments are passed to the demo: --quick, --updates N, --dir PATH, --keep.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_BUILD_DIR:-${root}/build}"

bash "${root}/scripts/setup.sh"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "${build}" --target example_demo
exec "${build}/docs/examples/example_demo" "$@"
