#!/usr/bin/python3
"""Plots an `archsim sweep` output folder and writes a self-contained report.html.

Reads OUT/results.h5 (h5py) and, for the rooflines, each point's OUT/points/<id>/metrics.json and
machine.toml (kept with --traces summary or full). Writes into OUT/plots/ as PNG and SVG:
  latency_energy      latency vs energy of one run (the whole batch), one marker per machine, labelled
  <metric>_vs_<axis>  each metric against each numeric axis, one line per model (and machine)
  roofline_<machine>  a roofline per machine (peak FLOP/s, DRAM bandwidth) with every operator
                      of every point placed on it by arithmetic intensity and achieved FLOP/s
  energy_breakdown    energy of one run by component, stacked, one bar per point
and OUT/report.html: the results table, the Pareto front of latency vs energy and every plot
embedded (base64 PNG), viewable offline.

Usage: /usr/bin/python3 tools/plot_sweep.py OUT [--where KEY=VALUE ...]
Needs Debian's python3-h5py, python3-numpy and python3-matplotlib (tools/install-deps).
"""
import base64
import html
import json
import math
import os
import re
import sys
import tomllib

METRICS = [("latency_s", "latency of one run, whole batch (s)"), ("energy_j", "energy of one run, whole batch (J)"),
           ("throughput_per_s", "throughput (inferences/s)"), ("utilization", "MAC utilization")]
FIXED = {"index", "id", "model", "machine", "kind", "runtime", "status", "latency_s", "throughput_per_s", "energy_j", "macs",
         "utilization", "stall_share", "peak_macs_per_cycle", "clock_hz", "trace", "error"}


def load(out):
    import h5py
    import numpy as np

    with h5py.File(os.path.join(out, "results.h5"), "r") as f:
        g = f["results"]
        cols = g.attrs["columns"]
        cols = cols.decode() if isinstance(cols, bytes) else cols
        names = cols.split("\n")
        data = {}
        for n in names:
            v = g[n][()]
            if v.dtype.kind in "OSU":
                data[n] = [x.decode() if isinstance(x, bytes) else str(x) for x in v]
            else:
                data[n] = [float(x) for x in np.asarray(v)]
        study = g.attrs["study"]
        study = study.decode() if isinstance(study, bytes) else study
        axes = g.attrs.get("axes")  # written by archsim since the declared metrics; older files: guess
    rows = [{n: data[n][i] for n in names} for i in range(len(data["index"]))]
    if axes is not None:
        axes = axes.decode() if isinstance(axes, bytes) else axes
        axes = [a for a in axes.split("\n") if a]
    else:
        axes = [n for n in names if n not in FIXED and not n.startswith("traffic_") and not n.startswith("energy_")]
    return study, names, rows, axes


def matches(row, where):
    for cond in where:
        key, _, val = cond.partition("=")
        if str(row.get(key, "")) != val and not (isinstance(row.get(key), float) and _num(val) == row.get(key)):
            return False
    return True


def _num(v):
    try:
        return float(v)
    except ValueError:
        return None


def pareto(rows):
    """Per model, the points no other point of that model beats on both latency and energy, by
    increasing latency (machines compete on the same workload)."""
    front = []
    for model in sorted({r["model"] for r in rows}):
        best = math.inf
        for r in sorted((r for r in rows if r["model"] == model), key=lambda r: (r["latency_s"], r["energy_j"])):
            if r["energy_j"] < best:
                front.append(r)
                best = r["energy_j"]
    return front


def label(row, axes):
    parts = [row["machine"], row["model"]] + [f"{a}={_fmt_axis(row[a])}" for a in axes if row.get(a) not in ("", None)
                                              and not (isinstance(row[a], float) and math.isnan(row[a]))]
    return " ".join(parts)


def _fmt_axis(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:g}"
    return str(v)


def save(fig, plots, name):
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(plots, f"{name}.{ext}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        paths.append(p)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return paths[0]


def plot_scatter(rows, axes, plots):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    machines = sorted({r["machine"] for r in rows})
    markers = "osD^v<>ph*"
    for i, m in enumerate(machines):
        pts = [r for r in rows if r["machine"] == m]
        ax.scatter([r["latency_s"] * 1e3 for r in pts], [r["energy_j"] * 1e3 for r in pts], marker=markers[i % len(markers)],
                   label=m)
        if len(rows) <= 40:
            for r in pts:
                ax.annotate(r["model"], (r["latency_s"] * 1e3, r["energy_j"] * 1e3), fontsize=7, alpha=0.7)
    front = pareto(rows)
    for i, model in enumerate(sorted({r["model"] for r in front})):
        pts = [r for r in front if r["model"] == model]
        ax.plot([r["latency_s"] * 1e3 for r in pts], [r["energy_j"] * 1e3 for r in pts], "k--", lw=0.8,
                label="Pareto front per model" if i == 0 else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency, whole batch (ms)")
    ax.set_ylabel("energy, whole batch (mJ)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, plots, "latency_energy")


def plot_axes(rows, axes, plots):
    import matplotlib.pyplot as plt

    out = []
    for a in axes:
        if not all(isinstance(r.get(a), float) for r in rows):
            continue
        vals = {r[a] for r in rows if not math.isnan(r[a])}
        if len(vals) < 2:
            continue
        others = [o for o in axes if o != a]
        for key, title in METRICS:
            fig, ax = plt.subplots(figsize=(6, 4))
            # one line per model and machine, with every other axis held at one value
            groups = {}
            for r in rows:
                if math.isnan(r[a]) if isinstance(r[a], float) else False:
                    continue
                held = tuple(_fmt_axis(r.get(o, "")) for o in others)
                groups.setdefault((r["model"], r["machine"], held), []).append((r[a], r[key]))
            one_machine = len({g[1] for g in groups}) == 1
            for (model, m, held), pts in sorted(groups.items()):
                pts.sort()
                extra = ", ".join(f"{o}={v}" for o, v in zip(others, held) if v)
                name = model if one_machine else f"{model} ({m})"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name + (f" [{extra}]" if extra else ""))
            ax.set_xlabel(a)
            if min(vals) > 0 and max(vals) / min(vals) >= 8:
                ax.set_xscale("log", base=2)
            ax.set_ylabel(title)
            if key in ("latency_s", "energy_j", "throughput_per_s"):
                ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
            out.append(save(fig, plots, f"{key}_vs_" + re.sub("[^A-Za-z0-9]+", "_", a)))
    return out


def roofline_points(out, row):
    """(peak FLOP/s, DRAM B/s, [(AI, achieved FLOP/s)]) of one point, or None without its files."""
    d = os.path.join(out, "points", row["id"])
    try:
        with open(os.path.join(d, "metrics.json")) as f:
            m = json.load(f)
        with open(os.path.join(d, "machine.toml"), "rb") as f:
            cfg = tomllib.load(f)
    except OSError:
        return None
    peak = 2 * m["total"]["peak_macs_per_cycle"] * m["clock_hz"]
    bw = float(cfg.get("dram", {}).get("bandwidth_gbps", 0)) * 1e9
    ops = []
    for o in m["ops"]:
        dram = o.get("traffic_bytes", {}).get("dram", 0)
        if o["macs"] > 0 and o["latency_s"] > 0 and dram > 0:
            ops.append((2 * o["macs"] / dram, 2 * o["macs"] / o["latency_s"]))
    return peak, bw, ops


def plot_rooflines(out, rows, plots):
    import matplotlib.pyplot as plt

    made, missing = [], []
    for m in sorted({r["machine"] for r in rows}):
        pts = [(r, roofline_points(out, r)) for r in rows if r["machine"] == m]
        pts = [(r, p) for r, p in pts if p]
        if not pts:
            missing.append(m)
            continue
        fig, ax = plt.subplots(figsize=(6, 4.5))
        peak = max(p[0] for _, p in pts)
        bw = max(p[1] for _, p in pts)
        xs = [x for _, p in pts for x, _ in p[2]] or [1.0]
        lo, hi = min(xs + [peak / bw if bw else 1]) / 4, max(xs + [peak / bw if bw else 1]) * 4
        grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        if bw > 0:
            ax.plot(grid, [min(peak, bw * x) for x in grid], "k-", lw=1.2, label=f"roof: {peak / 1e12:.1f} TFLOP/s, {bw / 1e9:.0f} GB/s")
        for model in sorted({r["model"] for r, _ in pts}):
            ai = [x for r, p in pts if r["model"] == model for x, _ in p[2]]
            perf = [y for r, p in pts if r["model"] == model for _, y in p[2]]
            ax.scatter(ai, perf, s=10, alpha=0.6, label=model)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
        ax.set_ylabel("achieved FLOP/s")
        ax.set_title(f"{m}: every operator of every point")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        made.append(save(fig, plots, f"roofline_{m}"))
    return made, missing


def plot_energy(rows, axes, plots):
    import matplotlib.pyplot as plt

    parts = sorted({k[len("energy_"):-2] for r in rows for k in r if k.startswith("energy_") and k.endswith("_j")})
    parts = [p for p in parts if any(r.get(f"energy_{p}_j", 0) > 0 for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(rows)), 4.5))
    bottom = [0.0] * len(rows)
    for p in parts:
        vals = [r.get(f"energy_{p}_j", 0) * 1e3 for r in rows]
        ax.bar(range(len(rows)), vals, bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([label(r, axes) for r in rows], rotation=75, ha="right", fontsize=6)
    ax.set_ylabel("energy, whole batch (mJ)")
    ax.legend(fontsize=7)
    return save(fig, plots, "energy_breakdown")


def table_html(rows, axes, title):
    head = ["machine", "model"] + axes + ["latency ms", "inferences/s", "energy mJ", "utilization", "DRAM MiB"]
    out = [f"<h2>{html.escape(title)}</h2><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cells = [r["machine"], r["model"]] + [_fmt_axis(r.get(a, "")) for a in axes]
        cells += [f"{r['latency_s'] * 1e3:.4g}", f"{r['throughput_per_s']:.4g}", f"{r['energy_j'] * 1e3:.4g}",
                  f"{100 * r['utilization']:.1f}%", f"{r.get('traffic_dram_bytes', 0) / 2**20:.1f}"]
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</table>"


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    where = [argv[i + 1] for i in range(2, len(argv) - 1) if argv[i] == "--where"]
    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        print("plot_sweep.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    try:
        study, names, rows, axes = load(out)
    except (OSError, KeyError) as e:
        print(f"plot_sweep.py: {out}/results.h5: {e}", file=sys.stderr)
        return 1
    failed = [r for r in rows if r["status"] != "ok"]
    rows = [r for r in rows if r["status"] == "ok" and matches(r, where)]
    if not rows:
        print(f"plot_sweep.py: {out}: no finished point matches", file=sys.stderr)
        return 1
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    images = [plot_scatter(rows, axes, plots)] + plot_axes(rows, axes, plots)
    roofs, missing = plot_rooflines(out, rows, plots)
    images += roofs + [plot_energy(rows, axes, plots)]

    body = [f"<h1>archsim sweep: {html.escape(study)}</h1>",
            f"<p>{len(rows)} finished points shown" + (f" (filter: {html.escape(' '.join(where))})" if where else "") +
            f", {len(failed)} failed.</p>"]
    body.append(table_html(sorted(rows, key=lambda r: r["latency_s"]), axes, "Results (by latency)"))
    body.append(table_html(pareto(rows), axes, "Pareto front per model: latency vs energy"))
    if missing:
        body.append("<p>No roofline for " + html.escape(", ".join(missing)) +
                    ": its points kept no metrics.json (run the sweep with --traces summary or full).</p>")
    for img in images:
        with open(img, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        body.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(os.path.basename(img))}'>"
                    f"<figcaption>{html.escape(os.path.basename(img)[:-4])}</figcaption></figure>")
    if failed:
        body.append("<h2>Failed points</h2><ul>" + "".join(
            f"<li>{html.escape(r['machine'])} {html.escape(r['model'])}: {html.escape(r['error'])}</li>" for r in failed) + "</ul>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;font-size:12px;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}th{background:#eee}img{max-width:100%}"
             "figure{margin:1.5em 0}")
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(study)}</title><style>{style}</style></head>" \
           f"<body>{''.join(body)}</body></html>"
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(page)
    print(f"plot_sweep.py: wrote {len(images)} plots to {plots} and {os.path.join(out, 'report.html')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
