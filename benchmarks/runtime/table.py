#!/usr/bin/env python3
"""Markdown tables of medians from the raw JSON lines of scripts/bench-runtime.sh.

usage: table.py RAW.jsonl CONDITIONS.json

Throughput: medians over the repetitions. Failover: medians over every task
that started on a survivor after the kill, pooled over the repetitions.
"""
import json
import statistics
import sys
from collections import defaultdict

SYSTEMS = (("strata", "strata"), ("kafka-streams", "Kafka Streams"))
GUARANTEES = (("at_least_once", "at-least-once"), ("exactly_once", "exactly-once"))
PHASES = (("detection_ms", "detection"), ("assignment_ms", "assignment"), ("restore_ms", "restore"),
          ("first_record_ms", "first record"))


def load(path):
    runs = defaultdict(list)
    failed = defaultdict(int)
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if r.get("failed"):
            failed[r["case"]] += 1
        else:
            runs[r["case"]].append(r["result"])
    return runs, failed


def median(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def fmt(x, kind="num"):
    if x is None:
        return "n/a"
    if kind == "rate":
        return f"{x / 1e3:,.1f}k" if x >= 1e4 else f"{x:,.0f}"
    if kind == "x":
        return f"{x:.2f}x"
    if kind == "ratio":
        return f"{x:.2f}"
    if kind == "ms":
        return f"{x:,.0f}"
    if kind == "int":
        return f"{x:,.0f}"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:,.0f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def output_problems(rs, exactly_once):
    """What is wrong with the output of these runs, if anything."""
    bad = []
    for r in rs:
        if r.get("output_missing", 0) or r.get("output_foreign", 0) or r.get("output_bad_values", 0):
            bad.append(f"**LOST/WRONG DATA**: {r.get('output_missing', 0)} missing, {r.get('output_foreign', 0)} "
                       f"foreign, {r.get('output_bad_values', 0)} undecodable")
        if not r.get("output_stable", True):
            bad.append("output left with an open transaction")
        if exactly_once and (r.get("output_duplicates", 0) or r.get("output_wrong_values", 0)):
            bad.append(f"**exactly-once broken**: {r.get('output_duplicates', 0)} duplicates, "
                       f"{r.get('output_wrong_values', 0)} wrong values")
    return sorted(set(bad))


def main():
    runs, failed = load(sys.argv[1])
    cond = json.load(open(sys.argv[2]))
    out = []
    p = out.append
    p(f"Generated {cond['date']} by `{cond['command']}` (commit {cond['commit']}).")
    p("")
    p(f"- Machine: {cond['nproc']} cores ({cond['cpu']}), {cond['mem']} memory, Linux {cond['kernel']}; "
      f"load average (1/5/15 min) {cond['load_before']} before, {cond['load_after']} after; shared with other "
      "work, so only ratios measured side by side mean much.")
    p(f"- Broker: Apache Kafka {cond['kafka']} single node (KRaft) on the same machine, heap {cond['broker_heap']}, "
      f"JVM {cond['broker_jvm']}; input and output topics 6 partitions, replication 1. librdkafka "
      f"{cond['librdkafka']}; Kafka Streams {cond['kafka']} on {cond['java']}, heap {cond['peer_heap']}.")
    p(f"- Topology on both sides: per-key count and sum of Long amounts over {cond['keys']} keys (`k<i % keys>`), "
      "in-memory store logged to a compacted changelog, 10 MiB record cache (strata: `cached()` default; "
      "Kafka Streams: `statestore.cache.max.bytes` default), one 24-byte output record per input record; "
      f"session timeout {cond['session_ms']} ms; commit every {cond['commit_ms_alos']} ms at-least-once, "
      f"{cond['commit_ms_eos']} ms exactly-once (Kafka Streams `exactly_once_v2`), on both sides.")
    p(f"- Medians of {cond['reps']} repetitions, strata and Kafka Streams alternating (the order flips every "
      "repetition); every run has its own application id, topics and state directories.")
    if failed:
        p("- Failed runs (left out of the medians): "
          + ", ".join(f"{c} x{n}" for c, n in sorted(failed.items())) + ".")
    p("")

    # ---- throughput
    p("### Throughput: one instance, prefilled input")
    p("")
    p(f"{cond['records']} records prefilled, then one instance started; time from the process's start until the "
      "group's committed offsets reach the end of every input partition (so it includes start-up, joining the "
      "group and the last commit). CPU: user + system time of the process (all threads, `/proc/<pid>/stat`), "
      "read before SIGTERM. Start-up: process start to the first record processed; steady: records/s from the first "
      "record processed to the end (start-up left out, for information).")
    p("")
    p("| guarantee | strata records/s | KS records/s | strata / KS | CPU s per M: strata / KS | KS / strata CPU "
      "| start-up s: strata / KS | steady: strata / KS | peak RSS MiB: strata / KS | output |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    tp = {}
    for g, label in GUARANTEES:
        s = runs.get(f"throughput/strata/{g}", [])
        k = runs.get(f"throughput/kafka-streams/{g}", [])
        sr, kr = median([r.get("records_per_s") for r in s]), median([r.get("records_per_s") for r in k])
        sc, kc = median([r.get("cpu_s_per_million") for r in s]), median([r.get("cpu_s_per_million") for r in k])
        su, ku = median([r.get("startup_s") for r in s]), median([r.get("startup_s") for r in k])
        sm, km = median([r.get("peak_rss_mib") for r in s]), median([r.get("peak_rss_mib") for r in k])
        ss, ks = median([r.get("steady_records_per_s") for r in s]), median([r.get("steady_records_per_s") for r in k])
        probs = output_problems(s + k, g == "exactly_once")
        dups = sum(r.get("output_duplicates", 0) for r in s + k)
        check = "; ".join(probs) if probs else (f"complete, {dups} duplicates" if s or k else "n/a")
        tp[g] = ratio(sr, kr)
        p(f"| {label} | {fmt(sr, 'rate')} | {fmt(kr, 'rate')} | {fmt(ratio(sr, kr), 'x')} | {fmt(sc)} / {fmt(kc)} "
          f"| {fmt(ratio(kc, sc), 'x')} | {fmt(su)} / {fmt(ku)} | {fmt(ss, 'rate')} / {fmt(ks, 'rate')} "
          f"({fmt(ratio(ss, ks), 'x')}) | {fmt(sm, 'int')} / {fmt(km, 'int')} | {check} |")
    c = runs.get("throughput/ceiling/at_least_once", [])
    if c:
        cr = median([r.get("records_per_s") for r in c])
        cc = median([r.get("cpu_s_per_million") for r in c])
        cs = median([r.get("steady_records_per_s") for r in c])
        s = runs.get("throughput/strata/at_least_once", [])
        k = runs.get("throughput/kafka-streams/at_least_once", [])
        sr, kr = median([r.get("records_per_s") for r in s]), median([r.get("records_per_s") for r in k])
        ss = median([r.get("steady_records_per_s") for r in s])
        p("")
        p("The ceiling of this topology on this machine and broker: `benchmarks/runtime/ceiling_app.cpp`, the same "
          "input, totals and output records from a plain librdkafka program with the totals in a "
          "`std::unordered_map` (no changelog, no cache, no coordination; at-least-once commits).")
        p("")
        p("| | ceiling | strata / ceiling | Kafka Streams / ceiling | 3x Kafka Streams / ceiling |")
        p("| --- | --- | --- | --- | --- |")
        p(f"| records/s | {fmt(cr, 'rate')} | {fmt(ratio(sr, cr), 'ratio')} | {fmt(ratio(kr, cr), 'ratio')} "
          f"| {fmt(ratio(3 * kr, cr) if kr else None, 'ratio')} |")
        p(f"| steady records/s | {fmt(cs, 'rate')} | {fmt(ratio(ss, cs), 'ratio')} | | |")
        p(f"| CPU s per M | {fmt(cc)} | | | |")
    p("")

    # ---- failover
    p("### Failover: three instances, one killed")
    p("")
    p(f"Three instances, input written at {cond['rate']} records/s for {cond['duration_s']} s; after "
      f"{cond['kill_after_s']} s (and once no task has started for 2 s) the instance owning the most tasks is "
      "killed with SIGKILL. Every task that then starts on a survivor is measured (the killed instance's, and "
      "any other the group moved or restarted: the `tasks` column says how many of each); milliseconds, "
      "medians over those tasks and the repetitions. Phases (see the definitions above the table): "
      "detection = kill to noticed, assignment = noticed to assigned, restore = assigned to restored, first "
      "record = restored to the first record processed; total = kill to first record. Kafka Streams has no "
      "event at assignment: its assigned is the restore listener's start (see the definitions).")
    p("")
    p("| standbys | system | tasks (victim's + others) | detection | assignment | restore | first record "
      "| total | total, victim's tasks | records restored | output: duplicates (wrong values) |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    fo = {}
    for sb in cond["standbys"]:
        for sys_key, sys_label in SYSTEMS:
            rs = runs.get(f"failover/{sys_key}/standbys{sb}", [])
            tasks = [t for r in rs for t in r.get("moved", [])]
            victims = [t for t in tasks if t.get("from_victim")]
            med = {k: median([t.get(k) for t in tasks]) for k, _ in PHASES}
            med["total_ms"] = median([t.get("total_ms") for t in tasks])
            med["victim_total_ms"] = median([t.get("total_ms") for t in victims])
            # Without a line for the moment strata noticed, detection runs until
            # the assignment: the two are only comparable summed.
            med["no_notice"] = bool(tasks) and all(not t.get("noticed_from", "").startswith(("rebalance", "state", "started"))
                                                   for t in tasks)
            med["detect_assign_ms"] = median([t.get("detection_ms", 0) + t.get("assignment_ms", 0) for t in tasks])
            fo[(sb, sys_key)] = med
            restored = median([t.get("restored_records") for t in tasks])
            probs = output_problems(rs, False)
            dups = "/".join(str(r.get("output_duplicates", 0)) for r in rs) or "n/a"
            wrong = "/".join(str(r.get("output_wrong_values", 0)) for r in rs) or "n/a"
            check = "; ".join(probs) if probs else f"{dups} ({wrong})"
            nr = [r["not_restarted"] for r in rs if r.get("not_restarted")]
            if nr:
                check += f"; victim's tasks never restarted: {', '.join(nr)}"
            detection = fmt(med["detection_ms"], "ms")
            assignment = fmt(med["assignment_ms"], "ms")
            if med["no_notice"]:
                detection += " (until assigned: no rebalance line)"
                assignment = "(in detection)"
            p(f"| {sb} | {sys_label} | {len(tasks)} ({len(victims)} + {len(tasks) - len(victims)}) | {detection} "
              f"| {assignment} | {fmt(med['restore_ms'], 'ms')} | {fmt(med['first_record_ms'], 'ms')} "
              f"| {fmt(med['total_ms'], 'ms')} | {fmt(med['victim_total_ms'], 'ms')} | {fmt(restored, 'int')} "
              f"| {check} |")
        s, k = fo[(sb, "strata")], fo[(sb, "kafka-streams")]
        if s["total_ms"] is None or k["total_ms"] is None:
            continue
        if s["no_notice"] or k["no_notice"]:
            da = f"{fmt(ratio(s['detect_assign_ms'], k['detect_assign_ms']), 'ratio')} (detection + assignment)"
            cells = [da, ""]
        else:
            cells = [fmt(ratio(s[key], k[key]), "ratio") for key in ("detection_ms", "assignment_ms")]
        cells += [fmt(ratio(s[key], k[key]), "ratio") for key in ("restore_ms", "first_record_ms", "total_ms",
                                                                  "victim_total_ms")]
        p(f"| {sb} | strata / KS (below 1: strata faster) | | " + " | ".join(cells) + " | | |")
    p("")
    p("Output: duplicates per run (records for an input offset already in the output: at-least-once redoes the "
      "work since the last commit) and, in brackets, records whose (count, sum) differ from an uninterrupted "
      "run's (at-least-once may apply an input twice to the state too). Every input offset of every partition "
      "was found in the output unless the column says otherwise.")
    p("")

    # ---- goals
    p("### Goals")
    p("")

    def goal_ratio(name, value, target):
        if value is None:
            p(f"- {name}: not measured")
        else:
            p(f"- {name}: {value:.2f}x (goal >= {target}x): **{'met' if value >= target else 'missed'}**")

    for g, label in GUARANTEES:
        goal_ratio(f"throughput, {label}, strata / Kafka Streams", tp.get(g), 3)
    for sb in cond["standbys"]:
        s, k = fo.get((sb, "strata")), fo.get((sb, "kafka-streams"))
        if not s or not k or s["total_ms"] is None or k["total_ms"] is None:
            p(f"- failover, standbys {sb}: not measured")
            continue
        phases = list(PHASES)
        if s["no_notice"] or k["no_notice"]:
            phases = [("detect_assign_ms", "detection + assignment")] + [x for x in PHASES[2:]]
        phases.append(("total_ms", "total"))
        for key, label in phases:
            a, b = s[key], k[key]
            if a is None or b is None:
                p(f"- failover, standbys {sb}, {label}: not measured")
            else:
                verdict = "met" if a < b else "missed"
                p(f"- failover, standbys {sb}, {label}: strata {a:,.0f} ms, Kafka Streams {b:,.0f} ms "
                  f"(goal: strata faster): **{verdict}**")
    print("\n".join(out))


if __name__ == "__main__":
    main()
