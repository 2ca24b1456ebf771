#!/usr/bin/env python3
"""Tables and plots of strata's microbenchmarks.

    plot.py RESULTS_DIR OUT_DIR

Reads the Google Benchmark JSON files that scripts/bench.sh writes into
RESULTS_DIR (run with repetitions, aggregates only) and uses the median of
every benchmark. Writes RESULTS_DIR/tables.md (the tables of
docs/benchmarks.md) and OUT_DIR/*.png.

Benchmark names are `<group>/<key>:<value>/...`; the parts with a colon are
the benchmark's parameters.
"""

import collections
import json
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(results):
    """{group: [params dict with the median's fields]}"""
    out = collections.defaultdict(list)
    for path in sorted(pathlib.Path(results).glob("*.json")):
        data = json.loads(path.read_text())
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"])
            parts = name.split("/")
            p = {"group": parts[0], "name": name}
            for part in parts[1:]:
                if ":" in part:
                    k, v = part.split(":", 1)
                    p[k] = v
            p.update({k: v for k, v in b.items() if isinstance(v, (int, float))})
            p["time_unit"] = b.get("time_unit", "ns")
            out[p["group"]].append(p)
    return out


def fmt(x, digits=3):
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def save(fig, path):
    """Writes a figure as PNG (same size and resolution for every plot) and frees it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "–"


# ---- store operations

RAW_OF = {"hashed": "std_unordered_map", "ordered": "std_map",
          "std_unordered_map": "std_unordered_map", "boost_unordered_map": "std_unordered_map",
          "std_map": "std_map"}
STORE_ORDER = ["std_unordered_map", "boost_unordered_map", "hashed_bare", "hashed_metered",
               "hashed_metered_untimed", "hashed_logged", "hashed_logged_cached", "hashed_full_stack",
               "std_map", "ordered_bare", "ordered_metered", "ordered_logged", "ordered_logged_cached",
               "ordered_full_stack"]


def store_ops_tables(rows):
    lines = []
    by = {(r["op"], r["store"], r["value"], r["dist"], int(r["keys"])): r
          for r in rows if "op" in r and "store" in r}
    configs = sorted({(int(k[4]), int(k[2]), k[3]) for k in by}, key=lambda c: (c[0], c[1], c[2] != "uniform"))
    for keys, value, dist in configs:
        lines.append(f"\n#### {keys:,} keys, {value} B values, {dist} keys\n")
        lines.append("| store | put ns/op | p50 | p99 | put vs raw | put vs bare | put p50 vs bare "
                     "| get ns/op | p50 | p99 | get vs raw | get vs bare | get p50 vs bare |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for store in STORE_ORDER:
            cells = [f"`{store}`"]
            present = False
            for op in ("put", "get"):
                r = by.get((op, store, str(value), dist, keys))
                if not r:
                    cells += ["–"] * 6
                    continue
                present = True
                family = store.split("_")[0] if store.startswith(("hashed", "ordered")) else store
                raw = by.get((op, RAW_OF[family], str(value), dist, keys))
                bare = by.get((op, family + "_bare", str(value), dist, keys)) if family in ("hashed", "ordered") else None
                cells += [fmt(r.get("ns_per_op")), fmt(r.get("p50_ns")), fmt(r.get("p99_ns")),
                          ratio(r.get("ns_per_op"), raw and raw.get("ns_per_op")) if store != RAW_OF[family] else "1",
                          ratio(r.get("ns_per_op"), bare and bare.get("ns_per_op")) if bare else "–",
                          ratio(r.get("p50_ns"), bare and bare.get("p50_ns")) if bare else "–"]
            if present:
                lines.append("| " + " | ".join(cells) + " |")
    clock = [r for r in rows if r["name"].startswith("store_ops/steady_clock_now")]
    if clock:
        lines.append(f"\n`steady_clock::now()`: {fmt(clock[0]['real_time'])} ns per call "
                     "(the metered layer reads it twice per timed operation, one in 128 by default).")
    return lines


# The performance issue's goals: each stack against the bare store per operation, at the median.
STACK_GOALS = [("full_stack", "logged \\| cached \\| metered", 1.5), ("logged", "logged", 1.3),
               ("metered", "metered", 1.1)]


def store_ops_goals(rows):
    """Each stack against the bare store, per family, op, key distribution and
    key count (8 B values), judged at the median (p50) of the batches."""
    by = {(r["op"], r["store"], r["value"], r["dist"], int(r["keys"])): r
          for r in rows if "op" in r and "store" in r}
    if not by:
        return []
    lines = ["\n#### Each layer against the bare store (8 B values; goals at the median: full stack within 1.5x, "
             "logged within 1.3x, metered within 1.1x)\n",
             "| store | keys | op | key distribution | bare p50 ns | stack | stack p50 ns | p50 ratio | mean ratio | goal |",
             "|---|---:|---|---|---:|---|---:|---:|---:|---|"]
    met = missed = 0
    for family in ("hashed", "ordered"):
        for keys in sorted({k[4] for k in by}):
            for dist in ("uniform", "zipf"):
                for op in ("put", "get"):
                    bare = by.get((op, family + "_bare", "8", dist, keys))
                    if not bare:
                        continue
                    for stack, label, goal in STACK_GOALS:
                        r = by.get((op, f"{family}_{stack}", "8", dist, keys))
                        if not r:
                            continue
                        p50 = r["p50_ns"] / bare["p50_ns"]
                        mean = r["ns_per_op"] / bare["ns_per_op"]
                        ok = p50 <= goal
                        met, missed = met + ok, missed + (not ok)
                        store = {"hashed": "hash_map_store", "ordered": "ordered_map_store"}[family]
                        lines.append(f"| `{store}` | {keys:,} | {op} | {dist} | {fmt(bare['p50_ns'])} | {label} | "
                                     f"{fmt(r['p50_ns'])} | {p50:.2f}x | {mean:.2f}x | "
                                     f"{'met' if ok else '**missed**'} (≤ {goal}x) |")
    lines.append(f"\n{met} of {met + missed} met.")
    return lines


def store_ops_plots(rows, out):
    ops = [r for r in rows if "op" in r and "store" in r]
    # Throughput against key count: 8 B values, uniform and Zipf, stores measured at every key count.
    key_counts = sorted({int(r["keys"]) for r in ops})
    if len(key_counts) > 1:
        fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
        for i, op in enumerate(("put", "get")):
            for j, dist in enumerate(("uniform", "zipf")):
                ax = axes[i][j]
                for store in STORE_ORDER:
                    pts = sorted((int(r["keys"]), 1e3 / r["ns_per_op"]) for r in ops
                                 if r["op"] == op and r["store"] == store and r["value"] == "8"
                                 and r["dist"] == dist and r.get("ns_per_op"))
                    if len(pts) == len(key_counts):
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=store)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{op}, 8 B values, {dist} keys")
                ax.set_xlabel("keys in the store")
                ax.set_ylabel("M operations/s (median)")
                ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize=7)
        save(fig, out / "store_ops_vs_keys.png")
    # Throughput against value size, at the smallest key count.
    keys = key_counts[0] if key_counts else None
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    for i, op in enumerate(("put", "get")):
        for j, dist in enumerate(("uniform", "zipf")):
            ax = axes[i][j]
            stores = [s for s in STORE_ORDER if any(r["store"] == s and int(r["keys"]) == keys for r in ops)]
            width = 0.4
            for k, value in enumerate(("8", "100")):
                ys = []
                for s in stores:
                    r = next((r for r in ops if r["op"] == op and r["store"] == s and r["value"] == value
                              and r["dist"] == dist and int(r["keys"]) == keys), None)
                    ys.append(1e3 / r["ns_per_op"] if r and r.get("ns_per_op") else 0)
                ax.bar([x + (k - 0.5) * width for x in range(len(stores))], ys, width, label=f"{value} B values")
            ax.set_xticks(range(len(stores)))
            ax.set_xticklabels(stores, rotation=60, ha="right", fontsize=7)
            ax.set_yscale("log")
            ax.set_ylabel("M operations/s (median)")
            ax.set_title(f"{op}, {keys:,} keys, {dist} keys")
            ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    save(fig, out / "store_ops_vs_value_size.png")


# ---- serde and codec

def serde_tables(groups):
    lines = []
    serde = groups.get("serde", [])
    if serde:
        lines.append("\n| type | encoded bytes | encode ns | decode ns |")
        lines.append("|---|---:|---:|---:|")
        for t in ("u64", "string100", "hana_struct4", "vector_u64_16"):
            e = next((r for r in serde if r.get("type") == t and r.get("op") == "encode"), None)
            d = next((r for r in serde if r.get("type") == t and r.get("op") == "decode"), None)
            lines.append(f"| `{t}` | {fmt(e and e.get('encoded_bytes'))} | {fmt(e and e['real_time'])} | {fmt(d and d['real_time'])} |")
    codec = groups.get("kv_codec", [])
    if codec:
        lines.append("\n| kv_codec<u64, V> | V = u64 (8 B) ns | V = string (100 B) ns |")
        lines.append("|---|---:|---:|")
        for op in ("write_key", "write_value", "restore"):
            a = next((r for r in codec if r.get("op") == op and r.get("value") == "8"), None)
            b = next((r for r in codec if r.get("op") == op and r.get("value") == "100"), None)
            lines.append(f"| `{op}` | {fmt(a and a['real_time'])} | {fmt(b and b['real_time'])} |")
    return lines


# ---- cache coalescing

def cache_tables(rows):
    lines = ["\n| keys | flush every | cache | records/update | dirty evictions/update | M updates/s | vs no cache |",
             "|---|---:|---|---:|---:|---:|---:|"]
    by = {(r["dist"], int(r["flush_every"]), r["cache"]): r for r in rows}
    for dist in ("uniform", "zipf"):
        for every in sorted({k[1] for k in by}):
            base = by.get((dist, every, "0"))
            for cache in ("0", "1MiB", "10MiB"):
                r = by.get((dist, every, cache))
                if not r:
                    continue
                lines.append(f"| {dist} | {every:,} | {cache} | {fmt(r['records_per_update'])} | "
                             f"{fmt(r.get('evictions_per_update'))} | {fmt(r['updates_per_second'] / 1e6)} | "
                             f"{ratio(r['updates_per_second'], base and base['updates_per_second'])} |")
    return lines


def cache_plots(rows, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, dist in zip(axes, ("uniform", "zipf")):
        for cache in ("0", "1MiB", "10MiB"):
            pts = sorted((int(r["flush_every"]), r["records_per_update"]) for r in rows
                         if r["dist"] == dist and r["cache"] == cache)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"cache {cache}")
        ax.set_xscale("log")
        ax.set_title(f"1M keys, {dist} updates")
        ax.set_xlabel("updates between two flushes")
        ax.set_ylabel("changelog records per update")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out / "cache_coalescing.png")


# ---- file log and disk

def file_log_tables(groups):
    rows = {r["op"]: r for r in groups.get("file_log", []) + groups.get("disk", [])}
    pairs = [("file_log", "append_flush", "write_sync_per_chunk", "write_sync_at_end"),
             ("file_log", "replay_cold", "read_cold", None),
             ("file_log", "replay_warm", "read_warm", None),
             ("disk", "write_sync_per_chunk", None, None), ("disk", "write_sync_at_end", None, None),
             ("disk", "read_cold", None, None), ("disk", "read_warm", None, None)]
    lines = ["\n| what | MB/s (bytes on disk) | payload MB/s | records/s | vs disk, same pattern | vs disk, best |",
             "|---|---:|---:|---:|---:|---:|"]
    for group, op, same, best in pairs:
        r = rows.get(op)
        if not r:
            continue
        mbps = r["bytes_per_second"] / 1e6
        s = rows.get(same) if same else None
        b = rows.get(best) if best else None
        extra = f" (open {fmt(r['open_s'] * 1e3)} ms)" if "open_s" in r else ""
        lines.append(f"| {group} {op}{extra} | {fmt(mbps)} | {fmt(r['payload_MBps'])} | "
                     f"{fmt(r['records_per_second'] / 1e6)}M | {ratio(r['bytes_per_second'], s and s['bytes_per_second'])} | "
                     f"{ratio(r['bytes_per_second'], b and b['bytes_per_second'])} |")
    return lines


def file_log_plots(groups, out):
    rows = groups.get("file_log", []) + groups.get("disk", [])
    if not rows:
        return
    order = ["append_flush", "write_sync_per_chunk", "write_sync_at_end", "replay_cold", "read_cold",
             "replay_warm", "read_warm"]
    by = {r["op"]: r for r in rows}
    names = [o for o in order if o in by]
    fig, ax = plt.subplots(figsize=(9, 4))
    colors = ["tab:blue" if by[n]["group"] == "file_log" else "tab:gray" for n in names]
    ax.bar(range(len(names)), [by[n]["bytes_per_second"] / 1e6 for n in names], color=colors)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{by[n]['group']}\n{n}" for n in names], fontsize=7)
    ax.set_ylabel("MB/s (bytes on disk, median)")
    ax.set_title("file_log (blue) against the same filesystem (gray); 1M records of 100 B")
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, out / "file_log_vs_disk.png")


# ---- restore

def restore_tables(rows):
    lines = ["\n| store | value | records | log MB | restore ms | M records/s | MB/s | open ms | ready ms | vs replay alone |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by = {(r["store"], r["value"], int(r["records"])): r for r in rows}
    for value in ("100", "8"):
        for n in sorted({k[2] for k in by if k[1] == value}):
            replay = by.get(("replay_only", value, n))
            for store in ("ordered", "hashed", "replay_only", "hashed_puts"):
                r = by.get((store, value, n))
                if not r:
                    continue
                ms = r["real_time"]
                if store == "hashed_puts":  # no log read: the store's share alone
                    lines.append(f"| `{store}` (no log) | {value} B | {n:,} | – | {fmt(ms)} | "
                                 f"{fmt(r['records_per_second'] / 1e6)} | – | – | – | "
                                 f"{ratio(ms, replay and replay['real_time'])} |")
                    continue
                lines.append(f"| `{store}` | {value} B | {n:,} | {fmt(r['log_MB'])} | {fmt(ms)} | "
                             f"{fmt(r['records_per_second'] / 1e6)} | {fmt(r['bytes_per_second'] / 1e6)} | "
                             f"{fmt(r['open_s'] * 1e3)} | {fmt(r['ready_s'] * 1e3)} | "
                             f"{ratio(ms, replay and replay['real_time']) if store != 'replay_only' else '1'} |")
    return lines


def restore_plots(rows, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    for store, color in (("ordered", "tab:red"), ("hashed", "tab:blue"), ("replay_only", "tab:gray")):
        pts = sorted((r["log_MB"], r["real_time"] / 1e3, r["ready_s"]) for r in rows
                     if r["store"] == store and r["value"] == "100")
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color, label=f"{store}: restore()")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="x", linestyle="--", color=color,
                label=f"{store}: open + restore (ready)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("changelog size on disk (MB; 137 B per record: 8 B key, 100 B value)")
    ax.set_ylabel("seconds (median)")
    ax.set_title("Restore from file_log through logged(), page cache dropped first")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out / "restore_time.png")


def engine_tables(rows, bare="strata_bare", logged="strata_logged"):
    """The RocksDB and SQLite stores against their engine used directly:
    ns per operation (commits included), p50 and p99, and the logged layer's
    cost over the bare store."""
    lines = ["\n| op | store | ns/op | p50 ns | p99 ns |", "|---|---|---:|---:|---:|"]
    by = {}
    for r in sorted(rows, key=lambda r: (r.get("op", ""), r["name"])):
        lines.append(f"| {r.get('op', '')} | `{r.get('store', '')}` | {fmt(r.get('ns_per_op'))} | "
                     f"{fmt(r.get('p50_ns'))} | {fmt(r.get('p99_ns'))} |")
        by[(r.get("op"), r.get("store"))] = r
    for op in sorted({k[0] for k in by}):
        b, l = by.get((op, bare)), by.get((op, logged))
        if b and l and b.get("ns_per_op"):
            lines.append(f"\n- {op}: logged / bare = {l['ns_per_op'] / b['ns_per_op']:.2f} (ns/op), "
                         f"{l['p50_ns'] / b['p50_ns']:.2f} (p50)")
    return lines


def growth(values):
    """How a per-unit cost grows from the smallest to the largest size: the
    factor per 10x of size, and a word for it."""
    pts = [(n, v) for n, v in values if v]
    if len(pts) < 2:
        return "–"
    (n0, v0), (n1, v1) = pts[0], pts[-1]
    per_decade = (v1 / v0) ** (1 / math.log10(n1 / n0))
    word = "flat" if per_decade < 1.25 else ("about log n" if per_decade < 1.6 else "grows faster than log n")
    return f"{per_decade:.2f}x per 10x: {word}"


def scale_tables(rows):
    """scale_bench: one row per key count, and how each per-key or per-operation
    cost grows with the count."""
    by_n = collections.defaultdict(dict)
    for r in rows:
        by_n[int(r["keys"])][(r["op"], r.get("store", ""))] = r
    cols = [("write", "", "updates_per_second", "writes, k updates/s", 1e-3),
            ("restore", "", "records_per_second", "restore, k records/s", 1e-3),
            ("restore", "", "open_s", "log open s", 1),
            ("restore", "", "store_bytes_per_key", "store bytes/key", 1),
            ("restore", "", "peak_over_store", "restore peak / store", 1),
            ("put", "bare", "ns_per_op", "put ns (bare)", 1),
            ("put", "full_stack", "ns_per_op", "put ns (full stack)", 1),
            ("get", "bare", "ns_per_op", "get ns (bare)", 1),
            ("get", "full_stack", "ns_per_op", "get ns (full stack)", 1)]
    lines = ["\n`hash_map_store<u64, u64>`, file log, one process per key count; uniform keys for put and get "
             "(mean ns/op, a flush every 10k operations).",
             "\n| keys | " + " | ".join(c[3] for c in cols) + " |",
             "|---:|" + "---:|" * len(cols)]
    for n in sorted(by_n):
        cells = []
        for op, store, field, _, scale in cols:
            r = by_n[n].get((op, store))
            cells.append(fmt(r[field] * scale) if r and field in r else "–")
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    lines += ["\nGrowth of each cost per key or per operation (a flat rate means the total grows linearly):", ""]
    for op, store, field, label, _ in cols:
        vals = []
        for n in sorted(by_n):
            r = by_n[n].get((op, store))
            if r and field in r:
                v = r[field]
                # rates: time per unit is what grows
                vals.append((n, 1 / v if field.endswith("per_second") else v))
        if field == "open_s":  # a total, not a cost per key: constant time is the aim
            g = growth(vals)
            if g != "–":
                factor = float(g.split("x")[0])
                g = f"{factor:.2f}x per 10x of the log: " + (
                    "constant" if factor < 1.5 else ("linear in the log's size" if factor > 5 else "sublinear"))
            lines.append(f"- {label}: {g}")
            continue
        lines.append(f"- {label}: {growth(vals)}")
    return lines


def file_log_open_tables(rows):
    """file_log_open_bench: open time and a restore from a checkpoint near
    the end, by the log's size; the cost of compaction."""
    lines = ["\n| records | log MB | open cold ms | open warm ms | restore of the last 1,000 records, cold, ms |",
             "|---:|---:|---:|---:|---:|"]
    by = {(r["op"], int(r["records"])): r for r in rows if "records" in r}
    sizes = sorted({n for _, n in by})
    for n in sizes:
        cold, warm, tail = by.get(("open_cold", n)), by.get(("open_warm", n)), by.get(("restore_tail_cold", n))
        lines.append(f"| {n:,} | {fmt(cold and cold.get('read_MB'))} | {fmt(cold and cold['real_time'])} | "
                     f"{fmt(warm and warm['real_time'])} | {fmt(tail and tail['real_time'])} |")
    opens = [(n, by[("open_cold", n)]["real_time"]) for n in sizes if ("open_cold", n) in by]
    if len(opens) >= 2:
        g = growth(opens)
        if g != "–":
            factor = float(g.split("x")[0])
            lines.append(f"\nOpen time (cold) grows {factor:.2f}x per 10x of the log: "
                         + ("constant" if factor < 1.5 else ("linear" if factor > 5 else "sublinear"))
                         + ". Opening reads each sealed segment's index and scans only the active segment.")
    compaction = [r for r in rows if r.get("op") in ("append_compact", "compact_all")]
    if compaction:
        lines += ["\nCompaction (10M updates of 8 B values, a flush every 10k):", "",
                  "| run | keys | records/s | compaction read MB/s | log MB at end |", "|---|---:|---:|---:|---:|"]
        for r in sorted(compaction, key=lambda r: (r["op"], int(r.get("keys", 0)), r.get("auto_compact", ""))):
            run = ("append + flush, automatic compaction " + ("on" if r.get("auto_compact") == "1" else "off")
                   if r["op"] == "append_compact" else "compact() of the whole log")
            lines.append(f"| {run} | {int(r['keys']):,} | {fmt(r.get('records_per_second'))} | "
                         f"{fmt(r.get('cleaned_MBps'))} | {fmt(r.get('log_MB_at_end'))} |"
                         if "keys" in r else
                         f"| {run} | – | – | {fmt(r.get('cleaned_MBps'))} | – |")
    return lines


def main():
    results = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build-bench/results")
    out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks")
    out.mkdir(parents=True, exist_ok=True)
    groups = load(results)
    lines = []
    if groups.get("store_ops"):
        lines += ["### Store operations"] + store_ops_goals(groups["store_ops"]) + store_ops_tables(groups["store_ops"])
        store_ops_plots(groups["store_ops"], out)
    if groups.get("put_anatomy"):
        lines += ["\n### Anatomy of a logged put (1M keys, uniform, 8 B values)",
                  "\n| variant | ns/op (wall) | ns/op (CPU) | CPU vs bare |", "|---|---:|---:|---:|"]
        rows = {r["variant"]: r for r in groups["put_anatomy"]}
        bare = rows.get("bare")
        for v in ("bare", "serial", "get", "encode_resize", "encode_bswap_array", "get_encode", "logged_noop_log"):
            if v in rows:
                r = rows[v]
                lines.append(f"| `{v}` | {fmt(r['real_time'])} | {fmt(r['cpu_time'])} | "
                             f"{ratio(r['cpu_time'], bare and bare['cpu_time'])} |")
    if groups.get("serde") or groups.get("kv_codec"):
        lines += ["\n### Serdes and codec (ns per call, median)"] + serde_tables(groups)
    if groups.get("cache"):
        lines += ["\n### Cache coalescing"] + cache_tables(groups["cache"])
        cache_plots(groups["cache"], out)
    if groups.get("file_log") or groups.get("disk"):
        lines += ["\n### File log against the disk"] + file_log_tables(groups)
        file_log_plots(groups, out)
    if groups.get("restore"):
        lines += ["\n### Restore"] + restore_tables(groups["restore"])
        restore_plots(groups["restore"], out)
    if groups.get("rocksdb"):
        lines += ["\n### The RocksDB store against RocksDB used directly"] + engine_tables(groups["rocksdb"])
    if groups.get("sqlite"):
        lines += ["\n### The SQLite store against SQLite used directly"] + engine_tables(groups["sqlite"])
    if groups.get("file_log_open"):
        lines += ["\n### Opening the file log, and compaction"] + file_log_open_tables(groups["file_log_open"])
    if groups.get("scale"):
        lines += ["\n### Scale: how the costs grow with the state"] + scale_tables(groups["scale"])
    (results / "tables.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'tables.md'} and {len(list(out.glob('*.png')))} plots in {out}")


if __name__ == "__main__":
    main()
