#!/usr/bin/env bash
# What a user pays to compile strata: wall time and peak memory of the
# compiler for a few translation units, with g++ and clang++-15, at -O2,
# each compiled REPS times in turn (the median is reported):
#
#   - the standard headers strata.hpp includes, alone (the floor), then with
#     the Boost and range-v3 headers it includes;
#   - `#include <strata.hpp>` and nothing else (the umbrella header);
#   - docs/examples/tutorial.cpp (a typical user's file: a store, three
#     decorators, a file log, restore), and the same with -fsyntax-only (the
#     front end alone: the rest of its time is generating its code);
#   - the tutorial with STRATA_SEPARATE_COMPILATION, and the .cpp that then
#     compiles strata's common parts once (strata/separate_compilation.hpp);
#   - `#include <strata/runtime/application.hpp>` (the runtime, with librdkafka).
#
# Nothing else may run meanwhile for the figures to mean anything. Prints a
# Markdown table.
#
# Usage: scripts/bench-compile.sh [--reps 5] [--compilers "g++ clang++-15"]
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

reps=5 compilers="g++ clang++-15"
while (($#)); do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --compilers) compilers="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-compile: unknown option $1" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh --with-clang >/dev/null

work="$(mktemp -d /tmp/bench-compile.XXXXXX)"
trap 'rm -rf "${work}"' EXIT
printf '#include <strata.hpp>\nint main() {}\n' >"${work}/umbrella.cpp"
# The floor: the standard headers that strata.hpp includes (directly or
# through strata's headers), alone; then with the Boost and range-v3 headers
# strata's headers include. Both lists come from the compiler's own
# dependency output, so they follow the headers as they change.
g++ -std=c++20 -I"${repo_dir}/include" -M "${work}/umbrella.cpp" | tr ' \\' '\n\n' | grep . >"${work}/deps"
{ grep -E '^/usr/include/c\+\+/[0-9]+/[a-z_]+$' "${work}/deps" | sed 's#.*/#\#include <#; s#$#>#'
  echo 'int main() {}'; } >"${work}/std.cpp"
{ grep -v 'int main' "${work}/std.cpp"
  grep -E "^${repo_dir}/include/" "${work}/deps" | xargs grep -hE '^#include <(boost|range)/' | sort -u
  echo 'int main() {}'; } >"${work}/third_party.cpp"
printf '#include <strata/runtime/application.hpp>\nint main() {}\n' >"${work}/runtime.cpp"
printf '#include <strata/separate_compilation.hpp>\n' >"${work}/compiled_once.cpp"

# Each unit: its name, the compiler's mode, its source.
units=("the standard headers strata.hpp includes:-O2:${work}/std.cpp"
       "... and its Boost and range-v3 headers:-O2:${work}/third_party.cpp"
       "strata.hpp:-O2:${work}/umbrella.cpp"
       "docs/examples/tutorial.cpp:-O2:${repo_dir}/docs/examples/tutorial.cpp"
       "docs/examples/tutorial.cpp, front end only (-fsyntax-only):-fsyntax-only:${repo_dir}/docs/examples/tutorial.cpp"
       "docs/examples/tutorial.cpp with STRATA_SEPARATE_COMPILATION:-O2 -DSTRATA_SEPARATE_COMPILATION:${repo_dir}/docs/examples/tutorial.cpp"
       "... and strata/separate_compilation.hpp, compiled once:-O2 -DSTRATA_SEPARATE_COMPILATION:${work}/compiled_once.cpp"
       "strata/runtime/application.hpp:-O2:${work}/runtime.cpp")

# One compile: "seconds kilobytes", or "fails" (the compiler's first error in ${work}/error).
measure() {
  local cxx="$1" mode="$2" src="$3"
  if /usr/bin/time -o "${work}/time" -f '%e %M' "${cxx}" -std=c++20 ${mode} -I"${repo_dir}/include" \
       -I"${repo_dir}/docs/examples" -DSQLITE_ENABLE_PREUPDATE_HOOK=1 -c "${src}" -o "${work}/out.o" \
       >/dev/null 2>"${work}/stderr"; then
    cat "${work}/time"
  else
    grep -m1 'error' "${work}/stderr" >"${work}/error" || true
    echo "fails"
  fi
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "From \`scripts/bench-compile.sh --reps ${reps}\` at $(git rev-parse --short HEAD), on $(nproc) cores, -O2, median of ${reps}."
echo
echo "| unit | compiler | seconds | peak MB |"
echo "|---|---|---:|---:|"
for unit in "${units[@]}"; do
  IFS=: read -r name mode src <<<"${unit}"
  for cxx in ${compilers}; do
    command -v "${cxx}" >/dev/null || continue
    : >"${work}/t" ; : >"${work}/m"
    failed=0
    for ((i = 0; i < reps; i++)); do
      read -r s kb < <(measure "${cxx}" "${mode}" "${src}")
      if [[ "${s}" == fails ]]; then failed=1; break; fi
      echo "${s}" >>"${work}/t"
      echo "${kb}" >>"${work}/m"
    done
    if ((failed)); then
      printf '| %s | %s | does not compile: %s | |\n' "${name}" "${cxx}" \
        "$(sed 's#.*/include/#include/#; s/|/\\|/g' "${work}/error" | cut -c1-160)"
      continue
    fi
    printf '| %s | %s | %s | %d |\n' "${name}" "${cxx}" "$(median <"${work}/t")" "$(($(median <"${work}/m") / 1024))"
  done
done
