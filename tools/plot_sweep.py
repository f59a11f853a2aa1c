#!/usr/bin/python3
"""Plots one or more `archsim sweep` output folders and writes a self-contained report.html.

Reads each OUT/results.h5 (h5py) and, for the rooflines, each point's OUT/points/<id>/metrics.json
and machine.toml (kept with --traces summary, the default, or full). Writes into PLOTS (OUT/plots/,
or --out DIR/plots for several studies) as PNG and SVG (text kept as text), every plot with a
title, axis labels in the units of docs/units.md and a legend naming every series:
  latency_energy      latency vs energy of one run (whole batch): colour = machine, marker = model,
                      each point labelled with its swept values, the Pareto front per model
  <metric>_vs_<axis>  each metric against each numeric axis, one line per model, machine and the
                      other axes' values; machines that do not sweep the axis (published design
                      points, e.g. T64/T256 on a fabric-size axis) are stars at their own value
  roofline_<machine>  a roofline per machine: one roof per distinct peak and DRAM bandwidth (a
                      swept fabric draws each size's roof), every operator of every point on it
  energy_breakdown    energy of one run per point (log axis) and its split by component (%)
and OUT/report.html: the results table (a `study` column for several studies), the Pareto front,
and every plot embedded (base64 PNG) with its title as caption, viewable offline; PLOTS/captions.json
holds each plot's caption (tools/make_gallery builds docs/gallery/ from it).

Usage: /usr/bin/python3 tools/plot_sweep.py OUT [OUT2 ...] [--out DIR] [--where KEY=VALUE ...] [--dpi N]
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archsim_units as U  # noqa: E402  (the unit policy, docs/units.md)

FIXED = {"index", "id", "model", "machine", "kind", "runtime", "status", "latency_s", "throughput_per_s", "energy_j", "macs",
         "utilization", "stall_share", "peak_macs_per_cycle", "clock_hz", "trace", "error", "study", "precision", "batch"}
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
MARKERS = "osD^v<>phX*"
DPI = 110  # --dpi: the PNGs' resolution (the SVGs are resolution-free)


# ---- input -----------------------------------------------------------------------------------

def load(out):
    """(study name, rows, axis keys) of one sweep folder; every row a dict of its columns."""
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
    for r in rows:
        r["study"] = study
        r["_out"] = out
        for a in axes:  # a column holding "16" and "32x24" is text: numbers back where they are numbers
            if isinstance(r.get(a), str) and _num(r[a]) is not None:
                r[a] = _num(r[a])
    return study, rows, axes


def matches(row, where):
    for cond in where:
        key, _, val = cond.partition("=")
        if str(row.get(key, "")) != val and not (isinstance(row.get(key), float) and _num(val) == row.get(key)):
            return False
    return True


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _numeric(v):
    return isinstance(v, float) and not math.isnan(v)


def _fmt_axis(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:g}"
    return "" if v is None else str(v)


def axis_title(a):
    """A zipped axis "array.rows,array.cols" reads "array.rows = array.cols"."""
    return " = ".join(a.split(","))


def varying(rows, axes):
    """The axes whose value differs between rows (the ones worth naming in a label)."""
    return [a for a in axes if len({_fmt_axis(r.get(a)) for r in rows}) > 1]


def label(row, axes, with_study=False):
    """machine, model and the values of `axes`: "T256 resnet50 tiles=16"."""
    parts = ([row["study"]] if with_study else []) + [row["machine"], row["model"]]
    parts += [f"{axis_title(a)} = {_fmt_axis(row[a])}" for a in axes if _fmt_axis(row.get(a))]
    return " ".join(parts)


def per_sample_j(r):
    """Energy per sample (the sweep's energy_per_inference_j; energy_j in results written before it)."""
    return r.get("energy_per_inference_j", r["energy_j"])


def pareto(rows):
    """Per model, the points no other point of that model beats on both latency and energy per
    sample, by increasing latency (machines compete on the same workload; per sample, so that
    points of different batch sizes compare)."""
    front = []
    for model in sorted({r["model"] for r in rows}):
        best = math.inf
        for r in sorted((r for r in rows if r["model"] == model), key=lambda r: (r["latency_s"], per_sample_j(r))):
            if per_sample_j(r) < best:
                front.append(r)
                best = per_sample_j(r)
    return front


def natural(text):
    """Sort key that orders embedded numbers by value: w512 < w1024 < w16384."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(text)) if t]


class Style:
    """Colour by machine (or study and machine when several studies share a report), marker by model."""

    def __init__(self, rows, axes=()):
        self.multi = len({r["study"] for r in rows}) > 1
        self.machines = sorted({self.machine(r) for r in rows})
        self.models = sorted({r["model"] for r in rows}, key=natural)
        # one machine and one model: colour by the swept axis with the fewest values (2 to 10)
        self.by_axis, self.axis_values = None, []
        if len(self.machines) == 1 and len(self.models) == 1:
            counts = [(len({_fmt_axis(r.get(a)) for r in rows}), a) for a in axes]
            counts = [c for c in counts if 2 <= c[0] <= 10]
            if counts:
                self.by_axis = min(counts)[1]
                self.axis_values = sorted({_fmt_axis(r.get(self.by_axis)) for r in rows}, key=natural)

    def machine(self, r):
        return f"{r['machine']} ({r['study']})" if self.multi else r["machine"]

    def colour(self, r):
        if self.by_axis:
            return COLOURS[self.axis_values.index(_fmt_axis(r.get(self.by_axis))) % len(COLOURS)]
        if len(self.machines) == 1:  # one machine: colour by model, so the colour says something
            return COLOURS[self.models.index(r["model"]) % len(COLOURS)]
        return COLOURS[self.machines.index(self.machine(r)) % len(COLOURS)]

    def marker(self, r):
        return MARKERS[self.models.index(r["model"]) % len(MARKERS)]

    def legends(self, ax, extra=None):
        """Two legends: colours name the machines, markers the models; `extra` handles after."""
        from matplotlib.lines import Line2D
        if self.by_axis:
            h = [Line2D([], [], color=COLOURS[i % len(COLOURS)], marker=MARKERS[0], ls="", label=v) for i, v in enumerate(self.axis_values)]
            ax.legend(handles=h + (extra or []), title=f"{axis_title(self.by_axis)} ({self.models[0]} on {self.machines[0]})", fontsize=7,
                      title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            return
        if len(self.machines) == 1:  # colour and marker both by model
            oh = [Line2D([], [], color=COLOURS[i % len(COLOURS)], marker=MARKERS[i % len(MARKERS)], ls="", label=m)
                  for i, m in enumerate(self.models)]
            ax.legend(handles=oh + (extra or []), title=f"model (on {self.machines[0]})", fontsize=7, title_fontsize=7,
                      loc="upper left", bbox_to_anchor=(1.01, 1.0))
            return
        mh = [Line2D([], [], color=COLOURS[i % len(COLOURS)], marker="o", ls="", label=m) for i, m in enumerate(self.machines)]
        oh = [Line2D([], [], color="0.3", marker=MARKERS[i % len(MARKERS)], ls="", label=m) for i, m in enumerate(self.models)]
        first = ax.legend(handles=mh + (extra or []), title="machine", fontsize=7, title_fontsize=7, loc="upper left",
                          bbox_to_anchor=(1.01, 1.0))
        ax.add_artist(first)
        ax.legend(handles=oh, title="model", fontsize=7, title_fontsize=7, loc="lower left", bbox_to_anchor=(1.01, 0.0))


def place_labels(fig, ax, points, fontsize=6.5):
    """Labels `points` [(x, y, text, colour)] next to their markers without overlapping each other:
    each takes the first of eight offsets whose box is clear; a label with no clear spot is left
    out. Returns how many were left out."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    placed, dropped = [], 0
    offsets = [(5, 4), (5, -11), (-8, 6), (-8, -12), (8, 14), (8, -20), (-12, 16), (-12, -22)]
    for x, y, text, colour in points:
        ok = False
        for dx, dy in offsets:
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, color=colour,
                              ha="left" if dx > 0 else "right")
            box = ann.get_window_extent(renderer).expanded(1.02, 1.1)
            if not any(box.overlaps(b) for b in placed):
                placed.append(box)
                ok = True
                break
            ann.remove()
        dropped += not ok
    return dropped


# what every plot says about the points' precision (set by main from the rows shown)
PRECISION_NOTE = ""


def save(fig, plots, name, title, captions):
    from matplotlib.legend import Legend
    if PRECISION_NOTE:
        fig.text(0.01, 0.0, PRECISION_NOTE, fontsize=7, ha="left", va="top")
        title += f" ({PRECISION_NOTE})"
    # every legend (those added as artists too) and the usual extras (a suptitle) inside the saved box
    legends = fig.get_default_bbox_extra_artists() + [x for x in fig.findobj(Legend)]
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(plots, f"{name}.{ext}")
        fig.savefig(p, dpi=DPI, bbox_inches="tight", bbox_extra_artists=legends)
        paths.append(p)
    import matplotlib.pyplot as plt
    plt.close(fig)
    captions[paths[0]] = title
    return paths[0]


def prefix(rows):
    studies = sorted({r["study"] for r in rows})
    return " + ".join(studies)


# ---- plots -----------------------------------------------------------------------------------

def plot_scatter(rows, axes, plots, captions):
    import matplotlib.pyplot as plt

    st = Style(rows, varying(rows, axes))
    vary = varying(rows, axes)
    tu = U.time_unit([r["latency_s"] for r in rows])
    eu = U.energy_unit([per_sample_j(r) for r in rows])
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for r in rows:
        ax.scatter(r["latency_s"] * tu[1], per_sample_j(r) * eu[1], color=st.colour(r), marker=st.marker(r), s=28, zorder=3)
    front = pareto(rows)
    from matplotlib.lines import Line2D
    for model in sorted({r["model"] for r in front}):
        pts = [r for r in front if r["model"] == model]
        ax.plot([r["latency_s"] * tu[1] for r in pts], [per_sample_j(r) * eu[1] for r in pts], "k--", lw=0.7, zorder=2)
    if U.spans_decades([r["latency_s"] for r in rows]):
        ax.set_xscale("log")
    if U.spans_decades([per_sample_j(r) for r in rows]):
        ax.set_yscale("log")
    ax.set_xlabel(f"latency of one run, whole batch ({tu[0]})")
    ax.set_ylabel(f"energy per sample ({eu[0]})")
    title = f"{prefix(rows)}: latency vs energy per sample"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    st.legends(ax, [Line2D([], [], color="k", ls="--", lw=0.7, label="Pareto front per model")])
    dropped = 0
    labelled = bool(vary) and len(rows) <= 60
    if labelled:
        dropped = place_labels(fig, ax, [(r["latency_s"] * tu[1], per_sample_j(r) * eu[1],
                                          " ".join(_fmt_axis(r[a]) for a in vary if _fmt_axis(r.get(a))), st.colour(r)) for r in rows])
        ax.text(0.99, 0.01, "point labels: " + ", ".join(axis_title(a) for a in vary), transform=ax.transAxes, ha="right", va="bottom",
                fontsize=7, color="0.3")
    note = f"; points labelled with {', '.join(axis_title(a) for a in vary)}" if labelled else ""
    if st.by_axis:
        note += f"; colour: {axis_title(st.by_axis)}"
    if dropped:
        note += f" ({dropped} crowded labels left out: the table has every point)"
    return save(fig, plots, "latency_energy", title + note, captions)


METRICS = [("latency_s", "latency", "latency of one run, whole batch", "s"), ("energy_j", "energy", "energy of one run, whole batch", "J"),
           ("throughput_per_s", "throughput", "throughput", "inferences/s"), ("utilization", "MAC utilization", "MAC utilization", "%")]


def _scaled(key, unit_kind, values):
    """(axis label unit, scale) for a metric by the unit policy."""
    if unit_kind == "s":
        return U.time_unit(values)
    if unit_kind == "J":
        return U.energy_unit(values)
    if unit_kind == "%":
        return "%", 100.0
    return unit_kind, 1.0


def plot_axes(rows, axes, plots, captions):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    out = []
    st = Style(rows)
    for a in axes:
        on_axis = [r for r in rows if _numeric(r.get(a))]
        vals = sorted({r[a] for r in on_axis})
        if len(vals) < 2:
            continue
        # a machine whose every row holds one value of `a` while others sweep it: a design point
        per_machine = {}
        for r in on_axis:
            per_machine.setdefault(st.machine(r), set()).add(r[a])
        swept = {m for m, v in per_machine.items() if len(v) > 1}
        if not swept:
            continue
        design = [r for r in on_axis if st.machine(r) not in swept]
        off_axis = sorted({st.machine(r) for r in rows if not _numeric(r.get(a)) and _fmt_axis(r.get(a))})
        others = [o for o in axes if o != a]
        by_model = len(swept) == 1  # one swept machine: colour by model (its markers stay by model too)
        model_colour = {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(st.models)}
        colour = (lambda r: model_colour[r["model"]]) if by_model else st.colour
        # too many combinations of the other axes for one legend: hold each at its middle value
        held_note = ""
        combos = {tuple(_fmt_axis(r.get(o, "")) for o in others) for r in on_axis if st.machine(r) in swept}
        if len(combos) > 8:
            keep = {}
            for o in others:
                vs = sorted({r.get(o) for r in on_axis if _fmt_axis(r.get(o))}, key=lambda v: (0, v, "") if _numeric(v) else (1, 0.0, str(v)))
                if len(vs) > 1:
                    keep[o] = vs[len(vs) // 2]
            on_axis = [r for r in on_axis if all(r.get(o) == v for o, v in keep.items()) or st.machine(r) not in swept]
            held_note = "; other axes held at " + ", ".join(f"{axis_title(o)} = {_fmt_axis(v)}" for o, v in keep.items())
        for key, short, what, unit_kind in METRICS:
            unit, scale = _scaled(key, unit_kind, [r[key] for r in on_axis])
            fig, ax = plt.subplots(figsize=(7.5, 4.5))
            groups = {}
            for r in on_axis:
                if st.machine(r) not in swept:
                    continue
                held = tuple(_fmt_axis(r.get(o, "")) for o in others)
                groups.setdefault((r["model"], st.machine(r), held), []).append(r)
            held_values = sorted({g[2] for g in groups})
            styles = ["-", "--", ":", "-."]
            for (model, m, held), pts in sorted(groups.items(), key=lambda g: (natural(g[0][0]), g[0][1], g[0][2])):
                pts.sort(key=lambda r: r[a])
                r0 = pts[0]
                extra = ", ".join(f"{axis_title(o)}={v}" for o, v in zip(others, held)
                                  if v and len({h[others.index(o)] for h in held_values}) > 1)
                ax.plot([r[a] for r in pts], [r[key] * scale for r in pts], marker=st.marker(r0), color=colour(r0), ms=4, lw=1.1,
                        ls=styles[held_values.index(held) % len(styles)], label=f"{model} on {m}" + (f", {extra}" if extra else ""))
            # published design points: a star at their own value, in their model's colour, named
            # by their machine beside it
            named = set()
            for r in design:
                ax.scatter(r[a], r[key] * scale, marker="*", s=120, color=colour(r) if by_model else st.colour(r), edgecolor="k",
                           linewidth=0.6, zorder=4)
                if (st.machine(r), r[a]) not in named:
                    named.add((st.machine(r), r[a]))
                    top = max((x for x in design if st.machine(x) == st.machine(r)), key=lambda x: x[key])
                    ax.annotate(st.machine(r), (top[a], top[key] * scale), xytext=(6, 6), textcoords="offset points", fontsize=8,
                                fontweight="bold")
            if design:
                from matplotlib.lines import Line2D
                ax.plot([], [], ls="", marker="*", ms=10, markerfacecolor="w", markeredgecolor="k",
                        label="design points: " + ", ".join(sorted({f"{st.machine(r)} at {_fmt_axis(r[a])}" for r in design})))
            ax.set_xlabel(axis_title(a))
            ratios = sorted(b / x for x, b in zip(vals, vals[1:]) if x > 0)
            if min(vals) > 0 and max(vals) / min(vals) >= 8 and ratios and ratios[len(ratios) // 2] >= 1.5:
                ax.set_xscale("log", base=2)  # geometric steps (2, 4, 8, ...): equal spacing
            # the swept values themselves as ticks, plain numbers; at most about eight labelled
            step = max(1, math.ceil(len(vals) / 8))
            ax.xaxis.set_major_locator(FixedLocator(vals[::step]))
            ax.xaxis.set_minor_locator(FixedLocator(vals) if step > 1 else NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_ylabel(f"{what} ({unit})")
            if key != "utilization" and U.spans_decades([r[key] for r in on_axis]):
                ax.set_yscale("log")
            title = f"{prefix(rows)}: {short} against {axis_title(a)}"
            ax.set_title(title, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            handles, labels = ax.get_legend_handles_labels()
            ax.legend(handles, labels, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 if len(labels) <= 18 else 2,
                      title=("held at " + held_note[len("; other axes held at "):]) if held_note else None, title_fontsize=6.5)
            note = held_note + (f"; stars: machines that do not sweep {axis_title(a)}, at their own value" if design else "")
            if off_axis:
                note += f"; not on this axis: {', '.join(off_axis)} (no single value of it, see the table)"
            out.append(save(fig, plots, f"{key}_vs_" + re.sub("[^A-Za-z0-9]+", "_", a), title + note, captions))
    return out


def roofline_points(row):
    """(peak ops/s, DRAM B/s, precision, [(AI, achieved ops/s)]) of one point, or None without its files."""
    d = os.path.join(row["_out"], "points", row["id"])
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
    return peak, bw, m.get("precision", ""), ops


def plot_rooflines(rows, axes, plots, captions):
    import matplotlib.pyplot as plt

    made, missing = [], []
    st = Style(rows)
    for m in st.machines:
        pts = [(r, roofline_points(r)) for r in rows if st.machine(r) == m]
        pts = [(r, p) for r, p in pts if p]
        if not pts:
            missing.append(m)
            continue
        base = U.rate_base(pts[0][1][2])
        all_perf = [y for _, p in pts for _, y in p[3]] + [p[0] for _, p in pts]
        unit, scale = U.count_unit(all_perf, base)
        fig, ax = plt.subplots(figsize=(7.5, 5))
        roofs = sorted({(p[0], p[1]) for _, p in pts})
        xs = [x for _, p in pts for x, _ in p[3]] or [1.0]
        ridges = [pk / bw for pk, bw in roofs if bw > 0]
        lo, hi = min(xs + ridges) / 4, max(xs + ridges) * 4
        grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        vary = varying([r for r, _ in pts], axes)
        op_word = "op" if base == "OPS" else "FLOP"
        from matplotlib.lines import Line2D
        handles = []
        for i, (pk, bw) in enumerate(roofs):
            own = [r for r, p in pts if (p[0], p[1]) == (pk, bw)]
            name = ", ".join(f"{axis_title(a)} = {_fmt_axis(own[0][a])}" for a in vary if len({_fmt_axis(r[a]) for r in own}) == 1)
            colour = COLOURS[i % len(COLOURS)] if len(roofs) > 1 else "k"
            if bw > 0:
                line, = ax.plot(grid, [min(pk, bw * x) * scale for x in grid], "-", color=colour, lw=1.2,
                                label=(f"{name}: " if name and len(roofs) > 1 else "roof: ") +
                                f"{U.sig(pk * scale)} {unit}, {U.sig(bw / 1e9)} GB/s")
                handles.append(line)
            for model in sorted({r["model"] for r in own}):
                ai = [x for r, p in pts if r["model"] == model and (p[0], p[1]) == (pk, bw) for x, _ in p[3]]
                perf = [y * scale for r, p in pts if r["model"] == model and (p[0], p[1]) == (pk, bw) for _, y in p[3]]
                ax.scatter(ai, perf, s=9, alpha=0.55, marker=st.marker({"model": model}),
                           color=colour if len(roofs) > 1 else COLOURS[st.models.index(model) % len(COLOURS)])
        # the roofs by colour, then the models by marker (and by colour when there is one roof)
        for model in sorted({r["model"] for r, _ in pts}):
            handles.append(Line2D([], [], ls="", marker=st.marker({"model": model}), ms=5, label=model,
                                  color="0.35" if len(roofs) > 1 else COLOURS[st.models.index(model) % len(COLOURS)]))
        ax.legend(handles=handles, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"arithmetic intensity ({op_word}s per DRAM byte)")
        ax.set_ylabel(f"achieved ({unit})")
        title = f"{prefix(rows)}: roofline of {m}, every operator of every point"
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        note = f"; one roof per {', '.join(axis_title(a) for a in vary)} value" if len(roofs) > 1 else ""
        made.append(save(fig, plots, "roofline_" + re.sub("[^A-Za-z0-9]+", "_", m), title + note, captions))
    return made, missing


def plot_energy(rows, axes, plots, captions):
    import matplotlib.pyplot as plt

    st = Style(rows)
    parts = sorted({k[len("energy_"):-2] for r in rows for k in r if k.startswith("energy_") and k.endswith("_j")})
    parts = [p for p in parts if any((r.get(f"energy_{p}_j") or 0) > 0 for r in rows)]

    def axis_key(v):  # numbers in numeric order (2, 4, 8, 16), then text
        return (0, v, "") if _numeric(v) else (1, 0.0, _fmt_axis(v))

    vary = varying(rows, axes)
    subset_note = ""
    if len(rows) > 60:  # a bar per point stops being readable: the Pareto front, each model's fastest
        # point on each machine, and points spread evenly over the rest by latency, 40 in all
        pick = {r["id"] + r["study"]: r for r in pareto(rows)}
        for key in {(r["model"], st.machine(r)) for r in rows}:
            best = min((r for r in rows if (r["model"], st.machine(r)) == key), key=lambda r: r["latency_s"])
            pick.setdefault(best["id"] + best["study"], best)
        ranked = sorted(rows, key=lambda r: r["latency_s"])
        for i in range(40):
            if len(pick) >= 40:
                break
            r = ranked[round(i * (len(ranked) - 1) / 39)]
            pick.setdefault(r["id"] + r["study"], r)
        chosen = list(pick.values())[:60]
        subset_note = (f"; {len(chosen)} of {len(rows)} points: the Pareto front, each model's fastest point on each machine, "
                       "and points spread evenly over the rest by latency")
        rows = chosen
    order = sorted(rows, key=lambda r: (natural(r["model"]), st.machine(r), [axis_key(r.get(a)) for a in axes]))
    n = len(order)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, max(3.0, 0.24 * n + 1.2)), sharey=True,
                                      gridspec_kw={"width_ratios": [1, 1.4]}, layout="constrained")
    eu = U.energy_unit([r["energy_j"] for r in order])
    ys = list(range(n))
    left.barh(ys, [r["energy_j"] * eu[1] for r in order], color=[st.colour(r) for r in order])
    if U.spans_decades([r["energy_j"] for r in order]):
        left.set_xscale("log")
    left.set_xlabel(f"energy of one run, whole batch ({eu[0]})")
    left.set_yticks(ys)
    left.set_yticklabels([label(r, vary, st.multi) for r in order], fontsize=7)
    left.set_ylim(n - 0.5, -0.5)  # first row on top, no empty margin
    left.grid(True, axis="x", which="both", alpha=0.3)
    cmap = plt.get_cmap("tab20")
    start = [0.0] * n
    for i, p in enumerate(parts):
        share = [100 * (r.get(f"energy_{p}_j") or 0) / r["energy_j"] if r["energy_j"] > 0 else 0 for r in order]
        right.barh(ys, share, left=start, color=cmap(i % 20), label=p)
        start = [s + v for s, v in zip(start, share)]
    right.set_xlim(0, 100)
    right.set_xlabel("share of the run's energy by component (%)")
    right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="component", title_fontsize=7)
    title = f"{prefix(rows)}: energy per point and where it goes"
    fig.suptitle(title, fontsize=10)
    return save(fig, plots, "energy_breakdown", title + " (bar colour on the left: machine)" + subset_note, captions)


# ---- report.html -----------------------------------------------------------------------------

def table_html(rows, axes, title, with_study):
    tu = U.time_unit([r["latency_s"] for r in rows])
    eu = U.energy_unit([r["energy_j"] for r in rows])
    bu = U.count_unit([r.get("traffic_dram_bytes") or 0 for r in rows], "B")
    head = (["study"] if with_study else []) + ["machine", "model"] + [axis_title(a) for a in axes] + \
        [f"latency ({tu[0]})", "throughput (inferences/s)", f"energy ({eu[0]})", "MAC utilization (%)", f"DRAM traffic ({bu[0]})"]
    out = [f"<h2>{html.escape(title)}</h2><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cells = ([r["study"]] if with_study else []) + [r["machine"], r["model"]] + [_fmt_axis(r.get(a, "")) or "-" for a in axes]
        cells += [U.sig(r["latency_s"] * tu[1]), U.sig(r["throughput_per_s"]), U.sig(r["energy_j"] * eu[1]),
                  f"{100 * r['utilization']:.1f}", U.sig((r.get("traffic_dram_bytes") or 0) * bu[1])]
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</table>"


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    where, outs, dest = [], [], None
    i = 0
    while i < len(args):
        if args[i] == "--where" and i + 1 < len(args):
            where.append(args[i + 1])
            i += 2
        elif args[i] == "--dpi" and i + 1 < len(args):
            global DPI
            DPI = int(args[i + 1])
            i += 2
        elif args[i] == "--out" and i + 1 < len(args):
            dest = args[i + 1]
            i += 2
        else:
            outs.append(args[i])
            i += 1
    dest = dest or outs[0]
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, and checked by the tests
    except ImportError:
        print("plot_sweep.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    rows, axes, failed, studies = [], [], [], []
    for out in outs:
        try:
            study, rs, ax = load(out)
        except (OSError, KeyError) as e:
            print(f"plot_sweep.py: {out}/results.h5: {e}", file=sys.stderr)
            return 1
        studies.append(study)
        failed += [r for r in rs if r["status"] != "ok"]
        rows += [r for r in rs if r["status"] == "ok" and matches(r, where)]
        axes += [a for a in ax if a not in axes]
    if not rows:
        print(f"plot_sweep.py: {', '.join(outs)}: no finished point matches", file=sys.stderr)
        return 1
    with_study = len(outs) > 1
    global PRECISION_NOTE
    precisions = sorted({r.get("precision") for r in rows if r.get("precision")})
    if precisions:
        PRECISION_NOTE = ("precision " if len(precisions) == 1 else "precisions ") + ", ".join(precisions)
    plots = os.path.join(dest, "plots")
    os.makedirs(plots, exist_ok=True)
    captions = {}
    images = [plot_scatter(rows, axes, plots, captions)] + plot_axes(rows, axes, plots, captions)
    roofs, missing = plot_rooflines(rows, axes, plots, captions)
    images += roofs + [plot_energy(rows, axes, plots, captions)]

    title = " + ".join(studies)
    body = [f"<h1>archsim sweep: {html.escape(title)}</h1>",
            f"<p>{len(rows)} finished points shown" + (f" (filter: {html.escape(' '.join(where))})" if where else "") +
            f", {len(failed)} failed. Units: docs/units.md (one engineering unit per column, named in its header).</p>"]
    body.append(table_html(sorted(rows, key=lambda r: r["latency_s"]), axes, "Results (by latency)", with_study))
    body.append(table_html(pareto(rows), axes, "Pareto front per model: latency vs energy per sample", with_study))
    if missing:
        body.append("<p>No roofline for " + html.escape(", ".join(missing)) +
                    ": its points kept no metrics.json (run the sweep with --traces summary, the default, or full).</p>")
    for img in images:
        with open(img, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        cap = captions.get(img, os.path.basename(img))
        body.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(cap)}'>"
                    f"<figcaption>{html.escape(cap)} <small>({html.escape(os.path.basename(img))})</small></figcaption></figure>")
    if failed:
        body.append("<h2>Failed points</h2><ul>" + "".join(
            f"<li>{html.escape(r['machine'])} {html.escape(r['model'])}: {html.escape(r['error'])}</li>" for r in failed) + "</ul>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;font-size:12px;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}th{background:#eee}img{max-width:100%}"
             "figure{margin:1.5em 0}figcaption{font-size:13px}")
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{style}</style></head>" \
           f"<body>{''.join(body)}</body></html>"
    with open(os.path.join(dest, "report.html"), "w") as f:
        f.write(page)
    with open(os.path.join(plots, "captions.json"), "w") as f:  # each plot's title and notes, for galleries
        json.dump({os.path.basename(k)[:-4]: v for k, v in captions.items()}, f, indent=1)
    print(f"plot_sweep.py: wrote {len(images)} plots to {plots} and {os.path.join(dest, 'report.html')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
