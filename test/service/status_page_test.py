#!/usr/bin/env python3
"""The shared-state service's status page, driven in a real browser.

Starts two instances of docs/examples/shared_state/service.cpp (one standby
per partition) on a Kafka broker, writes agents' reports with the load
program, and opens GET / of instance a in headless Chromium. It checks what a
person would see: both instances, every partition running exactly once and
standing by exactly once elsewhere, and an object looked up through the form.
Then it SIGKILLs instance b and checks that the page, still served by a,
shows a alone running all six partitions, and that the object whose
partition b ran still answers, with the state it had.

    .cache/venv/bin/python test/service/status_page_test.py \\
        --service build/docs/examples/shared_state_service \\
        --load build/docs/examples/shared_state_load

Needs STRATA_KAFKA_BOOTSTRAP (scripts/kafka-broker.sh env), Chromium and its
driver, and Selenium (scripts/setup-python.sh). Exit code 0: passed.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PARTITIONS = 6
REPORTS = 5000
OBJECTS = 500
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# How long each phase may take. Startup includes creating the topics and the
# first rebalance; failover includes the session timeout (6 s in
# service.cpp) after which the broker gives b's partitions to a.
STARTUP_S = 120
PAGE_S = 60
FAILOVER_S = 60
LOOKUP_S = 30

# Every request goes to 127.0.0.1: an http_proxy in the environment must not
# see it.
http = urllib.request.build_opener(urllib.request.ProxyHandler({}))
started = time.monotonic()


class Failure(Exception):
    """A check that did not hold; its message says what was seen instead."""


def say(text):
    print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)


def get(url, timeout=2.0):
    """(status, parsed body) of a GET; (None, the error) when nothing answered."""
    try:
        with http.open(url, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (OSError, urllib.error.URLError) as e:
        return None, str(e)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def free_ports(n):
    """n distinct ports free on 127.0.0.1: all bound at once, then let go."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Instance:
    """One shared_state_service process, its port, state dir and log."""

    def __init__(self, name, binary, workdir, common):
        self.name = name
        self.port = None
        self.state = os.path.join(workdir, f"state-{name}")
        self.log = os.path.join(workdir, f"instance-{name}.log")
        self.binary = binary
        self.common = common
        self.process = None
        self.killed = False

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, port):
        self.port = port
        os.makedirs(self.state, exist_ok=True)
        argv = [self.binary, "--instance", self.name, "--listen", "127.0.0.1", "--port", str(port),
                "--state", self.state, *self.common]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def check_alive(self):
        if self.process and not self.killed and self.process.poll() is not None:
            raise Failure(f"instance {self.name} exited with code {self.process.returncode}")

    def kill(self):
        self.killed = True
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        """SIGTERM, then SIGKILL if it does not leave in time."""
        if not self.process or self.process.poll() is not None:
            return
        self.killed = True
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def print_log(self):
        print(f"----- log of instance {self.name} ({self.log}) -----")
        try:
            with open(self.log, errors="replace") as f:
                lines = f.readlines()
        except OSError as e:
            print(f"(no log: {e})")
            return
        if len(lines) > 300:
            print(f"... {len(lines) - 300} earlier lines left out ...")
        sys.stdout.write("".join(lines[-300:]))
        print(f"----- end of log of instance {self.name} -----")


def poll(what, observe, timeout, instances, interval=0.25):
    """Calls observe() until it returns (True, value); returns the value.

    observe() returns (done, what it saw); on timeout the failure shows the
    last thing seen. A live instance that exits fails at once.
    """
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        for i in instances:
            i.check_alive()
        done, seen = observe()
        if done:
            return seen
        if time.monotonic() >= deadline:
            raise Failure(f"{what}: not within {timeout} s; last seen: {seen}")
        time.sleep(interval)


# The page as a person sees it, read in one go: it rebuilds its table every
# second, so elements read one by one could come from different rounds.
SNAPSHOT_JS = """
const rows = [...document.querySelectorAll('#instances tr[data-instance]')];
return {
  updated: document.getElementById('updated').textContent,
  rows: rows.map(r => ({
    instance: r.dataset.instance,
    unreachable: r.querySelector('.unreachable') ? r.querySelector('.unreachable').textContent : null,
    tasks: [...r.querySelectorAll('span.task')].map(s => ({
      partition: Number(s.dataset.partition), state: s.dataset.state,
      css: s.className, bar: s.querySelector('progress') !== null}))
  }))
};
"""

ANSWER_JS = """
const a = document.getElementById('answer');
return {status: a.dataset.status === undefined ? null : a.dataset.status, text: a.textContent};
"""


def page_problems(snap, expect_instances, expect_standbys):
    """What keeps the page from showing the expected assignment (empty: it shows it)."""
    problems = []
    names = sorted(r["instance"] for r in snap["rows"])
    if names != sorted(expect_instances):
        problems.append(f"rows {names}, want {sorted(expect_instances)}")
    running, standby = {}, {}
    for r in snap["rows"]:
        if r["unreachable"]:
            problems.append(f"{r['instance']}: {r['unreachable']}")
        for t in r["tasks"]:
            if t["css"].split() != ["task", t["state"]]:
                problems.append(f"{r['instance']} p{t['partition']}: class {t['css']!r} for state {t['state']}")
            if (t["state"] == "restoring") != t["bar"]:
                problems.append(f"{r['instance']} p{t['partition']}: {t['state']} with progress bar {t['bar']}")
            if t["state"] in ("running", "standby"):
                into = running if t["state"] == "running" else standby
                into.setdefault(t["partition"], []).append(r["instance"])
            else:
                problems.append(f"{r['instance']} p{t['partition']} is {t['state']}")
    for p in range(PARTITIONS):
        if len(running.get(p, [])) != 1:
            problems.append(f"p{p} running on {running.get(p, [])}")
        want_standby = 1 if expect_standbys else 0
        if len(standby.get(p, [])) != want_standby:
            problems.append(f"p{p} standby on {standby.get(p, [])}")
        elif want_standby and standby[p] == running.get(p):
            problems.append(f"p{p} is running and standing by on the same instance {standby[p]}")
    extra = set(running) | set(standby)
    extra -= set(range(PARTITIONS))
    if extra:
        problems.append(f"partitions out of range: {sorted(extra)}")
    return problems, {p: owners[0] for p, owners in running.items() if len(owners) == 1}


def wait_for_page(driver, what, expect_instances, expect_standbys, timeout, instances):
    """Waits until the page shows the assignment; returns partition -> running instance."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    last = {}

    def shows_it(d):
        snap = d.execute_script(SNAPSHOT_JS)
        for i in instances:
            i.check_alive()
        problems, owners = page_problems(snap, expect_instances, expect_standbys)
        last["snap"], last["problems"] = snap, problems
        return owners if not problems else False

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.25).until(shows_it)
    except TimeoutException:
        raise Failure(f"{what}: the page did not show it within {timeout} s; "
                      f"still wrong: {last.get('problems')}; last table: {json.dumps(last.get('snap'))}") from None


def look_up(driver, object_id, timeout, instances):
    """Types the id into the form, submits it, and returns (status, body) as the page shows them.

    Submits again while the answer is a 503: right after a rebalance the
    gateway may briefly not know where the partition runs, and says so as a
    retriable error. Any other answer is returned as it is.
    """
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    deadline = time.monotonic() + timeout
    answers = []
    while True:
        # A blank answer first, so that the previous lookup's answer is not
        # taken for this one.
        driver.execute_script("const a = document.getElementById('answer');"
                              "a.textContent = ''; delete a.dataset.status;")
        box = driver.find_element(By.ID, "object")
        box.clear()
        box.send_keys(object_id)
        driver.find_element(By.CSS_SELECTOR, "#lookup button[type=submit]").click()

        def answered(d):
            for i in instances:
                i.check_alive()
            a = d.execute_script(ANSWER_JS)
            if a["text"].startswith("failed:"):
                return a
            return a if a["status"] is not None else False

        try:
            a = WebDriverWait(driver, max(1.0, deadline - time.monotonic()), poll_frequency=0.2).until(answered)
        except TimeoutException:
            raise Failure(f"lookup of {object_id}: no answer on the page within {timeout} s; "
                          f"earlier answers: {answers}") from None
        if a["status"] is None:
            raise Failure(f"lookup of {object_id}: the page says {a['text']!r}")
        status = int(a["status"])
        prefix = f"{status} "
        if not a["text"].startswith(prefix):
            raise Failure(f"lookup of {object_id}: data-status {status} but the text is {a['text']!r}")
        try:
            body = json.loads(a["text"][len(prefix):])
        except ValueError:
            raise Failure(f"lookup of {object_id}: the answer is not JSON: {a['text']!r}") from None
        answers.append((status, body))
        if status != 503 or time.monotonic() >= deadline:
            return status, body, answers
        time.sleep(0.5)


def make_driver(workdir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--user-data-dir={os.path.join(workdir, 'chromium-profile')}",
                # The page is on 127.0.0.1; nothing else should be reached.
                "--no-proxy-server", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--no-first-run", "--disable-extensions",
                "--window-size=1280,900"):
        options.add_argument(arg)
    # Given the driver's path, Selenium does not look for (or download) one.
    service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(workdir, "chromedriver.log"))
    return webdriver.Chrome(service=service, options=options)


def run(args, bootstrap, workdir, instances, state):
    suffix = f"{os.getpid()}-{int(time.time() * 1000)}"
    app = f"status-page-test-{suffix}"
    reports = f"status-page-reports-{suffix}"
    states = f"status-page-states-{suffix}"
    say(f"application {app} on {bootstrap}, files in {workdir}")

    common = ["--bootstrap", bootstrap, "--app", app, "--reports", reports, "--states", states,
              "--partitions", str(PARTITIONS), "--standbys", "1"]
    a = Instance("a", args.service, workdir, common)
    b = Instance("b", args.service, workdir, common)
    instances += [a, b]
    port_a, port_b = free_ports(2)
    a.start(port_a)
    b.start(port_b)
    say(f"started instance a on {a.url} (pid {a.process.pid}), b on {b.url} (pid {b.process.pid})")

    load = subprocess.run([args.load, "--bootstrap", bootstrap, "--reports", reports, "--count", str(REPORTS),
                           "--objects", str(OBJECTS), "--partitions", str(PARTITIONS)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if load.returncode != 0:
        raise Failure(f"the load program failed with code {load.returncode}: "
                      f"{load.stdout.decode(errors='replace')}")
    say(f"wrote {REPORTS} reports: {load.stdout.decode(errors='replace').strip()}")

    for i in (a, b):
        poll(f"GET {i.url}/health answers 200", lambda i=i: (lambda r: (r[0] == 200, r))(get(i.url + "/health")),
             STARTUP_S, instances)
    # obj-1 is among the objects of the (seeded, so always the same) reports.
    poll("GET /objects/obj-1 answers 200 on both instances",
         lambda: (lambda ra, rb: (ra[0] == 200 and rb[0] == 200, (ra, rb)))(
             get(a.url + "/objects/obj-1"), get(b.url + "/objects/obj-1")),
         STARTUP_S, instances)
    say("both instances healthy, obj-1 known")

    state["driver"] = driver = make_driver(workdir)
    driver.get(a.url + "/")
    if "shared state" not in driver.title:
        raise Failure(f"GET / of a: the title is {driver.title!r}")

    owners = wait_for_page(driver, "two instances, each partition running once and standing by once",
                           ["a", "b"], True, PAGE_S, instances)
    say(f"the page shows both instances; running: {owners}")

    status, body, _ = look_up(driver, "obj-1", LOOKUP_S, instances)
    if status != 200 or not isinstance(body, dict) or "state" not in body or body.get("id") != "obj-1":
        raise Failure(f"lookup of obj-1 through the page: {status} {body}")
    say(f"the page looked up obj-1: {body}")

    # An object of a partition that b runs: after b dies, a can only answer
    # for it from its own copy (the standby, or a restore).
    on_b = [p for p, owner in owners.items() if owner == "b"]
    if not on_b:
        raise Failure(f"b runs no partition: {owners}")
    moved = None
    for n in range(OBJECTS):
        st, obj = get(f"{a.url}/objects/obj-{n}")
        if st == 200 and obj.get("partition") in on_b:
            moved = obj
            break
    if moved is None:
        raise Failure(f"no object found in b's partitions {on_b}")
    say(f"{moved['id']} is in partition {moved['partition']}, which b runs: {moved}")

    b.kill()
    say("killed instance b (SIGKILL)")
    owners = wait_for_page(driver, "after b's death, a alone running all six partitions",
                           ["a"], False, FAILOVER_S, [a])
    say(f"the page shows the failover: running: {owners}")

    status, body, answers = look_up(driver, moved["id"], LOOKUP_S, [a])
    if status != 200 or not isinstance(body, dict) or "state" not in body:
        raise Failure(f"lookup of {moved['id']} after the failover: {status} {body} (answers: {answers})")
    if body.get("id") != moved["id"] or body["state"] != moved["state"]:
        raise Failure(f"lookup of {moved['id']} after the failover: {body}, but before it was {moved}")
    say(f"the page looked up {moved['id']} after the failover: {body}"
        + (f" (after {len(answers) - 1} retriable answers)" if len(answers) > 1 else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service", required=True, help="the shared_state_service executable")
    parser.add_argument("--load", required=True, help="the shared_state_load executable")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, state)")
    args = parser.parse_args()

    bootstrap = os.environ.get("STRATA_KAFKA_BOOTSTRAP")
    if not bootstrap:
        print("FAIL: STRATA_KAFKA_BOOTSTRAP is not set: start a broker with scripts/kafka-broker.sh start, "
              "then eval \"$(scripts/kafka-broker.sh env)\"", file=sys.stderr)
        return 2
    for what, path in (("--service", args.service), ("--load", args.load), ("Chromium", CHROMIUM),
                       ("ChromeDriver", CHROMEDRIVER)):
        if not os.access(path, os.X_OK):
            print(f"FAIL: {what} {path} is not an executable (see scripts/setup-python.sh)", file=sys.stderr)
            return 2
    try:
        import selenium  # noqa: F401
    except ImportError:
        print(f"FAIL: no Selenium for {sys.executable}: run scripts/setup-python.sh and use .cache/venv/bin/python",
              file=sys.stderr)
        return 2

    workdir = tempfile.mkdtemp(prefix="strata-status-page-")
    instances, state = [], {}
    failed = True
    try:
        run(args, bootstrap, workdir, instances, state)
        failed = False
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stdout, flush=True)
    except Exception:
        import traceback
        print("FAIL: the test itself broke:", flush=True)
        traceback.print_exc(file=sys.stdout)
    finally:
        driver = state.get("driver")
        if failed and driver is not None:
            try:
                print("----- the page's table -----")
                print(driver.execute_script("return document.body.innerText"))
            except Exception as e:  # a dead browser is no reason to skip the rest of the clean-up
                print(f"(could not read the page: {e})")
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass
        for i in instances:
            i.stop()
        if failed:
            for i in instances:
                i.print_log()
        if args.keep:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        return 1
    say("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
