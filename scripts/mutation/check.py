"""scripts/mutation-check.sh: see its comment for what it does and how."""

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locate import NotApplicable, headers, locate, mutate  # noqa: E402
from mutants import MUTANTS  # noqa: E402


class Failure(Exception):
    """An error of the check itself (exit status 2)."""


def say(msg=""):
    print(msg, flush=True)


def run(cmd, log=None, cwd=None, env=None):
    """Runs cmd; output to the open file `log` (or inherited). Returns the exit status."""
    return subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, env=env,
                          stdout=log, stderr=subprocess.STDOUT if log else None).returncode


def check_applies(root, mutants):
    """Every mutant's anchors and texts are found once each: the names of those that are not, with why."""
    files = headers(root)
    stale = []
    for m in mutants:
        try:
            path, _ = mutate(m, files)
            say(f"{m['name']}: applies ({path})")
        except NotApplicable as e:
            say(f"{m['name']}: DOES NOT APPLY: {e}")
            stale.append(m["name"])
    return stale


def cache_value(cache_text, key):
    m = re.search(rf"^{re.escape(key)}:[A-Z]+=(.*)$", cache_text, re.M)
    return m.group(1) if m else None


# ctest lines such as "  3/120 Test  #45: name ..........***Failed    0.12 sec"
RESULT_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (?P<name>.*) \.+\s*(?P<status>\S.*?)\s+[\d.]+ sec\s*$")


def ctest_regex(programs):
    return "^(" + "|".join(re.escape(p) for p in programs) + "):"


def run_tests(build, programs, jobs, timeout, log_path, env):
    """Runs the programs' tests, stopping at the first failure. Returns (ran, failed, first failure or None)."""
    with open(log_path, "w") as log:
        run(["ctest", "--test-dir", build, "-R", ctest_regex(programs), "-j", str(jobs), "--timeout", str(timeout),
             "--stop-on-failure", "--output-on-failure"], log, env=env)
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
    ap = argparse.ArgumentParser(prog="mutation-check.sh", description="Mutation check of strata's promises.")
    ap.add_argument("script_dir")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--applies", action="store_true",
                    help="only check that every mutant still applies to the working tree (no build); exit 2 if not")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this mutant")
    ap.add_argument("--all", action="store_true", help="also run the mutants known to be equivalent")
    ap.add_argument("--no-kafka", action="store_true", help="leave out the mutants whose tests need a broker")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per test")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--repo", default=None)
    args = ap.parse_args()

    repo = args.repo or subprocess.check_output(
        ["git", "-C", args.script_dir, "rev-parse", "--show-toplevel"], text=True).strip()

    if args.list:
        for m in MUTANTS:
            say(f"{m['name']}\n    at {' > '.join(m['anchor'])}\n    tests {m['tests']}"
                + (" (broker)" if m["kafka"] else "") + "\n" + textwrap.indent(textwrap.fill(m["what"], 90), "    "))
            if m["equivalent"]:
                say(textwrap.indent(textwrap.fill("EQUIVALENT (runs only with --only or --all): " + m["equivalent"],
                                                  90), "    "))
        return 0

    if args.applies:
        stale = check_applies(repo, MUTANTS)
        if stale:
            raise Failure(f"{len(stale)} of {len(MUTANTS)} mutants no longer apply ({', '.join(stale)}): the code "
                          "they target changed; update their anchors or texts in scripts/mutation/mutants.py")
        say(f"all {len(MUTANTS)} mutants apply")
        return 0

    names = [m["name"] for m in MUTANTS]
    only = [n for o in args.only for n in o.split(",") if n]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise Failure(f"unknown mutant(s) {', '.join(unknown)}; --list shows them: {', '.join(names)}")
    if only:
        selected = [m for m in MUTANTS if m["name"] in only]
    else:
        selected = [m for m in MUTANTS if (args.all or not m["equivalent"]) and not (args.no_kafka and m["kafka"])]
        skipped = [m["name"] for m in MUTANTS if m not in selected]
        if skipped:
            say(f"not run (equivalent, or --no-kafka): {', '.join(skipped)}")

    head = subprocess.check_output(["git", "-C", repo, "rev-parse", "HEAD"], text=True).strip()
    subject = subprocess.check_output(["git", "-C", repo, "log", "-1", "--format=%s", "HEAD"], text=True).strip()
    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="strata-mutation.")
    try:
        return check(args, repo, head, subject, selected, scratch, started)
    finally:
        if args.keep:
            say(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def start_broker(repo, logs):
    """A broker for the Kafka mutants' tests: the environment their tests need, and how to stop it."""
    script = os.path.join(repo, "scripts", "kafka-broker.sh")
    started = False
    if run([script, "status"], open(os.devnull, "w")) != 0:
        with open(os.path.join(logs, "broker.log"), "w") as log:
            if run([script, "start"], log) != 0:
                raise Failure(f"the broker did not start, see {log.name}\n" + tail(log.name))
        started = True
    env = dict(os.environ)
    for line in subprocess.check_output([script, "env"], text=True).splitlines():
        m = re.match(r"^(?:export\s+)?(\w+)=(.*)$", line.strip())
        if m:
            env[m.group(1)] = m.group(2).strip("'\"")
    env["STRATA_KAFKA_BROKER_SCRIPT"] = script

    def stop():
        if started:
            run([script, "stop"], open(os.devnull, "w"))
    return env, stop


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

    # Every selected mutant must fit the exported tree, checked before any build.
    files = headers(src)
    for m in selected:
        try:
            mutate(m, files)
        except NotApplicable as e:
            raise Failure(f"mutant {m['name']} does not apply: {e}")

    kafka = any(m["kafka"] for m in selected)
    cmakelists = open(os.path.join(src, "CMakeLists.txt")).read()
    options = {"STRATA_BUILD_TESTS": "ON", "STRATA_WITH_KAFKA": "ON" if kafka else "OFF",
               "STRATA_WITH_GATEWAY": "OFF", "STRATA_BUILD_EXAMPLES": "OFF", "STRATA_BUILD_BENCHMARKS": "OFF"}
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

    # The test programs: test/<dir>/<name>_test.cpp is the program <dir>_<name>_test,
    # whose ctest names are "<program>:<case>"; those the configuration leaves out are skipped.
    known = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True).stdout
    known = {line.split(":", 1)[0] for line in known.splitlines()}
    everything = []
    for root, _, names in os.walk(os.path.join(src, "test")):
        for f in names:
            if f.endswith("_test.cpp"):
                rel = os.path.relpath(os.path.join(root, f), os.path.join(src, "test"))
                target = rel[:-len(".cpp")].replace(os.sep, "_")
                if target in known:
                    everything.append(target)
    programs = {}
    for m in selected:
        programs[m["name"]] = sorted(t for t in everything if re.search(m["tests"], t))
        if not programs[m["name"]]:
            raise Failure(f"mutant {m['name']}: no test program matches {m['tests']}")
    union = sorted({p for ps in programs.values() for p in ps})
    say(f"test programs ({len(union)}): {' '.join(union)}")

    env, stop_broker = start_broker(repo, logs) if kafka else (None, lambda: None)
    try:
        def build_targets(tag, targets):
            with open(os.path.join(logs, f"build-{tag}.log"), "w") as log:
                ok = run(["cmake", "--build", build, "-j", str(args.jobs), "--target"] + targets, log) == 0
            return ok, log.name

        # The unmutated tree first: every test a mutant relies on must pass.
        t0 = time.monotonic()
        ok, log = build_targets("unmutated", union)
        if not ok:
            raise Failure(f"the unmutated tree does not build:\n{tail(log)}")
        ran, failed, first = run_tests(build, union, args.jobs, args.timeout,
                                       os.path.join(logs, "test-unmutated.log"), env)
        if ran == 0 or failed:
            raise Failure(f"the unmutated tree fails {first or 'to run its tests'}: fix the tests before checking "
                          "mutants\n" + tail(os.path.join(logs, "test-unmutated.log")))
        say(f"unmutated: {ran} tests pass ({time.monotonic() - t0:.0f} s)")

        rows = []
        for m in selected:
            name = m["name"]
            t0 = time.monotonic()
            # `files` still holds every header as it is: each mutant's header is put back after it.
            path, mutated = mutate(m, files)
            file = os.path.join(src, path)
            original = files[path]
            with open(file, "w") as f:
                f.write(mutated)
            try:
                ok, log = build_targets(name, programs[name])
                if not ok:
                    raise Failure(f"mutant {name} does not compile (fix the mutant):\n{tail(log)}")
                ran, failed, first = run_tests(build, programs[name], args.jobs, args.timeout,
                                               os.path.join(logs, f"test-{name}.log"), env)
            finally:
                with open(file, "w") as f:
                    f.write(original)
            result = "caught" if failed else "equivalent" if m["equivalent"] else "MISSED"
            seconds = time.monotonic() - t0
            say(f"{name}: {result}" + (f" by {first}" if first else f" ({ran} tests passed)") + f" ({seconds:.0f} s)")
            if failed and m["equivalent"]:
                say(f"  note: {name} is listed as equivalent but was caught: the code changed, revisit it")
            rows.append((name, path, m["what"], result, first or "-"))
    finally:
        stop_broker()

    table(rows)
    missed = [r[0] for r in rows if r[3] == "MISSED"]
    equivalent = [r[0] for r in rows if r[3] == "equivalent"]
    total = time.monotonic() - started
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
    """The results as a Markdown table (docs/reliability.md quotes it)."""
    say()
    say("| mutant | file | what it breaks | result | first failing test |")
    say("|---|---|---|---|---|")
    for name, path, what, result, first in rows:
        say(f"| {name} | {path.removeprefix('include/strata/')} | {what} | {result} | {first} |")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    try:
        sys.exit(main())
    except Failure as e:
        print(f"mutation-check: error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(2)
