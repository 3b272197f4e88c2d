#!/usr/bin/env python3
"""bench/e2e/summarize.py: the markdown tables of compare.sh, from its raw JSON lines.

Medians over rounds per (target, workload, concurrency); a ratio is a target's median over the
median of "none" (no proxy) for the same workload. Medians, not means: on a shared machine one
round in three is often disturbed, and a median shrugs that off.

    python3 bench/e2e/summarize.py build/bench-results/compare-STAMP.jsonl [TARGET ...]

TARGETs give the row order (default: the order found in the file).
"""
import json
import statistics
import sys
import textwrap


def load(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.startswith("{")]


def select(runs, label, workload, concurrency=None):
    return [r for r in runs if r["label"] == label and r["workload"] == workload
            and (concurrency is None or r["concurrency"] == concurrency)]


def median(rows, get):
    values = [v for v in map(get, rows) if v is not None]
    return statistics.median(values) if values else None


def number(value, digits=0):
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio(value, base):
    return "" if value is None or not base else f" ({value / base:.2f}×)"


def caption(text):
    """A paragraph before a table, wrapped to the project's 100 columns."""
    print("\n" + textwrap.fill(text, 100) + "\n")


def setups_table(runs, targets):
    """One row per (concurrency, target): rate, latency percentiles, errors."""
    caption("**Setups**: connect → CONNECT → 32-byte echo → close, in a loop per client. "
            "Median of rounds; (×) = ratio to no proxy.")
    print("| target | clients | setups/s | p50 ms | p99 ms | p99.9 ms | runs | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    levels = sorted({r["concurrency"] for r in runs if r["workload"] == "setups"})
    for clients in levels:
        base = select(runs, "none", "setups", clients)
        base_rate = median(base, lambda r: r["setups_per_s"])
        base_p99 = median(base, lambda r: r["latency_us"]["p99"] / 1000)
        for target in targets:
            rows = select(runs, target, "setups", clients)
            if not rows:
                continue
            ok = [r for r in rows if r["setups"] > 0]
            rate = median(ok, lambda r: r["setups_per_s"])
            p50 = median(ok, lambda r: r["latency_us"]["p50"] / 1000)
            p99 = median(ok, lambda r: r["latency_us"]["p99"] / 1000)
            p999 = median(ok, lambda r: r["latency_us"]["p999"] / 1000)
            proxied = target != "none"
            errors = sum(r["errors_total"] for r in rows)
            rate_ratio = ratio(rate, base_rate) if proxied else ""
            p99_ratio = ratio(p99, base_p99) if proxied else ""
            print(f"| {target} | {clients} | {number(rate)}{rate_ratio} | "
                  f"{number(p50, 2)} | {number(p99, 2)}{p99_ratio} | "
                  f"{number(p999, 2)} | {len(rows)} | {errors} |")


def streams_and_idle_table(runs, targets):
    """One row per target: Gbit/s per (direction, tunnels), then idle memory per tunnel."""
    levels = sorted({r["concurrency"] for r in runs if r["workload"] in ("download", "upload")})
    columns = [(w, c) for w in ("download", "upload") for c in levels]
    idle_counts = sorted({r["tunnels_requested"] for r in runs if r["workload"] == "idle"})
    caption("**Throughput** in Gbit/s, aggregate over N tunnels (×N); **idle memory**: growth "
            "of the proxy's private anonymous memory (and RSS) per idle tunnel, "
            f"{', '.join(map(str, idle_counts)) or 'no'} tunnels on a fresh process.")
    heads = " | ".join(f"{w} ×{c}" for w, c in columns)
    print(f"| target | {heads} | KB/idle tunnel | RSS KB/idle tunnel | tunnels kept | errors |")
    print("|---|" + "---:|" * (len(columns) + 4))
    for target in targets:
        if not any(r["label"] == target for r in runs):
            continue
        cells = []
        for workload, tunnels in columns:
            base = median(select(runs, "none", workload, tunnels), lambda r: r["gbit_per_s"])
            rows = [r for r in select(runs, target, workload, tunnels) if r["tunnels"] > 0]
            value = median(rows, lambda r: r["gbit_per_s"])
            cells.append(number(value, 2) + (ratio(value, base) if target != "none" else ""))
        idle = [r for r in select(runs, target, "idle") if r["tunnels_open"] > 0]
        anon = median(idle, lambda r: r["anon_kb_per_tunnel"])
        rss = median(idle, lambda r: r["rss_kb_per_tunnel"])
        kept = (f'{min(r["tunnels_alive"] for r in idle)}/'
                f'{max(r["tunnels_requested"] for r in idle)}') if idle else "—"
        errors = sum(r["errors_total"] for r in runs
                     if r["label"] == target and r["workload"] in ("download", "upload", "idle"))
        print(f"| {target} | {' | '.join(cells)} | {number(anon, 1)} | {number(rss, 1)} | "
              f"{kept} | {errors} |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    targets = sys.argv[2:] or list(dict.fromkeys(r["label"] for r in runs))
    setups_table(runs, targets)
    streams_and_idle_table(runs, targets)


if __name__ == "__main__":
    main()
