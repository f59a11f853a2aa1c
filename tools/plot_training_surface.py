#!/usr/bin/python3
"""3D surfaces of an MLP training study (configs/studies/mlp_training_surface.toml): for each
machine and each layer count n, one figure of three panels over width d (x) and batch m (y):
floating-point operations per phase, time per phase, and efficiency (the step's MFU and the
forward and backward passes' utilization). Phases: setup, forward, backward, optimizer (the
loss is drawn with the backward when the study has it apart: it is one small kernel pair).

Usage: /usr/bin/python3 tools/plot_training_surface.py OUT/results.csv [OUT_DIR]
Writes OUT_DIR/mlp_surface_<machine>_n<n>.png (OUT_DIR: the folder of results.csv by default)
and prints each file it wrote. Needs Debian's python3-matplotlib.
Columns read (archsim sweep's results.csv): machine, batch, workload.layers, workload.width,
status, train_step_s, train_mfu, phase_<phase>_s, phase_<phase>_flops, phase_<phase>_utilization.
"""
import csv
import math
import os
import sys
from collections import defaultdict

PHASES = [("setup", "tab:gray"), ("forward", "tab:blue"), ("backward", "tab:orange"), ("optimizer", "tab:green")]


def number(row, key):
    """The float in column `key` of `row`, or None when absent or empty."""
    v = row.get(key, "")
    try:
        return float(v) if v != "" else None
    except ValueError:
        return None


def phase_value(row, phase, what):
    """A phase's column; the backward includes the loss (phase_loss_*) when both are there."""
    v = number(row, f"phase_{phase}_{what}")
    if v is not None and phase == "backward" and what in ("s", "flops"):
        v += number(row, f"phase_loss_{what}") or 0.0
    return v


def grid(points, ds, ms, value):
    """A len(ms) x len(ds) grid of value(row) (NaN where a point is missing or failed)."""
    z = [[math.nan] * len(ds) for _ in ms]
    for (d, m), row in points.items():
        v = value(row)
        if v is not None and v > 0:
            z[ms.index(m)][ds.index(d)] = v
    return z


def log10_grid(z):
    return [[math.log10(v) if v == v and v > 0 else math.nan for v in r] for r in z]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    out_dir = argv[2] if len(argv) > 2 else os.path.dirname(os.path.abspath(src))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        from matplotlib.patches import Patch
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        print("plot_training_surface.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    try:
        with open(src, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"plot_training_surface.py: {src}: {e.strerror}", file=sys.stderr)
        return 1
    need = ["machine", "batch", "workload.layers", "workload.width", "train_step_s"]
    missing = [c for c in need if rows and c not in rows[0]]
    if not rows or missing:
        print(f"plot_training_surface.py: {src}: not an MLP training study's results (missing columns: "
              f"{', '.join(missing) if rows else 'every row'})", file=sys.stderr)
        return 1
    by = defaultdict(dict)  # (machine, n) -> (d, m) -> row
    for r in rows:
        if r.get("status") != "ok" or number(r, "train_step_s") is None:
            continue
        by[(r["machine"], int(float(r["workload.layers"])))][(int(float(r["workload.width"])), int(float(r["batch"])))] = r
    if not by:
        print(f"plot_training_surface.py: {src}: no finished training points", file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    power = FuncFormatter(lambda v, _: f"{10 ** v:.2g}")  # the z axis holds log10 of the value
    for (machine, n), points in sorted(by.items()):
        ds = sorted({d for d, _ in points})
        ms = sorted({m for _, m in points})
        if len(ds) < 2 or len(ms) < 2:
            print(f"plot_training_surface.py: {machine}, n = {n}: a surface needs two widths and two batches; skipped",
                  file=sys.stderr)
            continue
        X, Y = np.meshgrid(np.array(ds, dtype=float), np.array(ms, dtype=float))
        fig = plt.figure(figsize=(18, 6))
        panels = [
            ("floating-point operations per step", "FLOP (log scale)", "flops", True),
            ("time per step", "time (log scale, s)", "s", True),
        ]
        for i, (title, zlabel, what, log) in enumerate(panels):
            ax = fig.add_subplot(1, 3, i + 1, projection="3d")
            for phase, colour in PHASES:
                z = grid(points, ds, ms, lambda r, p=phase, w=what: phase_value(r, p, w))
                if all(v != v for row in z for v in row):
                    continue
                ax.plot_surface(X, Y, np.array(log10_grid(z) if log else z), color=colour, alpha=0.55, linewidth=0)
            ax.zaxis.set_major_formatter(power)
            ax.set_title(title)
            ax.set_xlabel("width d")
            ax.set_ylabel("batch m")
            ax.set_zlabel(zlabel)
        ax = fig.add_subplot(1, 3, 3, projection="3d")
        effs = [("step MFU (model FLOPs / (step time x peak))", "tab:red", lambda r: number(r, "train_mfu")),
                ("forward utilization", "tab:purple", lambda r: number(r, "phase_forward_utilization")),
                ("backward utilization", "tab:brown", lambda r: number(r, "phase_backward_utilization"))]
        for _, colour, get in effs:
            z = grid(points, ds, ms, lambda r, g=get: (g(r) or 0.0) * 100)
            ax.plot_surface(X, Y, np.array(z), color=colour, alpha=0.55, linewidth=0)
        ax.set_title("efficiency")
        ax.set_xlabel("width d")
        ax.set_ylabel("batch m")
        ax.set_zlabel("% of peak FLOP/s")
        fig.legend(handles=[Patch(color=c, label=p) for p, c in PHASES] + [Patch(color=c, label=l) for l, c, _ in effs],
                   loc="lower center", ncol=7, fontsize=9)
        fig.suptitle(f"{n}-layer sigmoid MLP, one training step on {machine}: width d {ds[0]}..{ds[-1]}, batch m {ms[0]}..{ms[-1]}")
        fig.tight_layout(rect=(0, 0.06, 1, 0.95))
        dst = os.path.join(out_dir, f"mlp_surface_{machine}_n{n}.png")
        fig.savefig(dst, dpi=100)
        plt.close(fig)
        print(f"wrote {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
