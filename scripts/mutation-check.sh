#!/usr/bin/env bash
# Mutation check of the durability code: builds deliberately broken copies of
# the file log, the segment reader, the frame encoder and the logged and
# cached layers, and requires the changelog, restore, decorator and law tests
# to catch every one of them.
#
#   scripts/mutation-check.sh                 run every mutant
#   scripts/mutation-check.sh --list          list the mutants
#   scripts/mutation-check.sh --only NAME     run one mutant (repeatable, or NAME,NAME)
#
# Mutants known to be equivalent (no behaviour of the code can tell them from
# the original; see EQUIVALENT below) run only when named with --only, or with
# --all, and their "not caught" does not fail the check.
#
# Other options: --jobs N (build and test parallelism, default 2),
# --timeout S (per test, default 300), --keep (keep the scratch directory and
# its logs), --repo DIR (default: the repository holding this script).
#
# How it works: the tree at HEAD (committed files only) is exported to a
# scratch directory and configured once (Ninja, RelWithDebInfo, without Kafka,
# the gateway and the examples, so no broker is needed; the compiler, flags and
# sanitizer setting come from <repo>/build/CMakeCache.txt when it exists).
# The unmutated tree is built and tested first: every selected test must pass,
# or a mutant "caught" would mean nothing. Then each mutant replaces exact text
# in one header (the check stops with an error if a text is not found exactly
# once, so it cannot go stale silently), rebuilds the selected test programs
# incrementally in the same build directory, runs them with ctest -R, and puts
# the header back. A mutant is caught when at least one test fails (ctest stops
# at the first failure); a mutant that fails to compile is an error of this
# script. The scratch directory is removed at exit.
#
# Exit status: 0 every mutant caught; 1 a mutant missed; 2 any other error
# (stale mutant text, unmutated tests failing, build failure, bad option).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 - "$here" "$@" <<'PYTHON'
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

TEST_REGEX = "changelog_|restore_|decorators_|laws_"

FILE_LOG = "include/strata/changelog/file_log.hpp"
SEGMENT = "include/strata/changelog/detail/segment.hpp"
FRAME = "include/strata/changelog/detail/frame.hpp"
LOGGED = "include/strata/decorators/logged.hpp"
CACHED = "include/strata/decorators/cached.hpp"

# name, file, what it breaks, [(exact text, replacement), ...]
MUTANTS = [
    ("no-fdatasync", FILE_LOG,
     "file_log::flush writes the frames and the commit frame but never fdatasyncs them: "
     "a power loss can lose a flush that returned",
     [("            fs_.append(active_, pending_, s.path);\n"
       "            fs_.sync_data(active_, s.path);\n",
       "            fs_.append(active_, pending_, s.path);\n")]),
    ("wrong-resume", SEGMENT,
     "after a frame whose prefix is intact but whose body is bad, the reader resumes one byte "
     "past the frame's end: a commit frame right after it goes unseen",
     [("            it.resume = pos_ + info->frame_size();\n",
       "            it.resume = pos_ + info->frame_size() + 1;\n")]),
    ("resume-at-end", SEGMENT,
     "after a frame whose prefix is intact but whose body is bad, the reader resumes at the end "
     "of the file: no later commit frame is ever seen",
     [("            it.resume = pos_ + info->frame_size();\n",
       "            it.resume = limit_;\n")]),
    ("resume-inside-frame", SEGMENT,
     "after a frame whose prefix is intact but whose body is bad, the reader resumes at the "
     "next byte instead of after the frame: bytes inside the damaged frame (a value that holds "
     "a commit frame) are taken for a later flush's commit, and a torn flush is reported as damage",
     [("            it.resume = pos_ + info->frame_size();\n",
       "            it.resume = pos_ + 1;\n")]),
    ("end-off-by-one", FILE_LOG,
     "opening a log sets its end (and the next offset) one past the end of its last flush",
     [("    next_offset_ = durable_end_ = c.intact_end;\n",
       "    next_offset_ = durable_end_ = c.intact_end + 1;\n")]),
    ("flush-end-off-by-one", FILE_LOG,
     "file_log::flush returns one less than the durable end (the checkpoint then names it)",
     [("        write_witness();\n"
       "        compact_automatically();\n"
       "        return durable_end_;\n",
       "        write_witness();\n"
       "        compact_automatically();\n"
       "        return durable_end_ - 1;\n")]),
    ("dropped-tombstone", LOGGED,
     "logged::erase writes the erased key as a live (empty) value instead of a tombstone",
     [("        append_record(k, [](byte_buffer&) { return false; });\n",
       "        append_record(k, [](byte_buffer&) { return true; });\n")]),
    ("tombstone-flag-dropped", FRAME,
     "the frame encoder never sets the tombstone flag: a tombstone reads back as a live empty value",
     [("    encode_frame(out, r.value ? std::uint8_t{0} : tombstone_flag, offset, r.key,\n",
       "    encode_frame(out, std::uint8_t{0}, offset, r.key,\n")]),
    ("cached-tombstone-dropped", CACHED,
     "the cache's flush (or eviction) of an entry known to be deleted writes nothing, "
     "so no tombstone reaches the changelog",
     [("            if (e.cached.known) return inner_.log_state(*e.key, e.cached.value);\n",
       "            if (e.cached.known) {\n"
       "                if (!e.cached.value) return;\n"
       "                return inner_.log_state(*e.key, e.cached.value);\n"
       "            }\n")]),
    ("skipped-dirty-entry", CACHED,
     "the cache's flush skips the newest dirty entry when two or more are dirty "
     "(a single dirty entry is still written)",
     [("            while (entry* e = dirty_.back()) {\n"
       "                write_record(*e);\n",
       "            for (const std::size_t dirty_at_start = dirty_.size; entry* e = dirty_.back();) {\n"
       "                if (dirty_at_start < 2 || dirty_.size > 1) write_record(*e);\n")]),
    ("evicted-dirty-lost", CACHED,
     "evicting a dirty entry drops it without writing its record",
     [("                if constexpr (logs) write_record(*victim);\n", "")]),
    ("witness-ignored", FILE_LOG,
     "opening a log ignores the witness (how far returned flushes wrote the active segment): "
     "a lost or damaged returned flush at the end is cut as if it never returned",
     [("            is_active && r.witness && r.witness->base == s.base ? r.witness->bytes : 0;\n",
       "            is_active && r.witness && r.witness->base == s.base ? std::uint64_t{0} : 0;\n")]),
    ("commit-ignored", FILE_LOG,
     "the open-time scan counts a record as committed as soon as it is read: frames after "
     "the last commit frame (a flush that never returned) are kept instead of cut",
     [("                last = it.rec.offset;\n"
       "                if (unconfirmed++ == 0) first_unconfirmed = it.rec.offset;\n",
       "                last = it.rec.offset;\n"
       "                c.intact_end = it.rec.offset + 1;\n"
       "                ++c.records;\n"
       "                r.intact_bytes = it.pos + it.raw.size();\n"
       "                if (s.records++ == 0) s.first = it.rec.offset;\n"
       "                s.last = it.rec.offset;\n")]),
    ("unfinished-not-cut", FILE_LOG,
     "opening a log does not truncate the bytes of an unfinished flush: the next flush is "
     "appended after the torn frames",
     [("    if (c.unfinished_bytes > 0) {\n",
       "    if (false && c.unfinished_bytes > 0) {\n")]),
    ("compaction-resurrects-deleted", FILE_LOG,
     "compaction ignores tombstones when it finds each key's latest record: it drops the "
     "tombstone and keeps the deleted key's older value",
     [("        if (it.what != kind::record) return;\n"
       "        const std::string_view key = as_chars(it.rec.key);\n",
       "        if (it.what != kind::record || !it.rec.value) return;\n"
       "        const std::string_view key = as_chars(it.rec.key);\n")]),
    ("checkpoint-before-flush", LOGGED,
     "logged::flush saves the checkpoint (the log's end offset) before it flushes the log: a "
     "failed or interrupted flush leaves a checkpoint naming records that are not durable",
     [("        const offset_t durable = log().flush();\n"
       "        if constexpr (detail::has_flush<Inner>) inner_.flush();\n"
       "        if (opts_.checkpoint_on_flush) save_checkpoint(durable);\n",
       "        if (opts_.checkpoint_on_flush) save_checkpoint(log().end_offset());\n"
       "        const offset_t durable = log().flush();\n"
       "        if constexpr (detail::has_flush<Inner>) inner_.flush();\n")]),
]


# Mutants that no test can catch because the code behaves the same with them,
# and why. They stay listed so the reasoning is not lost and so that a change
# of the code that makes them matter again is noticed (run them with --all).
EQUIVALENT = {
    "wrong-resume":
        "the scan after a bad body collects every valid commit frame from the resume point on, and calls "
        "the damage a torn tail only when there is none, or exactly one whose flush began at the last intact "
        "commit (its own). The only frame resume+1 misses is a commit frame right after the bad frame, "
        "which is then the bad frame's own commit: missing it leaves either no commit (torn, as with it) or "
        "later flushes' commits only, and any of those began after it (damage, as with it).",
}


class Failure(Exception):
    """An error of the check itself (exit status 2)."""


def say(msg=""):
    print(msg, flush=True)


def run(cmd, log=None, cwd=None):
    """Runs cmd; output to the open file `log` (or inherited). Returns the exit status."""
    return subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=log, stderr=subprocess.STDOUT if log else None).returncode


def apply_edits(text, edits, name, path):
    """The text with every edit made; each old text must occur exactly once."""
    for old, new in edits:
        n = text.count(old)
        if n != 1:
            first = old.strip().splitlines()[0]
            raise Failure(f"mutant {name}: the text to replace occurs {n} times in {path} (must be once): "
                          f"{first!r}. The code changed: update the mutant in scripts/mutation-check.sh")
        text = text.replace(old, new)
    return text


def cache_value(cache_text, key):
    m = re.search(rf"^{re.escape(key)}:[A-Z]+=(.*)$", cache_text, re.M)
    return m.group(1) if m else None


# ctest lines such as "  3/120 Test  #45: name ..........***Failed    0.12 sec"
RESULT_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (?P<name>.*) \.+\s*(?P<status>\S.*?)\s+[\d.]+ sec\s*$")


def run_tests(build, jobs, timeout, log_path):
    """Runs the selected tests, stopping at the first failure.
    Returns (ran, failed, first failure or None)."""
    with open(log_path, "w") as log:
        run(["ctest", "--test-dir", build, "-R", TEST_REGEX, "-j", str(jobs), "--timeout", str(timeout),
             "--stop-on-failure", "--output-on-failure"], log)
    ran, failed, first = 0, 0, None
    with open(log_path, errors="replace") as log:
        for line in log:
            m = RESULT_LINE.match(line)
            if not m:
                continue
            ran += 1
            if not m.group("status").endswith("Passed"):
                failed += 1
                if first is None:
                    first = f"{m.group('name')} [{m.group('status').strip('* ')}]"
    return ran, failed, first


def main():
    ap = argparse.ArgumentParser(prog="mutation-check.sh", description="Mutation check of the durability code.")
    ap.add_argument("script_dir")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this mutant")
    ap.add_argument("--all", action="store_true", help="also run the mutants known to be equivalent")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--repo", default=None)
    args = ap.parse_args()

    if args.list:
        for name, path, what, _ in MUTANTS:
            say(f"{name}\n    {path}\n" + textwrap.indent(textwrap.fill(what, 90), "    "))
            if name in EQUIVALENT:
                say(textwrap.indent(textwrap.fill("EQUIVALENT (runs only with --only or --all): " + EQUIVALENT[name],
                                                  90), "    "))
        return 0

    names = [m[0] for m in MUTANTS]
    only = [n for o in args.only for n in o.split(",") if n]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise Failure(f"unknown mutant(s) {', '.join(unknown)}; --list shows them: {', '.join(names)}")
    if only:
        selected = [m for m in MUTANTS if m[0] in only]
    else:
        selected = [m for m in MUTANTS if args.all or m[0] not in EQUIVALENT]
        skipped = [m[0] for m in MUTANTS if m not in selected]
        if skipped:
            say(f"not run, known to be equivalent (--all runs them): {', '.join(skipped)}")

    repo = args.repo or subprocess.check_output(
        ["git", "-C", args.script_dir, "rev-parse", "--show-toplevel"], text=True).strip()
    head = subprocess.check_output(["git", "-C", repo, "rev-parse", "HEAD"], text=True).strip()
    subject = subprocess.check_output(["git", "-C", repo, "log", "-1", "--format=%s", "HEAD"], text=True).strip()

    # Every mutant must still fit the code, checked before any build.
    for name, path, _, edits in MUTANTS:
        try:
            original = subprocess.check_output(["git", "-C", repo, "show", f"HEAD:{path}"], text=True)
        except subprocess.CalledProcessError:
            raise Failure(f"mutant {name}: {path} is not in HEAD")
        apply_edits(original, edits, name, path)

    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="strata-mutation.")
    try:
        return check(args, repo, head, subject, selected, scratch, started)
    finally:
        if args.keep:
            say(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def check(args, repo, head, subject, selected, scratch, started):
    src, build = os.path.join(scratch, "src"), os.path.join(scratch, "build")
    logs = os.path.join(scratch, "logs")
    os.makedirs(src)
    os.makedirs(logs)
    say(f"HEAD {head[:12]} {subject}")
    say(f"scratch {scratch}")
    archive = subprocess.Popen(["git", "-C", repo, "archive", "HEAD"], stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise Failure("could not export HEAD")

    # Configure once. Options the project has: no Kafka (no broker), no
    # gateway, no examples or benchmarks; the toolchain of the main build.
    cmakelists = open(os.path.join(src, "CMakeLists.txt")).read()
    options = {"STRATA_BUILD_TESTS": "ON", "STRATA_WITH_KAFKA": "OFF", "STRATA_WITH_GATEWAY": "OFF",
               "STRATA_BUILD_EXAMPLES": "OFF", "STRATA_BUILD_BENCHMARKS": "OFF"}
    defs = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    for opt, value in options.items():
        if re.search(rf"option\(\s*{opt}\b", cmakelists):
            defs.append(f"-D{opt}={value}")
    cache_path = os.path.join(repo, "build", "CMakeCache.txt")
    if os.path.exists(cache_path):
        cache = open(cache_path, errors="replace").read()
        for key in ("CMAKE_CXX_COMPILER", "CMAKE_CXX_FLAGS", "CMAKE_PREFIX_PATH", "STRATA_SANITIZE"):
            value = cache_value(cache, key)
            if value is not None and (value or key == "CMAKE_CXX_FLAGS"):
                defs.append(f"-D{key}={value}")
    say("configure: " + " ".join(defs))
    with open(os.path.join(logs, "configure.log"), "w") as log:
        if run(["cmake", "-G", "Ninja", "-S", src, "-B", build] + defs, log) != 0:
            raise Failure(f"configure failed, see {log.name} (--keep keeps it)\n" + tail(log.name))

    # The test programs behind the selected ctest names: test/<dir>/<name>_test.cpp
    # becomes the program <dir>_<name>_test, whose cases are named "<program>: ...".
    targets = []
    for root, _, files in os.walk(os.path.join(src, "test")):
        for f in files:
            if f.endswith("_test.cpp"):
                rel = os.path.relpath(os.path.join(root, f), os.path.join(src, "test"))
                target = rel[:-len(".cpp")].replace(os.sep, "_")
                if re.search(TEST_REGEX, target):
                    targets.append(target)
    # Programs the configuration leaves out (Kafka's, whose names may match too) are skipped.
    known = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True).stdout
    known = {line.split(":", 1)[0] for line in known.splitlines()}
    targets = sorted(t for t in targets if t in known)
    if not targets:
        raise Failure(f"no test program matches {TEST_REGEX}")
    say(f"test programs ({len(targets)}): {' '.join(targets)}")
    if not any("fault_campaign" in t for t in targets):
        say("note: HEAD has no file_log fault campaign test (test/changelog/file_log_fault_campaign_test.cpp);"
            " no-fdatasync can only be caught by a file system that loses unsynced pages")

    def build_targets(tag):
        with open(os.path.join(logs, f"build-{tag}.log"), "w") as log:
            ok = run(["cmake", "--build", build, "-j", str(args.jobs), "--target"] + targets, log) == 0
        return ok, log.name

    def test(tag):
        return run_tests(build, args.jobs, args.timeout, os.path.join(logs, f"test-{tag}.log"))

    # The unmutated tree first: every selected test must pass.
    t0 = time.monotonic()
    ok, log = build_targets("unmutated")
    if not ok:
        raise Failure(f"the unmutated tree does not build:\n{tail(log)}")
    ran, failed, first = test("unmutated")
    listed = subprocess.run(["ctest", "--test-dir", build, "-N", "-R", TEST_REGEX], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True).stdout
    m = re.search(r"^Total Tests: (\d+)", listed, re.M)
    expected = int(m.group(1)) if m else -1
    if ran == 0 or ran != expected:
        raise Failure(f"ctest -R '{TEST_REGEX}' lists {expected} tests but {ran} results were read")
    if failed:
        raise Failure(f"the unmutated tree fails {first}: fix the tests before checking mutants\n"
                      + tail(os.path.join(logs, "test-unmutated.log")))
    say(f"unmutated: {ran} tests pass ({time.monotonic() - t0:.0f} s)")

    rows = []
    for name, path, what, edits in selected:
        t0 = time.monotonic()
        file = os.path.join(src, path)
        original = open(file).read()
        with open(file, "w") as f:
            f.write(apply_edits(original, edits, name, path))
        try:
            ok, log = build_targets(name)
            if not ok:
                raise Failure(f"mutant {name} does not compile (fix the mutant):\n{tail(log)}")
            ran, failed, first = test(name)
        finally:
            with open(file, "w") as f:
                f.write(original)
        result = "caught" if failed else "equivalent" if name in EQUIVALENT else "MISSED"
        seconds = time.monotonic() - t0
        say(f"{name}: {result}" + (f" by {first}" if first else f" ({ran} tests passed)") + f" ({seconds:.0f} s)")
        if failed and name in EQUIVALENT:
            say(f"  note: {name} is listed as equivalent but was caught: the code changed, revisit EQUIVALENT")
        rows.append((name, path, what, result, first or "-"))

    table(rows)
    missed = [r[0] for r in rows if r[3] == "MISSED"]
    total = time.monotonic() - started
    equivalent = [r[0] for r in rows if r[3] == "equivalent"]
    say(f"\n{len(rows) - len(missed) - len(equivalent)} of {len(rows) - len(equivalent)} mutants caught"
        + (f" (and {len(equivalent)} equivalent not caught: {', '.join(equivalent)})" if equivalent else "") + "; "
        f"run time {int(total // 60)} min {total % 60:.0f} s (HEAD {head[:12]})")
    if missed:
        say("MISSED: " + ", ".join(missed))
        return 1
    return 0


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def table(rows):
    headers = ("mutant", "file", "what it breaks", "result", "first failing test")
    widths = [max(len(headers[0]), *(len(r[0]) for r in rows)),
              max(len(headers[1]), *(len(r[1].removeprefix("include/strata/")) for r in rows)),
              48, max(len(headers[3]), *(len(r[3]) for r in rows))]
    say()
    say("  ".join(h.ljust(w) for h, w in zip(headers, widths)) + "  " + headers[4])
    say("  ".join("-" * w for w in widths) + "  " + "-" * len(headers[4]))
    for name, path, what, result, first in rows:
        wrapped = textwrap.wrap(what, widths[2]) or [""]
        say("  ".join([name.ljust(widths[0]), path.removeprefix("include/strata/").ljust(widths[1]),
                       wrapped[0].ljust(widths[2]), result.ljust(widths[3]), first]))
        for more in wrapped[1:]:
            say(" " * (widths[0] + widths[1] + 4) + more)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    try:
        sys.exit(main())
    except Failure as e:
        print(f"mutation-check: error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(2)
PYTHON
