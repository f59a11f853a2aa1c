#!/usr/bin/python3
"""Plots a serving job's output folder (`archsim run WORKLOADS.yaml#NAME --target ...` with a serving
block, docs/serving.md) and writes a self-contained report.html beside its last_run.json.

Reads OUT/last_run.json and, for a job with schedule phases, each OUT/phases/NAME/last_run.json.
Writes into OUT/plots/ as PNG and SVG (text kept as text), every plot with a title, axis labels in
the units of docs/units.md and a legend naming every series:
  serving_latency     TTFT, TPOT, ITL and end-to-end latency: p50, p90 and p99 per phase (and over
                      the whole schedule), log axis
  serving_timeline    over time (phases one after another): requests queued and running, KV-cache
                      use as % of its capacity, power per device and energy per output token
and OUT/report.html: a table of each phase's figures and the plots embedded (base64 PNG).

Usage: /usr/bin/python3 tools/plot_serving.py OUT [--dpi N]
Needs Debian's python3-matplotlib (tools/install-deps).
"""
import base64
import html
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archsim_units as U  # noqa: E402  (the unit policy, docs/units.md)

LATENCIES = [("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "end to end")]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def load(out):
    """[(phase name, its last_run.json, its duration_minutes)] and the top-level last_run.json."""
    with open(os.path.join(out, "last_run.json")) as f:
        top = json.load(f)
    if "phases" in top:
        runs = []
        for p in top["phases"]:
            with open(os.path.join(out, "phases", p["name"], "last_run.json")) as f:
                runs.append((p["name"], json.load(f), p["duration_minutes"]))
        return runs, top
    if "serving" not in top:
        raise KeyError("no serving object: not a serving run")
    return [("run", top, None)], top


def save(fig, plots, name, captions, caption):
    path = os.path.join(plots, name + ".png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    fig.savefig(os.path.join(plots, name + ".svg"), bbox_inches="tight")
    captions[path] = caption
    return path


def plot_latency(runs, top, plots, captions):
    import matplotlib.pyplot as plt
    groups = [(name, r["serving"]) for name, r, _ in runs]
    if len(runs) > 1:
        groups.append(("all phases", top["serving"]))
    values = [g[k][p] for _, g in groups for k, _ in LATENCIES for p in ("p50", "p90", "p99")]
    suffix, scale = U.time_unit(values)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(LATENCIES) * len(groups) / 2), 4))
    width = 0.8 / len(groups)
    for gi, (name, s) in enumerate(groups):
        for pi, (p, alpha) in enumerate((("p50", 1.0), ("p90", 0.6), ("p99", 0.3))):
            xs = [li + gi * width - 0.4 + width / 2 for li in range(len(LATENCIES))]
            ys = [s[k][p] * scale for k, _ in LATENCIES]
            ax.bar(xs, ys, width * 0.9, color=COLOURS[gi % len(COLOURS)], alpha=alpha,
                   label=f"{name} {p}" if len(groups) > 1 or pi >= 0 else None, zorder=3 - pi)
    ax.set_xticks(range(len(LATENCIES)), [label for _, label in LATENCIES])
    ax.set_yscale("log")
    ax.set_ylabel(f"latency ({suffix})")
    title = f"{top.get('workload', '')} on {top.get('target', '').split('#')[-1]}: latency percentiles"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=len(groups))
    ax.grid(axis="y", alpha=0.3, zorder=0)
    path = save(fig, plots, "serving_latency", captions,
                title + " (p50 solid, p90 and p99 lighter; TPOT per request, ITL every gap pooled)")
    plt.close(fig)
    return path


def plot_timeline(runs, top, plots, captions):
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(4, 1, figsize=(9, 9), sharex=True)
    offset, spans = 0.0, []
    series = []
    for name, r, minutes in runs:
        s = r["serving"]
        tl = s["timeline"]
        ts = [offset + x["t_s"] for x in tl]
        cap = max(1, s["kv_capacity_tokens"])
        series.append((name, ts, tl, cap))
        end = offset + (minutes * 60 if minutes is not None else s["duration_s"])
        spans.append((name, offset, end))
        offset = max(end, ts[-1] if ts else end)
    tsuf, tscale = U.time_unit([offset])
    powers = [x["power_w"] for _, _, tl, _ in series for x in tl if x["power_w"] is not None]
    epts = [x["energy_per_token_j"] for _, _, tl, _ in series for x in tl if x["energy_per_token_j"] is not None]
    esuf, escale = U.energy_unit(epts or [1.0])
    for i, (name, ts, tl, cap) in enumerate(series):
        c = COLOURS[i % len(COLOURS)]
        x = [t * tscale for t in ts]
        axs[0].plot(x, [p["queued"] for p in tl], color=c, lw=0.8, label=f"{name}: queued")
        axs[0].plot(x, [p["running"] for p in tl], color=c, lw=0.8, ls="--", label=f"{name}: running")
        axs[1].plot(x, [100.0 * p["kv_tokens"] / cap for p in tl], color=c, lw=0.8, label=name)
        px = [(xx, p["power_w"]) for xx, p in zip(x, tl) if p["power_w"] is not None]
        axs[2].plot([a for a, _ in px], [b for _, b in px], color=c, lw=0.8, label=name)
        ex = [(xx, p["energy_per_token_j"] * escale) for xx, p in zip(x, tl) if p["energy_per_token_j"] is not None]
        axs[3].plot([a for a, _ in ex], [b for _, b in ex], color=c, lw=0.8, label=name)
    axs[0].set_ylabel("requests")
    axs[1].set_ylabel("KV cache used (%)")
    axs[2].set_ylabel("power per device (W)")
    axs[3].set_ylabel(f"energy per output token ({esuf})")
    if epts and max(epts) / max(min(epts), 1e-30) > 100:
        axs[3].set_yscale("log")
    axs[3].set_xlabel(f"time ({tsuf})" + (", phases one after another" if len(runs) > 1 else ""))
    for ax in axs:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=min(4, len(series) * (2 if ax is axs[0] else 1)))
        if len(spans) > 1:
            for _, a, _ in spans[1:]:
                ax.axvline(a * tscale, color="#888", lw=0.6, ls=":")
    if not powers:
        axs[2].text(0.5, 0.5, "no interval with a power sample", transform=axs[2].transAxes, ha="center")
    title = f"{top.get('workload', '')}: queue, KV cache, power and energy per token over time"
    axs[0].set_title(title, fontsize=10)
    path = save(fig, plots, "serving_timeline", captions,
                title + " (sampled at iteration starts, about 2,000 samples per phase; power and energy per token per device since "
                "the previous sample)")
    plt.close(fig)
    return path


def table_html(runs, top):
    cols = [("requests", "requests", 1, "{:.0f}"), ("achieved req/s", "achieved_requests_per_s", 1, "{:.2f}"),
            ("output tok/s", "output_tokens_per_s", 1, "{:.0f}")]
    head = "<tr><th>phase</th>" + "".join(f"<th>{h}</th>" for h, _, _, _ in cols)
    lat = [(f"{label} {p} (ms)", k, p) for k, label in LATENCIES for p in ("mean", "p99")]
    head += "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in lat) + "<th>preemptions</th></tr>"
    rows = [(name, r["serving"]) for name, r, _ in runs]
    if len(runs) > 1:
        rows.append(("all phases", top["serving"]))
    body = ""
    for name, s in rows:
        body += f"<tr><td style='text-align:left'>{html.escape(name)}</td>"
        body += "".join(f"<td>{fmt.format(s[k] * sc)}</td>" for _, k, sc, fmt in cols)
        body += "".join(f"<td>{s[k][p] * 1e3:.2f}</td>" for _, k, p in lat)
        body += f"<td>{s['preemptions']:.0f}</td></tr>"
    return f"<table>{head}{body}</table>"


DPI = 110


def main(argv):
    global DPI
    args = argv[1:]
    if "--dpi" in args:
        i = args.index("--dpi")
        DPI = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    out = args[0]
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"
    except ImportError:
        print("plot_serving.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    try:
        runs, top = load(out)
    except (OSError, KeyError, ValueError) as e:
        print(f"plot_serving.py: {out}/last_run.json: {e}", file=sys.stderr)
        return 1
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    captions = {}
    images = [plot_latency(runs, top, plots, captions), plot_timeline(runs, top, plots, captions)]
    title = f"archsim serving: {top.get('workload', '')} on {top.get('target', '')}"
    body = [f"<h1>{html.escape(title)}</h1>", "<p>Units: docs/units.md. Figures: last_run.json (docs/serving.md).</p>",
            table_html(runs, top)]
    for img in images:
        with open(img, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        cap = captions[img]
        body.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(cap)}'>"
                    f"<figcaption>{html.escape(cap)} <small>({html.escape(os.path.basename(img))})</small></figcaption></figure>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;font-size:12px;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}th{background:#eee}img{max-width:100%}")
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{style}</style></head>"
                f"<body>{''.join(body)}</body></html>")
    with open(os.path.join(plots, "captions.json"), "w") as f:
        json.dump({os.path.basename(k)[:-4]: v for k, v in captions.items()}, f, indent=1)
    print(f"plot_serving.py: wrote {len(images)} plots to {plots} and {os.path.join(out, 'report.html')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
