#!/usr/bin/env python3
"""bench/e2e/summarize.py: medians, ratios and tables from compare.sh's raw JSON lines.

Medians over rounds per (suite, workload, concurrency, target); a ratio is a target's median over
the median of "none" (no proxy) for the same suite, workload and concurrency, measured in the
same rounds; where the reference proxy ran ("limit", bench/limit-proxy), a second ratio, [× limit],
is over its median: what a proxy costs beyond the least a CONNECT proxy can do here. Medians, not means: on a shared machine one round in three is often disturbed, and a
median shrugs that off.

    python3 bench/e2e/summarize.py RAW.jsonl [RAW.jsonl ...] [-- TARGET ...]
        [--suite NAME]            only this suite (compare.sh passes its own)
        [--csv FILE]              every median as one CSV row (suite, workload, ..., metric)
        [--json FILE]             the same rows, plus machine, instructions and micro, as JSON
        [--machine FILE]          machine.json from bench/run.sh, shown above the tables
        [--instructions FILE]     instructions.json from bench/e2e/instructions.sh
        [--micro FILE]            Google Benchmark's JSON from bench/run-micro.sh (repeatable)

Markdown goes to stdout. TARGETs give the row order (default: the order found in the files).
"""
import argparse
import csv
import json
import statistics
import sys
import textwrap

# The number each workload is judged by, and its unit (ratios are always value / none's value).
HEADLINE = {
    "setups": ("setups_per_s", "setups/s"),
    "download": ("gbit_per_s", "Gbit/s"),
    "upload": ("gbit_per_s", "Gbit/s"),
    "http": ("requests_per_s", "requests/s"),
    # An https setup is one full TLS handshake and one request (bench/e2e/inspection.sh).
    "https-setups": ("setups_per_s", "handshakes/s"),
    "https": ("requests_per_s", "requests/s"),
    "idle": ("anon_kb_per_tunnel", "KB/idle tunnel"),
}
BASELINE = "none"
LIMIT = "limit"
# What sandgate as deployed is held to (the performance issue): ratios in the same rounds.
GOALS = [
    ("setups", 16, "setups_per_s", LIMIT, ">=", 0.95, "setups/s vs limit"),
    ("setups", 16, "p99_ms", LIMIT, "<=", 1.2, "p99 vs limit"),
    ("download", 1, "gbit_per_s", BASELINE, ">=", 0.85, "download ×1 vs no proxy"),
    ("download", 16, "gbit_per_s", BASELINE, ">=", 0.85, "download ×16 vs no proxy"),
    ("idle", None, "rss_kb_per_tunnel", None, "<=", 2.0, "RSS KB per idle tunnel"),
]


def load(paths):
    """Run lines (those with a label) and notes (lines with a note) from every file."""
    runs, notes = [], []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if not line.startswith("{"):
                    continue
                row = json.loads(line)
                row.setdefault("suite", "main")  # files written before suites existed
                if "note" in row:
                    notes.append(row)
                elif "label" in row:
                    runs.append(row)
    return runs, notes


def cpu_seconds(run):
    cpu = run.get("proxy_cpu_s")
    return None if not cpu else cpu["user"] + cpu["system"]


def metrics_of(run, cpu_mhz):
    """The numbers one run contributes, by metric name (None when not measured)."""
    workload = run["workload"]
    out = {}
    cpu = cpu_seconds(run)
    if workload in ("setups", "http", "https-setups", "https"):
        ops = run["setups"] if workload in ("setups", "https-setups") else run["requests"]
        if ops == 0:
            return out
        out[HEADLINE[workload][0]] = run[HEADLINE[workload][0]]
        for name, key in (("p50_ms", "p50"), ("p99_ms", "p99"), ("p999_ms", "p999")):
            out[name] = run["latency_us"][key] / 1000
        # Proxy CPU (user + system, all threads) per operation, over the measured window.
        out["cpu_us_per_op"] = None if cpu is None else cpu * 1e6 / ops
        if workload in ("http", "https"):
            out["connections"] = run["connections"]
    elif workload in ("download", "upload"):
        if run["tunnels"] == 0 or run["bytes"] == 0:
            return out
        out["gbit_per_s"] = run["gbit_per_s"]
        # CPU time x the nominal clock: the VM exposes no cycle counter, so "cycles" are
        # CPU-seconds converted at the clock rate /proc/cpuinfo reports.
        if cpu is not None:
            out["cpu_ns_per_byte"] = cpu * 1e9 / run["bytes"]
            if cpu_mhz:
                out["cycles_per_byte"] = cpu * cpu_mhz * 1e6 / run["bytes"]
    elif workload == "idle":
        if run["tunnels_open"] == 0:
            return out
        out["anon_kb_per_tunnel"] = run["anon_kb_per_tunnel"]
        out["rss_kb_per_tunnel"] = run["rss_kb_per_tunnel"]
        out["tunnels_alive"] = run["tunnels_alive"]
        out["tunnels_requested"] = run["tunnels_requested"]
    return out


def summarize(runs, cpu_mhz):
    """One record per (suite, workload, concurrency, target, metric): median, ratio, runs."""
    groups = {}
    for run in runs:
        key = (run["suite"], run["workload"], run["concurrency"], run["label"])
        groups.setdefault(key, []).append(run)
    medians = {}
    for key, group in groups.items():
        per_metric = {}
        for run in group:
            for name, value in metrics_of(run, cpu_mhz).items():
                if value is not None:
                    per_metric.setdefault(name, []).append(value)
        errors = sum(r["errors_total"] for r in group)
        for name, values in per_metric.items():
            medians[key + (name,)] = (statistics.median(values), len(values), len(group), errors)
    records = []
    for (suite, workload, level, target, name), (value, n, runs_total, errors) in medians.items():
        base = medians.get((suite, workload, level, BASELINE, name))
        ratio = value / base[0] if base and base[0] and target != BASELINE else None
        records.append({"suite": suite, "workload": workload, "concurrency": level,
                        "target": target, "metric": name, "median": value, "ratio_to_none": ratio,
                        "values": n, "runs": runs_total, "errors": errors})
    return records


class Table:
    """Lookup of the records, and the markdown helpers the tables share."""

    def __init__(self, records, targets):
        self.by_key = {(r["suite"], r["workload"], r["concurrency"], r["target"], r["metric"]): r
                       for r in records}
        self.targets = targets

    def get(self, suite, workload, level, target, metric):
        return self.by_key.get((suite, workload, level, target, metric))

    def levels(self, suite, workload):
        return sorted({k[2] for k in self.by_key if k[0] == suite and k[1] == workload})

    def present(self, suite, workload):
        found = {k[3] for k in self.by_key if k[0] == suite and k[1] == workload}
        return [t for t in self.targets if t in found]

    def cell(self, suite, workload, level, target, metric, digits=0, show_ratio=True, vs=None):
        record = self.get(suite, workload, level, target, metric)
        if record is None:
            return "—"
        text = f"{record['median']:,.{digits}f}"
        if show_ratio and record["ratio_to_none"] is not None:
            text += f" ({record['ratio_to_none']:.2f}×)"
        for against in (vs, LIMIT if show_ratio and vs != LIMIT else None):
            if against and target not in (against, BASELINE, LIMIT):
                other = self.get(suite, workload, level, against, metric)
                if other and other["median"]:
                    text += f" [{record['median'] / other['median']:.2f}× {against}]"
        return text

    def errors(self, suite, workload, level, target):
        metric = HEADLINE[workload][0]
        record = self.get(suite, workload, level, target, metric)
        return "—" if record is None else str(record["errors"])

    def runs(self, suite, workload, level, target):
        record = self.get(suite, workload, level, target, HEADLINE[workload][0])
        return "—" if record is None else str(record["values"])


def caption(text):
    """A paragraph before a table, wrapped to the project's 100 columns."""
    print("\n" + textwrap.fill(text, 100) + "\n")


def rate_table(t, suite, workload, title, vs=None):
    """Setups or HTTP requests: rate, latency percentiles, proxy CPU per operation."""
    unit = HEADLINE[workload][1]
    rate = HEADLINE[workload][0]
    caption(title)
    extra = " connections |" if workload in ("http", "https") else ""
    print(f"| target | clients | {unit} | p50 ms | p99 ms | p99.9 ms | proxy CPU µs/op |{extra}"
          " runs | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if extra else "") + "---:|---:|")
    for level in t.levels(suite, workload):
        for target in t.present(suite, workload):
            if t.get(suite, workload, level, target, rate) is None:
                continue
            row = [target, str(level),
                   t.cell(suite, workload, level, target, rate, vs=vs),
                   t.cell(suite, workload, level, target, "p50_ms", 2, False),
                   t.cell(suite, workload, level, target, "p99_ms", 2),
                   t.cell(suite, workload, level, target, "p999_ms", 2, False),
                   t.cell(suite, workload, level, target, "cpu_us_per_op", 1, False)]
            if extra:
                row.append(t.cell(suite, workload, level, target, "connections", 0, False))
            row += [t.runs(suite, workload, level, target),
                    t.errors(suite, workload, level, target)]
            print("| " + " | ".join(row) + " |")


def stream_table(t, suite):
    """Download and upload Gbit/s per tunnel count, and the proxy's CPU per byte."""
    columns = [(w, c) for w in ("download", "upload") for c in t.levels(suite, w)]
    if not columns:
        return
    caption("**Throughput** in Gbit/s, aggregate over N tunnels (×N), median of rounds; (×) = "
            "ratio to no proxy. Below it, the proxy's CPU time per byte relayed (user + "
            "system, all threads) converted to cycles at the nominal clock.")
    targets = [x for x in t.targets
               if any(t.get(suite, w, c, x, "gbit_per_s") for w, c in columns)]
    print("| target | " + " | ".join(f"{w} ×{c}" for w, c in columns) + " | errors |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for target in targets:
        cells = [t.cell(suite, w, c, target, "gbit_per_s", 2) for w, c in columns]
        errors = sum(int(t.errors(suite, w, c, target)) for w, c in columns
                     if t.errors(suite, w, c, target) != "—")
        print(f"| {target} | " + " | ".join(cells) + f" | {errors} |")
    proxied = [x for x in targets if x != BASELINE]
    if any(t.get(suite, w, c, x, "cycles_per_byte") for w, c in columns for x in proxied):
        print()
        print("| proxy CPU, cycles/byte | " + " | ".join(f"{w} ×{c}" for w, c in columns) + " |")
        print("|---|" + "---:|" * len(columns))
        for target in proxied:
            cells = [t.cell(suite, w, c, target, "cycles_per_byte", 2, False) for w, c in columns]
            print(f"| {target} | " + " | ".join(cells) + " |")


def idle_table(t, suite):
    levels = t.levels(suite, "idle")
    if not levels:
        return
    caption("**Idle memory**: growth of the proxy's private anonymous memory (heap, stacks: "
            "\"user memory\") and of its RSS per idle tunnel, "
            f"{', '.join(map(str, levels))} tunnels opened on a freshly started proxy.")
    print("| target | tunnels | KB/idle tunnel | RSS KB/idle tunnel | tunnels kept (worst round) "
          "| errors |")
    print("|---|---:|---:|---:|---:|---:|")
    for level in levels:
        for target in t.present(suite, "idle"):
            anon = t.get(suite, "idle", level, target, "anon_kb_per_tunnel")
            if anon is None:
                continue
            alive = t.get(suite, "idle", level, target, "tunnels_alive")
            print(f"| {target} | {level} | {anon['median']:.1f} | "
                  f"{t.cell(suite, 'idle', level, target, 'rss_kb_per_tunnel', 1, False)} | "
                  f"{alive['median']:.0f}/{level} | {anon['errors']} |")


def scaling_table(t, suite):
    """Compact: one row per (workload, level), one column per target."""
    targets = [x for x in t.targets if any(k[0] == suite and k[3] == x for k in t.by_key)]
    caption("Median of rounds; (×) = ratio to no proxy, [× sandgate] = ratio to sandgate with "
            "one worker thread, both under the same conditions.")
    print("| workload | clients/tunnels | " + " | ".join(targets) + " |")
    print("|---|---:|" + "---:|" * len(targets))
    for workload in ("setups", "download", "upload", "http"):
        metric, unit = HEADLINE[workload]
        digits = 2 if workload in ("download", "upload") else 0
        for level in t.levels(suite, workload):
            cells = [t.cell(suite, workload, level, x, metric, digits,
                            vs="sandgate" if x == "sandgate-t2" else None) for x in targets]
            print(f"| {workload} ({unit}) | {level} | " + " | ".join(cells) + " |")


def instructions_table(data):
    caption("**Instructions** executed by sandgate (user space, counted by valgrind's callgrind "
            "rather than timed, so machine noise does not move them): a run with load minus "
            "an idle run of the same length, divided by what the load did.")
    print("| scenario | operations | instructions | per operation |")
    print("|---|---:|---:|---:|")
    for s in data.get("scenarios", []):
        per = s.get("per_unit")
        print(f"| {s['name']} | {s['ops']:,} {s['unit']}s | {s['instructions']:,} | "
              f"{'—' if per is None else f'{per:,.1f}'} per {s['unit']} |")


# Google Benchmark's own fields; anything else in a result is a counter the benchmark set.
BENCHMARK_FIELDS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
                    "repetitions", "repetition_index", "threads", "iterations", "real_time",
                    "cpu_time", "time_unit", "aggregate_name", "aggregate_unit", "label",
                    "error_occurred", "error_message"}


def micro_results(data):
    """One result per benchmark: the median of its repetitions, or its only run."""
    out = []
    for b in data.get("benchmarks", []):
        repeated = b.get("repetitions", 1) > 1
        if (repeated and b.get("aggregate_name") == "median") or \
                (not repeated and b.get("run_type") == "iteration"):
            out.append(b)
    return out


def micro_table(data):
    caption("**Micro-benchmarks** (Google Benchmark, `bench/micro/`): time per iteration, the "
            "median of the repetitions where a benchmark repeats. On a busy machine the CPU "
            "time (the benchmark thread's own) is the steadier of the two.")
    print("| benchmark | wall time | CPU time | counters |")
    print("|---|---:|---:|---|")
    for b in micro_results(data):
        counters = ", ".join(f"{k} {v:,.3g}" for k, v in b.items()
                             if k not in BENCHMARK_FIELDS and isinstance(v, (int, float)))
        print(f"| {b['run_name']} | {b['real_time']:,.1f} {b['time_unit']} | "
              f"{b['cpu_time']:,.1f} {b['time_unit']} | {counters} |")


def goals_table(t, suite, target="sandgate"):
    """Each goal of sandgate as deployed, its measured ratio, and whether it was met."""
    rows = []
    for workload, level, metric, against, op, goal, label in GOALS:
        levels = t.levels(suite, workload) if level is None else [level]
        for at in levels:
            mine = t.get(suite, workload, at, target, metric)
            if mine is None:
                continue
            value = mine["median"]
            if against is not None:
                other = t.get(suite, workload, at, against, metric)
                if other is None or not other["median"]:
                    continue
                value /= other["median"]
            met = value >= goal if op == ">=" else value <= goal
            shown = f"{value:.2f}×" if against else f"{value:.1f}"
            rows.append(f"| {label} ({at}) | {op} {goal} | {shown} | "
                        f"{'met' if met else 'missed'} |")
    if not rows:
        return
    caption(f"**Goals** for {target} as deployed (the decision log on standard error into a "
            "file), as ratios measured in the same rounds.")
    print("| goal | wanted | measured | |")
    print("|---|---:|---:|---|")
    print("\n".join(rows))


def print_suite(t, suite, notes):
    if suite in ("main", "logging"):
        goals_table(t, suite)
    if suite == "logging":
        rate_table(t, suite, "setups", "**The decision log's cost by destination**: setups, "
                   "median of rounds; (×) = ratio to no proxy, [× sandgate-quiet] = ratio to "
                   "sandgate logging nothing per connection, in the same rounds.",
                   vs="sandgate-quiet")
    elif suite == "main":
        rate_table(t, suite, "setups", "**Setups**: connect → CONNECT → 32-byte echo → close, "
                   "in a loop per client. Median of rounds; (×) = ratio to no proxy.")
        stream_table(t, suite)
        if t.levels(suite, "http"):
            rate_table(t, suite, "http", "**Plain HTTP**: `GET http://origin/32` → 32-byte "
                       "response, one kept-alive connection per client (straight to the origin "
                       "for no proxy). Median of rounds; (×) = ratio to no proxy.")
        idle_table(t, suite)
    elif suite == "blocklist":
        rate_table(t, suite, "setups", "**Setups through a 1,000,000-entry blocklist**: the "
                   "clients CONNECT to a name (resolved by sandgate through the origin's DNS, "
                   "then cached), so every setup takes the name path: blocklist lookup of the "
                   "name, then of its address. (×) = ratio to no proxy, [× sandgate] = ratio "
                   "to sandgate with its default (empty) blocklist in the same rounds.",
                   vs="sandgate")
    elif suite == "inspection":
        rate_table(t, suite, "https-setups", "**HTTPS setups**: connect → CONNECT → TLS handshake "
                   "(SNI, certificate verified) → one GET → 32-byte response → close, in a loop "
                   "per client; every handshake a full one. Median of rounds; (×) = ratio to no "
                   "proxy, [× squid-bump] = ratio to squid's ssl-bump in the same rounds.",
                   vs="squid-bump")
        rate_table(t, suite, "https", "**HTTPS on kept-alive connections**: one CONNECT and one "
                   "TLS handshake per connection, then a loop of `GET /32` → 32-byte response. "
                   "Median of rounds; (×) = ratio to no proxy, [× squid-bump] = ratio to "
                   "squid's ssl-bump.", vs="squid-bump")
    elif suite == "scaling":
        scaling_table(t, suite)
    elif suite == "owncore":
        rate_table(t, suite, "setups", "**The proxy on a core of its own** (origin moved to the "
                   "load tool's core): setups, median of rounds; (×) = ratio to no proxy.")
        stream_table(t, suite)
    else:
        for workload in ("setups", "http"):
            if t.levels(suite, workload):
                rate_table(t, suite, workload, f"**{workload}**")
        stream_table(t, suite)
        idle_table(t, suite)
    for note in notes:
        if note["suite"] == suite:
            print(f"\n- {note['note']}")


def main():
    argv = sys.argv[1:]
    order = []
    if "--" in argv:
        split = argv.index("--")
        argv, order = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", nargs="+")
    parser.add_argument("--suite")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--machine")
    parser.add_argument("--instructions")
    parser.add_argument("--micro", action="append", default=[])
    args = parser.parse_args(argv)

    runs, notes = load(args.raw)
    if args.suite:
        runs = [r for r in runs if r["suite"] == args.suite]
        notes = [n for n in notes if n["suite"] == args.suite]
    machine = json.load(open(args.machine, encoding="utf-8")) if args.machine else {}
    records = summarize(runs, machine.get("cpu_mhz"))
    targets = order or list(dict.fromkeys(r["label"] for r in runs))
    for target in dict.fromkeys(r["label"] for r in runs):
        if target not in targets:
            targets.append(target)
    table = Table(records, targets)

    if machine:
        print(f"Machine: {machine.get('model', '?')}, {machine.get('cpus', '?')} CPUs, "
              f"Linux {machine.get('kernel', '?')}; {machine.get('date', '')}; "
              f"sandgate {machine.get('commit', '?')}.")
    suites = list(dict.fromkeys(r["suite"] for r in runs))
    for suite in suites:
        if len(suites) > 1 or not args.suite:
            print(f"\n### Suite: {suite}")
        print_suite(table, suite, notes)

    instructions = json.load(open(args.instructions, encoding="utf-8")) \
        if args.instructions else None
    micro = None
    for path in args.micro:
        data = json.load(open(path, encoding="utf-8"))
        micro = micro or {"benchmarks": []}
        micro["benchmarks"] += data.get("benchmarks", [])
    if instructions:
        print("\n### Instructions per operation")
        instructions_table(instructions)
    if micro:
        print("\n### Micro-benchmarks")
        micro_table(micro)

    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as out:
            fields = ["suite", "workload", "concurrency", "target", "metric", "median",
                      "ratio_to_none", "values", "runs", "errors"]
            writer = csv.DictWriter(out, fieldnames=fields)
            writer.writeheader()
            for record in sorted(records, key=lambda r: (r["suite"], r["workload"],
                                                         r["concurrency"], r["target"],
                                                         r["metric"])):
                writer.writerow(record)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"machine": machine, "targets": targets, "medians": records,
                       "notes": [n["note"] for n in notes], "instructions": instructions,
                       "micro": [{k: v for k, v in b.items()
                                  if k in ("run_name", "real_time", "cpu_time", "time_unit")
                                  or k not in BENCHMARK_FIELDS}
                                 for b in micro_results(micro or {})]},
                      out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
