#!/usr/bin/env python3
"""bench/plot.py: one PNG per workload from bench/run.sh's summary.json, drawn with gnuplot.

    python3 bench/plot.py bench/results/DATE/summary.json [OUTPUT_FOLDER]

Needs gnuplot (Debian: gnuplot-nox, in scripts/install-deps.sh). Writes setups.png,
throughput.png, http.png, idle-memory.png, blocklist.png, scaling.png, instructions.png and
ratios.png (every headline as a ratio to no proxy, against the targets), skipping any whose data
is absent. The data is written inline into each gnuplot script, so nothing else is left behind.
"""
import json
import os
import shutil
import subprocess
import sys

# One colour per target, the same in every plot.
COLOURS = {"none": "#9e9e9e", "sandgate": "#1f77b4", "sandgate-t2": "#17becf",
           "sandgate-1m": "#2ca02c", "sandgate-b": "#d62728", "tinyproxy": "#ff7f0e",
           "squid": "#9467bd"}
HEADLINE = {"setups": "setups_per_s", "download": "gbit_per_s", "upload": "gbit_per_s",
            "http": "requests_per_s", "idle": "anon_kb_per_tunnel"}


class Medians:
    def __init__(self, summary):
        self.records = {(r["suite"], r["workload"], r["concurrency"], r["target"], r["metric"]): r
                        for r in summary["medians"]}
        self.order = summary.get("targets") or []

    def value(self, suite, workload, level, target, metric, ratio=False):
        record = self.records.get((suite, workload, level, target, metric))
        if record is None:
            return None
        return record["ratio_to_none"] if ratio else record["median"]

    def levels(self, suite, workload):
        return sorted({k[2] for k in self.records if k[0] == suite and k[1] == workload})

    def targets(self, suite, workloads):
        found = {k[3] for k in self.records if k[0] == suite and k[1] in workloads}
        return [t for t in self.order if t in found] + sorted(found - set(self.order))


def datablock(name, header, rows):
    """A gnuplot inline data block; '?' marks a missing value."""
    lines = [f"${name} << EOD", " ".join(f'"{h}"' for h in header)]
    for label, values in rows:
        cells = ["?" if v is None else f"{v:.6g}" for v in values]
        lines.append(f'"{label}" ' + " ".join(cells))
    lines.append("EOD")
    return "\n".join(lines) + "\n"


def clustered(block, targets, title, ylabel, extra="", ymax=None):
    """A clustered bar chart: one group per row of the block, one bar per target column.
    `ymax` fixes the top of the axis (so that a reference line above every bar still shows)."""
    colours = " ".join(COLOURS.get(t, "#333333") for t in targets)
    return f"""
set title "{title}"
set ylabel "{ylabel}"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set yrange [0:{"*" if ymax is None else f"{ymax:.6g}"}]
set grid ytics
set key outside right top
{extra}
colours = "{colours}"
plot for [i=2:{len(targets) + 1}] ${block} using i:xtic(1) title columnheader(i) \\
     linecolor rgb word(colours, i-1)
unset label
unset arrow
"""


def ratio_top(rows):
    """The top of a ratio axis: room above the highest bar, and never below 1.1 so that the
    "no proxy" line (1) and the 0.85 target show."""
    values = [v for _, vs in rows for v in vs if v is not None]
    return max([1.1] + [v * 1.1 for v in values])


def render(script, path, size="1200,520"):
    head = (f'set terminal pngcairo size {size} font "DejaVu Sans,11" noenhanced\n'
            f'set output "{path}"\nset datafile missing "?"\n')
    subprocess.run(["gnuplot"], input=head + script, text=True, check=True)
    print(f"plot.py: wrote {path}", file=sys.stderr)


def plot_rate(m, out, workload, metric, p99_metric, name, title, ylabel):
    levels = m.levels("main", workload)
    targets = m.targets("main", [workload])
    if not levels:
        return
    rate = datablock("rate", ["clients"] + targets,
                     [(str(c), [m.value("main", workload, c, t, metric) for t in targets])
                      for c in levels])
    p99 = datablock("p99", ["clients"] + targets,
                    [(str(c), [m.value("main", workload, c, t, p99_metric) for t in targets])
                     for c in levels])
    script = rate + p99 + "set multiplot layout 1,2\nset xlabel 'concurrent clients'\n"
    script += clustered("rate", targets, f"{title}: rate (higher is better)", ylabel)
    script += clustered("p99", targets, "p99 latency (lower is better)",
                        "p99 latency, ms (log scale)",
                        "set logscale y\nset yrange [*:*]")
    script += "unset logscale y\nunset multiplot\n"
    render(script, os.path.join(out, name))


def plot_throughput(m, out):
    targets = m.targets("main", ["download", "upload"])
    blocks, script = "", "set multiplot layout 1,2\nset xlabel 'tunnels'\n"
    for direction in ("download", "upload"):
        levels = m.levels("main", direction)
        if not levels:
            return
        blocks += datablock(direction, ["tunnels"] + targets,
                            [(str(c), [m.value("main", direction, c, t, "gbit_per_s")
                                       for t in targets]) for c in levels])
        script += clustered(direction, targets, f"{direction} throughput (higher is better)",
                            "Gbit/s, aggregate")
    render(blocks + script + "unset multiplot\n", os.path.join(out, "throughput.png"))


def plot_idle(m, out):
    levels = m.levels("main", "idle")
    if not levels:
        return
    level = levels[-1]
    targets = [t for t in m.targets("main", ["idle"]) if t != "none"]
    values = [m.value("main", "idle", level, t, "anon_kb_per_tunnel") for t in targets]
    block = datablock("idle", ["tunnels"] + targets, [(f"{level} idle tunnels", values)])
    target_line = ('set arrow from graph 0, first 4 to graph 1, first 4 nohead dt 2 lw 2 '
                   'lc rgb "#d62728"\nset label "target: 4 KB" at graph 0.02, first 4.8 '
                   'textcolor rgb "#d62728"')
    render(block + clustered("idle", targets, "user memory per idle tunnel (lower is better)",
                             "KB of private anonymous memory per tunnel", target_line),
           os.path.join(out, "idle-memory.png"))


def plot_blocklist(m, out):
    levels = m.levels("blocklist", "setups")
    if not levels:
        return
    targets = m.targets("blocklist", ["setups"])
    block = datablock("bl", ["clients"] + targets,
                      [(f"{c} clients", [m.value("blocklist", "setups", c, t, "setups_per_s")
                                         for t in targets]) for c in levels])
    render(block + clustered("bl", targets, "setups by name: default blocklist vs 1,000,000 "
                             "entries (higher is better)", "setups/s"),
           os.path.join(out, "blocklist.png"))


def plot_scaling(m, out):
    targets = [t for t in m.targets("scaling", list(HEADLINE)) if t != "none"]
    rows = []
    for workload in ("setups", "download", "upload", "http"):
        for c in m.levels("scaling", workload):
            rows.append((f"{workload} x{c}", [m.value("scaling", workload, c, t,
                                                      HEADLINE[workload], ratio=True)
                                              for t in targets]))
    if not rows:
        return
    line = ('set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 '
            'lc rgb "#555555"\nset label "no proxy" at graph 0.01, first 1.04')
    render(datablock("sc", ["workload"] + targets, rows) +
           clustered("sc", targets, "both cores shared: 1 vs 2 worker threads, as a ratio to "
                     "no proxy (higher is better)", "ratio to no proxy", line, ratio_top(rows)),
           os.path.join(out, "scaling.png"))


def plot_ratios(m, out):
    targets = [t for t in m.targets("main", list(HEADLINE)) if t != "none"]
    rows = []
    # The main suite, then the same workloads with the proxy on a core of its own (owncore).
    for suite, suffix in (("main", ""), ("owncore", " own core")):
        for workload in ("setups", "download", "upload", "http"):
            for c in m.levels(suite, workload):
                rows.append((f"{workload} x{c}{suffix}",
                             [m.value(suite, workload, c, t, HEADLINE[workload], ratio=True)
                              for t in targets]))
    if not rows:
        return
    lines = ('set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1 '
             'lc rgb "#555555"\n'
             'set arrow from graph 0, first 0.85 to graph 1, first 0.85 nohead dt 2 lw 2 '
             'lc rgb "#d62728"\nset label "target 0.85" at graph 0.01, first 0.89 '
             'textcolor rgb "#d62728"\nset xtics rotate by -30')
    render(datablock("r", ["workload"] + targets, rows) +
           clustered("r", targets, "every workload as a ratio to no proxy, same rounds "
                     "(higher is better; 1 = no cost)", "ratio to no proxy", lines,
                     ratio_top(rows)),
           os.path.join(out, "ratios.png"), size="1600,600")


def plot_instructions(summary, out):
    data = summary.get("instructions") or {}
    scenarios = [s for s in data.get("scenarios", []) if s.get("per_unit")]
    if not scenarios:
        return
    block = datablock("ins", ["scenario", "sandgate"],
                      [(f"per {s['unit']} ({s['name']})", [s["per_unit"]]) for s in scenarios])
    labels = "\n".join(f'set label "{s["per_unit"]:,.0f}" at {i}, first {s["per_unit"]} '
                       'center offset 0,0.8' for i, s in enumerate(scenarios))
    render(block + clustered("ins", ["sandgate"], "sandgate: user-space instructions per "
                             "operation (callgrind; lower is better)",
                             "instructions (log scale)",
                             "set logscale y\nset yrange [*:*]\nset key off\n" + labels) +
           "unset logscale y\n", os.path.join(out, "instructions.png"))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if not shutil.which("gnuplot"):
        sys.exit("plot.py: gnuplot is not installed (Debian: apt-get install gnuplot-nox)")
    summary = json.load(open(sys.argv[1], encoding="utf-8"))
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(sys.argv[1]))
    m = Medians(summary)
    plot_rate(m, out, "setups", "setups_per_s", "p99_ms", "setups.png",
              "setups (CONNECT, 32-byte echo, close)", "setups/s")
    plot_throughput(m, out)
    plot_rate(m, out, "http", "requests_per_s", "p99_ms", "http.png",
              "plain HTTP, kept-alive connections", "requests/s")
    plot_idle(m, out)
    plot_blocklist(m, out)
    plot_scaling(m, out)
    plot_ratios(m, out)
    plot_instructions(summary, out)


if __name__ == "__main__":
    main()
