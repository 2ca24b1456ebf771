#!/bin/sh
# Usage: run_expecting.sh PASS_LINE PROGRAM [ARGS...]
#
# Runs PROGRAM ARGS..., prints what it wrote (stdout and stderr), and
# succeeds only if it exited with status 0 AND its output has a line
# containing PASS_LINE (a fixed string). CTest's PASS_REGULAR_EXPRESSION
# alone would ignore the exit status, so a program that prints its pass line
# and then fails or crashes would pass.
set -u
if [ "$#" -lt 2 ]; then
    echo "usage: $0 PASS_LINE PROGRAM [ARGS...]" >&2
    exit 2
fi
pass=$1
shift
out=$(mktemp "${TMPDIR:-/tmp}/run_expecting.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT

"$@" >"$out" 2>&1
status=$?
cat "$out"

if [ "$status" -ne 0 ]; then
    echo "run_expecting: $1 exited with status $status" >&2
    exit 1
fi
if ! grep -qF -- "$pass" "$out"; then
    echo "run_expecting: the output of $1 lacks '$pass'" >&2
    exit 1
fi
exit 0
