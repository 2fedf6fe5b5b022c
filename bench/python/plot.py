"""Draws toolbridge-bench results (its --json document) as one PNG: a panel per scenario that has
rows. Run by `toolbridge-bench --png FILE`; needs matplotlib (scripts/setup puts it in .venv-bench).

usage: plot.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, key, x, y):
    """{label: ([x...], [y...])} over rows with numeric x and y."""
    out = {}
    for r in rows:
        if isinstance(r.get(x), (int, float)) and isinstance(r.get(y), (int, float)):
            xs, ys = out.setdefault(key(r), ([], []))
            xs.append(r[x])
            ys.append(r[y])
    return out


def lines(ax, data, xlabel, ylabel, title):
    for label, (xs, ys) in data.items():
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def bars(ax, labels, values, ylabel, title, log=False):
    ax.barh(range(len(values)), values)
    ax.set_yticks(range(len(values)), labels, fontsize=7)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", which="both", alpha=0.3)


def panels(doc):
    tables = {t["scenario"]: t["rows"] for t in doc.get("tables", []) if t.get("rows")}
    out = []  # each panel binds its rows now (rows=rows): the name is reused below
    if "overhead" in tables:
        rows = tables["overhead"]
        out.append(lambda ax, rows=rows: lines(ax, {**series(rows, lambda r: f"{r['mode']} p50", "conc", "p50 µs"),
                                         **series(rows, lambda r: f"{r['mode']} p99", "conc", "p99 µs")},
                                    "concurrency", "µs", "overhead: echo latency, gateway vs direct stdio"))
        out.append(lambda ax, rows=rows: lines(ax, series(rows, lambda r: r["mode"], "conc", "calls/s"),
                                    "concurrency", "calls/s", "overhead: throughput"))
    if "peers" in tables:
        rows = tables["peers"]
        out.append(lambda ax, rows=rows: lines(ax, series(rows, lambda r: f"{r['gateway']} {r['mode'].split(':')[0]}",
                                               "conc", "calls/s"),
                                    "concurrency", "calls/s", "peers: echo throughput per gateway"))
    if "rollout" in tables:
        rows = [r for r in tables["rollout"] if isinstance(r.get("overhead %"), (int, float))]
        out.append(lambda ax, rows=rows: bars(ax, [f"{r['tool layer']} ({r['client']})" for r in rows],
                                   [max(r["overhead %"], 0.01) for r in rows],
                                   "tool-layer overhead, % of makespan (log)", "rollout", log=True))
    if "spawn-per-call" in tables:
        rows = [r for r in tables["spawn-per-call"] if isinstance(r.get("mean ms"), (int, float))]
        out.append(lambda ax, rows=rows: bars(ax, [f"{r['server']}: {r['mode']}" for r in rows], [r["mean ms"] for r in rows],
                                   "ms per call (log)", "spawn-per-call", log=True))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    draw = panels(doc)
    if not draw:
        sys.exit("plot.py: no scenario with rows to draw")
    cols = 2 if len(draw) > 1 else 1
    rows = (len(draw) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.2 * rows), squeeze=False)
    for ax, fn in zip(axes.flat, draw):
        fn(ax)
    for ax in list(axes.flat)[len(draw):]:
        ax.axis("off")
    m = doc.get("machine", {})
    fig.suptitle(f"toolbridge-bench {m.get('mode', '')} run on {m.get('host', '?')} "
                 f"({m.get('cpus', '?')} CPUs, {m.get('kernel', '')})", fontsize=11)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
