#!/bin/sh
# Checks that STRATA_SEPARATE_COMPILATION takes strata's common parts out of
# the user's objects: the tutorial's object must not define the file log's
# open() for POSIX files nor the registry's counter_for() (a header-only
# build's object defines the first), and the object of
# strata/separate_compilation.hpp must. Arguments: the program's object files.
set -eu
user="" compiled=""
for o in "$@"; do
  case "$o" in
    *separate_compilation.cpp.o) compiled="$o" ;;
    *tutorial.cpp.o) user="$o" ;;
  esac
done
[ -n "$user" ] && [ -n "$compiled" ] || { echo "expected the objects of tutorial.cpp and separate_compilation.cpp, got: $*" >&2; exit 1; }
# Whether object $1 defines, for the linker, a function whose name starts
# with $2 (a local copy made for inlining does not count).
defines() {
  nm -C --defined-only --extern-only "$1" | cut -d' ' -f3- |
    awk -v m="$2" 'index($0, m) == 1 { found = 1 } END { exit !found }'
}
status=0
for member in 'strata::basic_file_log<strata::posix_file_system>::open()' \
              'strata::metrics::basic_registry<std::mutex>::counter_for('; do
  if defines "$user" "$member"; then
    echo "the tutorial's object defines $member: it was compiled again, not taken from the compiled part" >&2
    status=1
  fi
  if ! defines "$compiled" "$member"; then
    echo "the compiled part does not define $member" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "the tutorial uses the compiled part's file log and registry"
exit "$status"
