#!/usr/bin/env python3
"""Markdown tables of medians from the raw JSON lines of scripts/bench-kafka.sh.

usage: table.py RAW.jsonl CONDITIONS.json
"""
import json
import statistics
import sys
from collections import defaultdict


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


def med(runs, case, field):
    xs = [r[field] for r in runs.get(case, []) if isinstance(r.get(field), (int, float))]
    return statistics.median(xs) if xs else None


def fmt(x, kind="rate"):
    if x is None:
        return "n/a"
    if kind == "rate":
        return f"{x / 1e3:,.0f}k" if x >= 1e4 else f"{x:,.0f}"
    if kind == "ratio":
        return f"{x:.2f}"
    if kind == "x":
        return f"{x:.2f}x"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:,.0f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    runs, failed = load(sys.argv[1])
    cond = json.load(open(sys.argv[2]))
    out = []
    p = out.append
    p(f"Generated {cond['date']} by `{cond['command']}` (commit {cond['commit']}).")
    p("")
    p(f"- Machine: {cond['nproc']} cores ({cond['cpu']}), {cond['mem']} memory, Linux {cond['kernel']}; "
      f"load average (1/5/15 min) {cond['load_before']} before, {cond['load_after']} after; "
      "shared with other work, so only ratios measured side by side mean much.")
    p(f"- Workload: {cond['updates']} updates over {cond['keys']} keys (`k<id>`), uniform or Zipf(0.99), "
      f"{cond['value_bytes']} B values; cache off or {cond['cache_bytes']}; "
      f"flush (commit) every {cond['flush_ms']} ms of wall time; "
      f"medians of {cond['reps']} repetitions, strata and Kafka Streams alternating.")
    p(f"- Broker: Apache Kafka {cond['kafka']} single node (KRaft) on the same machine, heap {cond['broker_heap']}, "
      f"JVM {cond['broker_jvm']}; topics 1 partition, replication 1, compacted. librdkafka {cond['librdkafka']}.")
    prod = next((r["producer_settings"] for r in runs.get("ceiling/produce/uniform", [])), None)
    if prod:
        p("- strata's changelog producer and the producer ceiling: "
          + ", ".join(f"`{k}={v}`" for k, v in sorted(prod.items())) + ".")
    if failed:
        p("- Failed runs (left out of the medians): "
          + ", ".join(f"{c} x{n}" for c, n in sorted(failed.items())) + ".")
    p("")

    # ---- writes
    p("### Logged writes to Kafka")
    p("")
    p("updates/s (higher is better). Ceiling: librdkafka producer loop, same records and settings, no flush "
      "until the end (and, in brackets, with a flush every commit interval). Kafka Streams: first to last "
      "record processed (`steady_updates_per_s`, its most favourable figure: no start-up, no final flush); "
      "strata includes its final flush.")
    p("")
    p("| dist | cache | strata | ceiling (flushing) | strata / ceiling | KS in-memory | KS RocksDB "
      "| strata / KS mem | strata / KS rocks | CPU s per M: strata / KS mem / KS rocks |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dist in ("uniform", "zipf"):
        for c, label in (("c0", "off"), ("cache", cond["cache_bytes"])):
            s = med(runs, f"write/strata-kafka/{dist}/{c}", "updates_per_s")
            ceil = med(runs, f"ceiling/produce/{dist}", "records_per_s")
            ceil_f = med(runs, f"ceiling/produce-flush/{dist}", "records_per_s")
            km = med(runs, f"write/ks-inmemory/{dist}/{c}", "steady_updates_per_s")
            kr = med(runs, f"write/ks-rocksdb/{dist}/{c}", "steady_updates_per_s")
            cpu = [med(runs, f"write/{w}/{dist}/{c}", "cpu_s_per_million")
                   for w in ("strata-kafka", "ks-inmemory", "ks-rocksdb")]
            p(f"| {dist} | {label} | {fmt(s)} | {fmt(ceil)} ({fmt(ceil_f)}) | {fmt(ratio(s, ceil), 'ratio')} "
              f"| {fmt(km)} | {fmt(kr)} | {fmt(ratio(s, km), 'x')} | {fmt(ratio(s, kr), 'x')} "
              f"| {' / '.join(fmt(x, 'num') for x in cpu)} |")
    p("")
    p("### Coalescing: changelog records and payload bytes per update")
    p("")
    p("| dist | cache | strata records | KS mem records | KS rocks records | strata bytes | KS mem bytes | KS rocks bytes |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dist in ("uniform", "zipf"):
        for c, label in (("c0", "off"), ("cache", cond["cache_bytes"])):
            row = [med(runs, f"write/strata-kafka/{dist}/{c}", "changelog_records_per_update"),
                   med(runs, f"write/ks-inmemory/{dist}/{c}", "changelog_records_per_update"),
                   med(runs, f"write/ks-rocksdb/{dist}/{c}", "changelog_records_per_update"),
                   med(runs, f"write/strata-kafka/{dist}/{c}", "changelog_payload_bytes_per_update"),
                   med(runs, f"write/ks-inmemory/{dist}/{c}", "changelog_payload_bytes_per_update"),
                   med(runs, f"write/ks-rocksdb/{dist}/{c}", "changelog_payload_bytes_per_update")]
            p(f"| {dist} | {label} | " + " | ".join(fmt(x, "num") if i >= 3 else (f"{x:.3f}" if x is not None else "n/a")
                                                   for i, x in enumerate(row)) + " |")
    p("")
    p(f"With a flush every {cond['flush_ms']} ms of wall time, the faster system puts more updates into each "
      "flush and so coalesces more; the rows below take throughput out: cache on, no flush (commit) until "
      "the end (Kafka Streams `commit.interval.ms` = 1 h), so only the cache's size and eviction decide.")
    p("")
    p("| dist | cache | strata records | KS in-memory records | strata bytes | KS in-memory bytes |")
    p("| --- | --- | --- | --- | --- | --- |")
    for dist in ("uniform", "zipf"):
        row = [med(runs, f"coalesce/{w}/{dist}", f) for f in
               ("changelog_records_per_update",) for w in ("strata-kafka", "ks-inmemory")]
        row += [med(runs, f"coalesce/{w}/{dist}", "changelog_payload_bytes_per_update")
                for w in ("strata-kafka", "ks-inmemory")]
        p(f"| {dist} | {cond['cache_bytes']} | " + " | ".join(
            (f"{x:.3f}" if i < 2 else fmt(x, "num")) if x is not None else "n/a" for i, x in enumerate(row)) + " |")
    p("")
    p("### Logged writes to the file log")
    p("")
    p("Same workload into `file_log` (write(2) + fdatasync per flush) in a directory on the repository's "
      "filesystem; ceiling: sequential write(2) of 1 GiB in 8 MiB chunks + fdatasync there.")
    p("")
    disk_w = med(runs, "disk", "write_mb_per_s")
    disk_r = med(runs, "disk", "read_mb_per_s")
    p("| dist | cache | updates/s | payload MB/s | disk write MB/s | strata / disk | CPU s per M |")
    p("| --- | --- | --- | --- | --- | --- | --- |")
    for dist in ("uniform", "zipf"):
        for c, label in (("c0", "off"), ("cache", cond["cache_bytes"])):
            case = f"write/strata-file/{dist}/{c}"
            ups = med(runs, case, "updates_per_s")
            bpu = med(runs, case, "changelog_payload_bytes_per_update")
            mbs = ups * bpu / 1e6 if ups is not None and bpu is not None else None
            p(f"| {dist} | {label} | {fmt(ups)} | {fmt(mbs, 'num')} | {fmt(disk_w, 'num')} "
              f"| {fmt(ratio(mbs, disk_w), 'ratio')} | {fmt(med(runs, case, 'cpu_s_per_million'), 'num')} |")
    p("")

    # ---- restore
    p("### Restore into a fresh store")
    p("")
    p("records/s (MB/s of key + value payload), and time until ready. `full`: the changelog the uncached "
      f"uniform Kafka run wrote ({cond['updates']} records over {cond['keys']} keys); `compacted`: one record "
      f"per key ({cond['keys']} records), what compaction leaves of it. Ceiling: librdkafka consumer loop "
      "(read_committed, same fetch settings) from the first offset to the end. Kafka Streams restores the "
      "very same topic (`restore --changelog-topic`); its rate is timed by a StateRestoreListener, its "
      "ready time includes joining the group.")
    p("")
    p("| changelog | strata | strata ready s | ceiling | strata / ceiling | KS in-memory (ready s) "
      "| KS RocksDB (ready s) | strata / KS mem | strata / KS rocks |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for which, label in (("full", "full"), ("compact", "compacted")):
        s = med(runs, f"restore/strata-kafka/{which}", "records_per_s")
        smb = med(runs, f"restore/strata-kafka/{which}", "mb_per_s")
        sready = med(runs, f"restore/strata-kafka/{which}", "ready_s")
        ceil = med(runs, f"restore/ceiling/{which}", "records_per_s")
        cmb = med(runs, f"restore/ceiling/{which}", "mb_per_s")
        km = med(runs, f"restore/ks-inmemory/{which}", "records_per_s")
        kmr = med(runs, f"restore/ks-inmemory/{which}", "ready_s")
        kr = med(runs, f"restore/ks-rocksdb/{which}", "records_per_s")
        krr = med(runs, f"restore/ks-rocksdb/{which}", "ready_s")
        p(f"| Kafka, {label} | {fmt(s)} ({fmt(smb, 'num')} MB/s) | {fmt(sready, 'num')} | {fmt(ceil)} "
          f"({fmt(cmb, 'num')} MB/s) | {fmt(ratio(s, ceil), 'ratio')} | {fmt(km)} ({fmt(kmr, 'num')}) "
          f"| {fmt(kr)} ({fmt(krr, 'num')}) | {fmt(ratio(s, km), 'x')} | {fmt(ratio(s, kr), 'x')} |")
    fs = med(runs, "restore/strata-file/full", "records_per_s")
    fmb = med(runs, "restore/strata-file/full", "mb_per_s")
    fready = med(runs, "restore/strata-file/full", "ready_s")
    p(f"| file log, full | {fmt(fs)} ({fmt(fmb, 'num')} MB/s) | {fmt(fready, 'num')} "
      f"| disk read {fmt(disk_r, 'num')} MB/s | {fmt(ratio(fmb, disk_r), 'ratio')} (MB/s) | | | | |")
    p("")

    # ---- the RocksDB store
    p("### The RocksDB store against Kafka Streams' RocksDB store")
    p("")
    p("strata's `rocksdb_store<string, string>` (its pending updates committed to RocksDB with the changelog "
      "offset and an fsync at every flush) against Kafka Streams' persistent RocksDB store, on the same "
      "workload and broker; writes logged to Kafka in updates/s, restores into a fresh store in records/s.")
    p("")
    p("| what | dist | cache | strata RocksDB | KS RocksDB | strata / KS | strata RocksDB / strata in-memory |")
    p("| --- | --- | --- | --- | --- | --- | --- |")
    for dist in ("uniform", "zipf"):
        for c, label in (("c0", "off"), ("cache", cond["cache_bytes"])):
            sr = med(runs, f"write/strata-rocksdb/{dist}/{c}", "updates_per_s")
            kr = med(runs, f"write/ks-rocksdb/{dist}/{c}", "steady_updates_per_s")
            sm = med(runs, f"write/strata-kafka/{dist}/{c}", "updates_per_s")
            p(f"| writes | {dist} | {label} | {fmt(sr)} | {fmt(kr)} | {fmt(ratio(sr, kr), 'x')} "
              f"| {fmt(ratio(sr, sm), 'ratio')} |")
    for which, label in (("full", "full"), ("compact", "compacted")):
        sr = med(runs, f"restore/strata-rocksdb/{which}", "records_per_s")
        kr = med(runs, f"restore/ks-rocksdb/{which}", "records_per_s")
        sm = med(runs, f"restore/strata-kafka/{which}", "records_per_s")
        p(f"| restore, {label} | | | {fmt(sr)} | {fmt(kr)} | {fmt(ratio(sr, kr), 'x')} | {fmt(ratio(sr, sm), 'ratio')} |")
    p("")

    # ---- goals
    p("### Goals")
    p("")

    def goal(name, value, target):
        if value is None:
            p(f"- {name}: not measured")
        else:
            p(f"- {name}: {value:.2f} (goal >= {target}): **{'met' if value >= target else 'missed'}**")

    for dist in ("uniform", "zipf"):
        s = med(runs, f"write/strata-kafka/{dist}/c0", "updates_per_s")
        goal(f"logged writes to Kafka / producer ceiling, {dist}, cache off",
             ratio(s, med(runs, f"ceiling/produce/{dist}", "records_per_s")), 0.8)
        for store, name in (("inmemory", "in-memory"), ("rocksdb", "RocksDB")):
            for c in ("c0", "cache"):
                goal(f"logged writes to Kafka / Kafka Streams {name}, {dist}, cache {'off' if c == 'c0' else 'on'}",
                     ratio(med(runs, f"write/strata-kafka/{dist}/{c}", "updates_per_s"),
                           med(runs, f"write/ks-{store}/{dist}/{c}", "steady_updates_per_s")), 3)
    for dist in ("uniform", "zipf"):
        for c in ("c0", "cache"):
            goal(f"RocksDB store: logged writes to Kafka / Kafka Streams RocksDB, {dist}, cache {'off' if c == 'c0' else 'on'}",
                 ratio(med(runs, f"write/strata-rocksdb/{dist}/{c}", "updates_per_s"),
                       med(runs, f"write/ks-rocksdb/{dist}/{c}", "steady_updates_per_s")), 3)
    for which in ("full", "compact"):
        s = med(runs, f"restore/strata-kafka/{which}", "records_per_s")
        goal(f"restore ({which}) / consumer ceiling", ratio(s, med(runs, f"restore/ceiling/{which}", "records_per_s")), 0.8)
        for store in ("inmemory", "rocksdb"):
            goal(f"restore ({which}) / Kafka Streams {store}", ratio(s, med(runs, f"restore/ks-{store}/{which}", "records_per_s")), 3)
    for dist in ("uniform", "zipf"):
        # At least as good: strata writes no more records per update than Kafka Streams.
        s = med(runs, f"coalesce/strata-kafka/{dist}", "changelog_records_per_update")
        k = med(runs, f"coalesce/ks-inmemory/{dist}", "changelog_records_per_update")
        goal(f"coalescing, {dist}, no commit until the end: Kafka Streams in-memory records per update / strata's",
             ratio(k, s), 1)
        s = med(runs, f"write/strata-kafka/{dist}/cache", "changelog_records_per_update")
        for store in ("inmemory", "rocksdb"):
            k = med(runs, f"write/ks-{store}/{dist}/cache", "changelog_records_per_update")
            goal(f"coalescing, {dist}, commit every {cond['flush_ms']} ms: Kafka Streams {store} records per "
                 "update / strata's", ratio(k, s), 1)
    print("\n".join(out))


if __name__ == "__main__":
    main()
