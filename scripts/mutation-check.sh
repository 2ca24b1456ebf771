#!/usr/bin/env bash
# Mutation check of the code that keeps strata's promises: builds
# deliberately broken copies of the file log, the decorators, restore, the
# Kafka changelog and the runtime, and requires the tests to catch each one.
#
#   scripts/mutation-check.sh                 run every mutant (the full run)
#   scripts/mutation-check.sh --applies       check that every mutant still fits
#                                             the code (seconds, no build; in the
#                                             test command)
#   scripts/mutation-check.sh --list          list the mutants
#   scripts/mutation-check.sh --only NAME     run one mutant (repeatable, or NAME,NAME)
#
# The mutants are in scripts/mutation/mutants.py. Each names where it applies
# by anchors, not by file and line: a text unique under include/ (a function's
# signature), then texts unique inside the block it opens; its edits replace
# text found once in that block, compared token by token (scripts/mutation/
# locate.py). A mutant whose anchor or text is not found exactly once is an
# error that names it: the check cannot go stale silently.
#
# Mutants known to be equivalent (no behaviour can tell them from the
# original; the reason is in mutants.py) run only with --only or --all.
# Other options: --no-kafka (leave out the mutants whose tests need a broker),
# --jobs N (default 2), --timeout S (per test, default 600), --keep (keep the
# scratch directory and its logs), --repo DIR.
#
# How it works: the tree at HEAD (committed files only) is exported to a
# scratch directory and configured once (Ninja, RelWithDebInfo, no gateway or
# examples; Kafka only when a selected mutant needs it, and then a broker from
# scripts/kafka-broker.sh; the compiler and flags of <repo>/build when it
# exists). The unmutated tree is built and its tests run first: every test a
# mutant relies on must pass, or "caught" would mean nothing. Then each mutant
# is applied, the test programs it names are rebuilt incrementally and run
# (ctest, stopping at the first failure), and the header is put back. A mutant
# is caught when at least one test fails; one that does not compile is an
# error of the check. The results end with a Markdown table.
#
# Exit status: 0 every mutant caught; 1 a mutant missed; 2 any other error
# (a mutant that no longer applies, unmutated tests failing, a build failure).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "${here}/mutation/check.py" "${here}" "$@"
