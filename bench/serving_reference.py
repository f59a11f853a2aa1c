#!/usr/bin/python3
"""Serving over time against measurements: every row of a ../shared/reference/serving CSV (an
engine serving one model on one GPU at an offered request rate, or all requests at once) simulated
by `archsim run WORKLOADS.yaml#NAME --target ...` with a serving block, and compared with the
goals of docs/serving.md: achieved requests/s within 10% on every row; mean inter-token latency
(archsim's tpot_s, the per-request (e2e - TTFT) / (output - 1) that TensorRT-LLM's benchmarks call
ITL) within 20% and mean TTFT within 25% on rows offered at most 16 requests/s; output tokens/s
within 15% on the all-at-once rows. A published value is rounded to whole units: a difference
within half a unit counts as met.

Rows name their model (a MoE model by n_experts and top_k), GPU (its bundled target) and tp.

Usage: bench/serving_reference.py [CSV] [--target TARGETS.yaml#NAME] [--out DIR] [--archsim BIN]
Prints one line per row and a summary; exits 1 when a goal is missed.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rows_of(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#")]
    return list(csv.DictReader(lines))


def entry(name, r, rate):
    moe = r.get("n_experts", "").strip() not in ("", "0", "1")
    experts = f", n_experts: {r['n_experts']}, top_k: {r['top_k']}" if moe else ""
    return f"""  - name: {name}
    framework: tensorrt-llm
    model_family: {'moe' if moe else 'llama'}
    params: {{ hidden_size: {r['d_model']}, n_layers: {r['n_layers']}, vocab_size: {r['vocab']}, n_heads: {r['n_heads']}, n_kv_heads: {r['n_kv_heads']}, ffn_hidden_size: {r['d_ff']}{experts} }}
    parallelism: {{ tp: {r['tp']}, pp: 1, dp: 1 }}
    sequence: {{ prompt: {r['isl']}, generate: {r['osl']} }}
    precision: {{ weights: {r['precision']}, activations: {r['precision']} }}
    dataloader: synthetic
    duration_minutes: 1
    track: parity
    serving: {{ arrival_rate_per_s: {rate}, requests: {r['n_requests']} }}
"""


# the bundled target of each GPU a reference row names
TARGETS = {"H100-SXM-80GB": "NVIDIA_H100_8x_NVLink", "H200-SXM-141GB": "NVIDIA_H200_8x_NVLink"}


def target_of(r, given):
    if given:
        return given
    gpu = r["gpu"]
    name = TARGETS.get(gpu) or next((t for g, t in TARGETS.items() if g.split("-")[0] == gpu.split("-")[0]), None)
    if not name:
        sys.exit(f"no bundled target for gpu {gpu}: give --target")
    return os.path.join(ROOT, "configs", "clusters", "targets.yaml") + "#" + name


def within(sim, meas, pct):
    """Met when within pct of the measurement, or within half a unit of the rounded value."""
    return abs(sim - meas) <= max(pct / 100 * abs(meas), 0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=os.path.join(ROOT, "..", "shared", "reference", "serving", "trtllm_online_llama31_8b_h100.csv"))
    ap.add_argument("--target", help="TARGETS.yaml#NAME for every row (default: by the row's gpu, TARGETS below)")
    ap.add_argument("--out", default="out/serving_reference")
    ap.add_argument("--archsim", default=os.path.join(ROOT, "build", "archsim"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    missed = 0
    print(f"{'model':<14} {'gpu':<5} {'tp':>2} {'isl/osl':>8} {'offered':>7} | {'req/s':>14} | {'TTFT ms':>16} | {'ITL ms':>14} | {'out tok/s':>16} | goals")
    for i, r in enumerate(rows_of(a.csv)):
        inf = r["offered_qps"].upper() == "INF"
        rate = "inf" if inf else r["offered_qps"]
        name = f"row{i}"
        yaml = os.path.join(a.out, f"{name}.yaml")
        with open(yaml, "w") as f:
            f.write("workloads:\n" + entry(name, r, rate))
        # rows of one length pair share their device runs (resumable by signature)
        out = os.path.join(a.out, f"{r['model']}_{r['gpu']}_tp{r['tp']}_{r['isl']}_{r['osl']}")
        p = subprocess.run([a.archsim, "run", f"{yaml}#{name}", "--target", target_of(r, a.target), "--out", out, "--format", "json", "--quiet"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(f"row {i}: archsim failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
            missed += 1
            continue
        s = json.loads(p.stdout)["serving"]
        sim = {"req": s["achieved_requests_per_s"], "ttft": s["ttft_s"]["mean"] * 1e3, "itl": s["tpot_s"]["mean"] * 1e3,
               "out": s["output_tokens_per_s"]}
        meas = {"req": float(r["achieved_req_per_s"]), "ttft": float(r["mean_ttft_ms"]), "itl": float(r["mean_itl_ms"]),
                "out": float(r["output_tput_tok_s"])}
        goals = [("req", 10)]
        if not inf and float(r["offered_qps"]) <= 16:
            goals += [("ttft", 25), ("itl", 20)]
        if inf:
            goals += [("out", 15)]
        bad = [k for k, pct in goals if not within(sim[k], meas[k], pct)]
        missed += len(bad)
        cell = lambda k: f"{sim[k]:7.1f} {100 * (sim[k] - meas[k]) / meas[k]:+5.0f}%"
        print(f"{r['model'][:14]:<14} {r['gpu'][:5]:<5} {r['tp']:>2} {r['isl']:>4}/{r['osl']:<3} {r['offered_qps']:>7} | {cell('req'):>14} | {cell('ttft'):>16} | {cell('itl'):>14} | "
              f"{cell('out'):>16} | {'met' if not bad else 'MISSED ' + ','.join(bad)}")
    print(f"\n{missed} goal(s) missed" if missed else "\nevery goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
