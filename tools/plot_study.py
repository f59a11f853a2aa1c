#!/usr/bin/python3
"""Plots a study's results.csv (`archsim compare` or `archsim sweep`): latency and energy per
inference against fabric size (peak MACs per cycle), one line per model.

Usage: /usr/bin/python3 tools/plot_study.py OUT/results.csv [PLOT.png]
Needs Debian's python3-matplotlib (apt-get install python3-matplotlib; not part of CI).
"""
import csv
import sys
from collections import defaultdict


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    dst = argv[2] if len(argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_study.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    try:
        with open(src, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("status") == "ok"]
    except OSError as e:
        print(f"plot_study.py: {src}: {e.strerror}", file=sys.stderr)
        return 1
    if not rows:
        print(f"plot_study.py: {src}: no finished points", file=sys.stderr)
        return 1

    by_model = defaultdict(list)
    for r in rows:
        by_model[r["model"]].append(r)
    fig, (ax_lat, ax_en) = plt.subplots(1, 2, figsize=(12, 4.8))
    import re
    scan = re.compile(r"^\d+x\d+$")  # scan points ("8x8") are joined by lines; named design points are markers
    for model, pts in sorted(by_model.items()):
        pts.sort(key=lambda r: float(r["peak_macs_per_cycle"]))
        line_pts = [r for r in pts if scan.match(r["machine"])]
        named = [r for r in pts if not scan.match(r["machine"])]
        color = None
        for ax, key in ((ax_lat, "latency_s"), (ax_en, "energy_j")):  # plotted in ms and mJ
            if line_pts:
                line, = ax.plot([float(r["peak_macs_per_cycle"]) for r in line_pts], [1e3 * float(r[key]) for r in line_pts],
                                marker="o", color=color, label=f"{model} (square fabrics)")
                color = line.get_color()
            if named:
                sc = ax.scatter([float(r["peak_macs_per_cycle"]) for r in named], [1e3 * float(r[key]) for r in named],
                                marker="D", color=color, zorder=3)
                color = color or sc.get_facecolor()[0]
                for r in named:
                    ax.annotate(r["machine"], (float(r["peak_macs_per_cycle"]), 1e3 * float(r[key])), fontsize=7,
                                xytext=(4, -9), textcoords="offset points")
    for ax, title, unit in ((ax_lat, "latency per inference", "ms"), (ax_en, "energy per inference", "mJ")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("fabric peak MACs per cycle (PEs x MACs per PE)")
        ax.set_ylabel(f"{title} ({unit})")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    ax_lat.legend(fontsize=8)
    fig.suptitle(f"archsim study: {src}")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
