#!/usr/bin/env python3
"""bench/e2e/http2_summary.py: the tables of bench/e2e/http2.sh from its raw JSON lines.

Medians over rounds per (requests in flight, target). Ratios are of medians measured in the same
rounds: HTTP/2 against HTTP/1.1 on the same path (through the gate, or straight to the origin),
and each path against no proxy with the same protocol. The targets (issue 43's "Performance"):
HTTP/2 inspected at least HTTP/1.1 inspected's requests/s, and no more gate CPU per request; the
table says for each level whether they were met, with the range of the per-round ratios. Setups
(a connection per request) get a table of their own; with a baseline build (the -base targets),
each measure of the inspect targets is also given against the baseline's, in the same rounds.

    python3 bench/e2e/http2_summary.py RAW.jsonl [RAW.jsonl ...]
"""
import json
import statistics
import sys

# What each target is measured against: (HTTP/1.1 on the same path, no proxy with its protocol).
AGAINST = {
    "h2-inspect": ("h1-inspect", "h2-none"),
    "h1-inspect": (None, "h1-none"),
    "h2-inspect-base": ("h1-inspect-base", "h2-none"),
    "h1-inspect-base": (None, "h1-none"),
    "h2-none": ("h1-none", None),
    "h1-none": (None, None),
}
ORDER = ["h2-inspect", "h2-inspect-base", "h1-inspect", "h1-inspect-base", "h2-none", "h1-none"]


def load(paths):
    runs, notes = [], []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if not line.startswith("{"):
                    continue
                row = json.loads(line)
                if "note" in row:
                    notes.append(row["note"])
                elif "label" in row:
                    runs.append(row)
    return runs, notes


def rate_metrics(run):
    """requests/s (setups/s for a setups run), latency and the gate's CPU per request."""
    requests = run.get("requests", run.get("setups", 0))
    if requests == 0:
        return {}
    rate = run["requests_per_s"] if "requests" in run else run["setups_per_s"]
    out = {"rps": rate, "p50": run["latency_us"]["p50"] / 1000,
           "p99": run["latency_us"]["p99"] / 1000}
    cpu = run.get("proxy_cpu_s")
    if cpu:
        out["cpu_us"] = (cpu["user"] + cpu["system"]) * 1e6 / requests
    return out


def medians(runs):
    """(level, target) -> metric -> (median, per-round values by round), and run/error counts."""
    table, counts = {}, {}
    for run in runs:
        key = (run["level"], run["label"])
        n, errors = counts.get(key, (0, 0))
        counts[key] = (n + 1, errors + run["errors_total"])
        for name, value in rate_metrics(run).items():
            table.setdefault(key, {}).setdefault(name, {})[run["round"]] = value
    return {k: {m: (statistics.median(v.values()), v) for m, v in ms.items()}
            for k, ms in table.items()}, counts


def fmt(value, digits=0):
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio(table, level, target, other, metric):
    mine, theirs = table.get((level, target), {}), table.get((level, other), {})
    if other is None or metric not in mine or metric not in theirs or not theirs[metric][0]:
        return None
    return mine[metric][0] / theirs[metric][0]


def per_round(table, level, target, other, metric):
    """The ratio in each round both ran in (the same conditions)."""
    mine = table.get((level, target), {}).get(metric, (None, {}))[1]
    theirs = table.get((level, other), {}).get(metric, (None, {}))[1]
    return [mine[r] / theirs[r] for r in sorted(mine) if r in theirs and theirs[r]]


def layout(run):
    if run["workload"] == "h2":
        return f"{run['concurrency']} × {run['streams']} streams"
    return f"{run['concurrency']} connections"


def rate_table(runs, table, counts):
    print("**Requests/s** (GET of a small body, every response whole; median of rounds). "
          "× HTTP/1.1 = against HTTP/1.1 on the same path in the same rounds; × no proxy = "
          "against the same protocol straight to the origin. Gate CPU = the gate's user + "
          "system time over the measured window, per request.\n")
    print("| in flight | target | connections | requests/s | × HTTP/1.1 | × no proxy | p50 ms "
          "| p99 ms | gate CPU µs/request | runs | errors |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    shapes = {(r["level"], r["label"]): layout(r) for r in runs if r["level"] > 0}
    for level in sorted({k[0] for k in table if k[0] > 0}):
        for target in ORDER:
            metrics = table.get((level, target))
            if not metrics or "rps" not in metrics:
                continue
            h1, none = AGAINST[target]
            cells = [str(level), target, shapes[(level, target)], fmt(metrics["rps"][0]),
                     fmt(ratio(table, level, target, h1, "rps"), 2) + ("×" if h1 else ""),
                     fmt(ratio(table, level, target, none, "rps"), 2) + ("×" if none else ""),
                     fmt(metrics["p50"][0], 2), fmt(metrics["p99"][0], 2),
                     fmt(metrics.get("cpu_us", (None,))[0], 1),
                     str(counts[(level, target)][0]), str(counts[(level, target)][1])]
            print("| " + " | ".join(c.replace("—×", "—") for c in cells) + " |")


def targets_table(table):
    rows = []
    for level in sorted({k[0] for k in table if k[0] > 0}):
        for metric, wanted, label in (("rps", ">=", "requests/s"),
                                      ("cpu_us", "<=", "gate CPU per request")):
            value = ratio(table, level, "h2-inspect", "h1-inspect", metric)
            if value is None:
                continue
            rounds = per_round(table, level, "h2-inspect", "h1-inspect", metric)
            met = value >= 1 if wanted == ">=" else value <= 1
            spread = f"{min(rounds):.2f}–{max(rounds):.2f}" if rounds else "—"
            rows.append(f"| {level} | {label} | {wanted} 1.00× | {value:.2f}× | {spread} | "
                        f"{'met' if met else 'missed'} |")
    if not rows:
        return
    print("\n**Targets**: HTTP/2 inspected against HTTP/1.1 inspected, the same gate build, "
          "same rounds.\n")
    print("| in flight | measure | wanted | median ratio | per round | |")
    print("|---:|---|---:|---:|---:|---|")
    print("\n".join(rows))


def setups_table(table, counts):
    levels = sorted({k[0] for k in table})
    if not levels:
        return
    print("\n**Setups**: clients that open a connection for every request (connect, CONNECT, TLS "
          "handshake, one request, close): h2-setups (ALPN h2, one stream) and https-setups; the "
          "gate keeps its origin connections between them. Setups/s (median of rounds), "
          "× HTTP/1.1 and × no proxy as above, latency from the connect to the response's end, "
          "gate CPU per setup.\n")
    print("| clients | target | setups/s | × HTTP/1.1 | × no proxy | p50 ms | p99 ms | "
          "gate CPU µs/setup | runs | errors |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level in levels:
        for target in ORDER:
            metrics = table.get((level, target))
            if not metrics or "rps" not in metrics:
                continue
            h1, none = AGAINST[target]
            cells = [str(level), target, fmt(metrics["rps"][0]),
                     fmt(ratio(table, level, target, h1, "rps"), 2) + ("×" if h1 else ""),
                     fmt(ratio(table, level, target, none, "rps"), 2) + ("×" if none else ""),
                     fmt(metrics["p50"][0], 2), fmt(metrics["p99"][0], 2),
                     fmt(metrics.get("cpu_us", (None,))[0], 1),
                     str(counts[(level, target)][0]), str(counts[(level, target)][1])]
            print("| " + " | ".join(c.replace("—×", "—") for c in cells) + " |")


def baseline_table(tables):
    """Each inspect target against the baseline build's, same rounds: rate and gate CPU."""
    rows = []
    for what, table in tables:
        for level in sorted({k[0] for k in table}):
            for target in ("h2-inspect", "h1-inspect"):
                for metric, label in (("rps", "per second"), ("cpu_us", "gate CPU µs each"),
                                      ("p50", "p50 ms")):
                    value = ratio(table, level, target, target + "-base", metric)
                    if value is None:
                        continue
                    rounds = per_round(table, level, target, target + "-base", metric)
                    spread = f"{min(rounds):.2f}–{max(rounds):.2f}" if rounds else "—"
                    mine = table[(level, target)][metric][0]
                    base = table[(level, target + "-base")][metric][0]
                    digits = 0 if metric == "rps" else 2 if metric == "p50" else 1
                    rows.append(f"| {what} | {level} | {target} | {label} | {fmt(base, digits)} | "
                                f"{fmt(mine, digits)} | {value:.2f}× | {spread} |")
    if not rows:
        return
    print("\n**Against the baseline build** (BASELINE: the -base targets), the same rounds: "
          "this build's median over the baseline's, and the ratio in each round.\n")
    print("| workload | in flight / clients | target | measure | baseline | this build | ratio | "
          "per round |")
    print("|---|---:|---|---|---:|---:|---:|---:|")
    print("\n".join(rows))


def memory_table(runs):
    rows = []
    for label, protocol, unit in (("h2-hold", "HTTP/2", "stream"),
                                  ("h2-hold-base", "HTTP/2, baseline", "stream"),
                                  ("https-hold", "HTTP/1.1", "request"),
                                  ("https-hold-base", "HTTP/1.1, baseline", "request")):
        held = [r for r in runs if r.get("label", r["workload"]) == label]
        if held:
            rows.append((protocol, unit, held))
    if not rows:
        return

    def median(held, name):
        values = [r[name] for r in held if r.get(name) is not None]
        return statistics.median(values) if values else None

    print("\n**Memory** of the gate (a fresh process for each workload, each round): growth of its "
          "private anonymous memory (heap, stacks) and of its RSS per idle inspected connection "
          "(each having carried one request: the client's TLS, the origin's TLS, and for HTTP/2 "
          "both HTTP/2 sessions), then per request held open (its response head relayed, its "
          "body pending from a slow origin: an HTTP/2 stream, or an HTTP/1.1 connection's "
          "request), median of rounds.\n")
    print("| protocol | connections | open requests each | KB/idle connection | RSS KB/idle "
          "connection | KB/open request | RSS KB/open request | connections kept (worst) | "
          "requests held (worst) | runs | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for protocol, unit, held in rows:
        first = held[0]
        wanted = first["connections_requested"]
        print(f"| {protocol} | {wanted} | {first['streams']} ({unit}s) | "
              f"{fmt(median(held, 'anon_kb_per_connection'), 1)} | "
              f"{fmt(median(held, 'rss_kb_per_connection'), 1)} | "
              f"{fmt(median(held, 'anon_kb_per_stream'), 2)} | "
              f"{fmt(median(held, 'rss_kb_per_stream'), 2)} | "
              f"{min(r['connections_alive'] for r in held)}/{wanted} | "
              f"{min(r['streams_open'] for r in held)}/{wanted * first['streams']} | {len(held)} | "
              f"{sum(r['errors_total'] for r in held)} |")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    runs, notes = load(sys.argv[1:])
    # Profile runs are round 0: kept in the raw file, left out of the medians.
    rate_runs = [r for r in runs if r["workload"] in ("h2", "https") and r["round"] > 0]
    table, counts = medians(rate_runs)
    rate_table(rate_runs, table, counts)
    targets_table(table)
    setup_runs = [dict(r, level=r["concurrency"]) for r in runs
                  if r["workload"] in ("h2-setups", "https-setups") and r["round"] > 0]
    setups, setup_counts = medians(setup_runs)
    setups_table(setups, setup_counts)
    baseline_table([("requests", table), ("setups", setups)])
    memory_table(runs)
    for note in notes:
        print(f"\n- {note}")


if __name__ == "__main__":
    main()
