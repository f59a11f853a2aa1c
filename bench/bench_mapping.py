#!/usr/bin/python3
"""Benchmark: issue 43's mapping-search goals, on this machine.

Prints two tables:
  llama   Llama-2-7B's prefill (workloads/llm_presets.toml#llama2_7b@prefill, 512 tokens) on the
          KPU T256 at INT8 and FP16, under `--mapper fixed` and the default search: latency, DRAM
          traffic, and FP16's time over INT8's (goal: at most 3x under search);
  every   every model in ../shared/models (and models/raw) and every LLM preset's prefill and
          decode step on every config of CONFIGS, under both mappers: the search's latency over
          the fixed schedule's, and where the search is slower (or as fast with more DRAM traffic:
          goal, none), with the kernels it changed and what its search cost (candidates evaluated),
          and each config's geometric-mean latency ratio.
On the GPU, "fixed" is the library heuristics' tile chooser (as the default) and "search" adds
stream-K. Every run is at --detail kernel (the metrics are those of a full trace). Usage:
bench/bench_mapping.py [llama|every ...] [--jobs N] [--only CONFIG_SUBSTRING]
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ARCHSIM", os.path.join(HERE, "build", "archsim"))
SHARED = os.path.join(HERE, "..", "shared")
PRESETS = os.path.join(HERE, "workloads", "llm_presets.toml")
CONFIGS = ["kpu/t64", "kpu/t256", "kpu/t768", "tpu/tpu_32x32_ws", "tpu/tpu_32x32_os", "tpu/tpu_32x32_is", "tpu/tpu_128x128_ws",
           "tpu/tpu_128x128_os", "tpu/tpu_128x128_is", "tpu/tpu_v1", "cpu/host", "cpu/epyc_9654", "cpu/xeon_8480p",
           "gpu/a100_sxm4_80gb", "gpu/h100_sxm5_80gb", "gpu/t4"]
# (entry, prompt): the serving presets (megatron_gpt_1_7b is training only)
LLMS = [("gpt2_small", 256), ("gpt2_medium", 256), ("llama2_7b", 512), ("llama3_8b", 512), ("mixtral_8x7b", 512)]


def run(model, config, mapper, extra=()):
    """One run; returns (wall s, metrics.json or None, the error's last line)."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.monotonic()
        p = subprocess.run([BIN, "run", model, "--arch", os.path.join(HERE, "configs", config + ".toml"), "--mapper", mapper,
                            "--detail", "kernel", "--format", "json", "--quiet", "--out", out, *extra],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            return wall, None, (p.stderr.strip().splitlines() or ["failed"])[-1]
        with open(os.path.join(out, "metrics.json")) as f:
            return wall, json.load(f), ""


def dram(m):
    return m["total"]["traffic_bytes"].get("dram", 0)


def llama():
    print("Llama-2-7B prefill (512 tokens) on the KPU T256")
    print(f"{'precision':>9} {'mapper':>7} {'latency_ms':>11} {'DRAM_GB':>9} {'wall_s':>7}")
    lat = {}
    for prec in ("int8", "fp16"):
        for mapper in ("fixed", "search"):
            wall, m, err = run(PRESETS + "#llama2_7b@prefill", "kpu/t256", mapper, ("--precision", prec))
            if m is None:
                print(f"{prec:>9} {mapper:>7} failed: {err}")
                continue
            lat[prec, mapper] = m["total"]["latency_s"]
            print(f"{prec:>9} {mapper:>7} {m['total']['latency_s'] * 1e3:11.2f} {dram(m) / 1e9:9.2f} {wall:7.2f}")
    for mapper in ("fixed", "search"):
        if ("int8", mapper) in lat and ("fp16", mapper) in lat:
            r = lat["fp16", mapper] / lat["int8", mapper]
            print(f"FP16 / INT8 under {mapper}: {r:.2f}x" + (" (goal: at most 3x)" if mapper == "search" else ""))
    print()


def workloads():
    out = []
    for d in ("models", "models/raw"):
        p = os.path.join(SHARED, d)
        out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".onnx"))
    for name, prompt in LLMS:
        out += [f"{PRESETS}#{name}@prefill", f"{PRESETS}#{name}@decode={prompt}"]
    return out


def every(jobs, only=""):
    print("search against the fixed schedule (latency ratio < 1: the search is faster; --mapper search, which the CPU's\n"
          "blocking needs: its default keeps the calibrated analytical blocking)")
    print(f"{'config':>9} {'workload':<34} {'fixed_ms':>11} {'search_ms':>11} {'ratio':>7} {'DRAM_ratio':>10} {'changed':>7} "
          f"{'evaluated':>9} {'mapspace':>8}")
    bad = 0
    runs = 0
    for config in [c for c in CONFIGS if only in c]:
        ratios = []
        pairs = [(w, mapper) for w in workloads() for mapper in ("fixed", "search")]
        with ThreadPoolExecutor(jobs) as pool:
            res = list(pool.map(lambda p: run(p[0], config, p[1]), pairs))
        for i in range(0, len(pairs), 2):
            w = pairs[i][0]
            name = os.path.relpath(w, SHARED).replace("models/", "").replace(".onnx", "") if w.endswith(".onnx") else w.split("#")[1]
            (_, fixed, e1), (_, search, e2) = res[i], res[i + 1]
            if fixed is None or search is None:
                print(f"{config:>9} {name:<34} failed: {e1 or e2}")
                bad += 1
                continue
            runs += 1
            lf, ls = fixed["total"]["latency_s"], search["total"]["latency_s"]
            df, ds = dram(fixed), dram(search)
            worse = ls > lf * (1 + 1e-12) or (ls >= lf * (1 - 1e-12) and ds > df)
            bad += worse
            ratios.append(ls / lf)
            ops = search["ops"]
            changed = sum(1 for o, f in zip(ops, fixed["ops"]) if o.get("mapping") != f.get("mapping"))
            evaluated = sum(o.get("mappings_evaluated", 0) for o in ops)
            space = sum(o.get("mapspace", 0) for o in ops)
            print(f"{config:>9} {name:<34} {lf * 1e3:11.3f} {ls * 1e3:11.3f} {ls / lf:7.4f} {ds / df if df else 1:10.4f} {changed:7d} "
                  f"{evaluated:9d} {space:8d}" + ("  SLOWER" if worse else ""), flush=True)
        if ratios:
            gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"{config:>9} geometric-mean latency ratio over {len(ratios)} workloads: {gm:.3f}", flush=True)
    print(f"\n{runs} workload x config pairs; the search is slower (or as fast with more DRAM traffic) on {bad}")


def main():
    args = sys.argv[1:]
    jobs = 2
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    only = ""
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    what = args or ["llama", "every"]
    if "llama" in what:
        llama()
    if "every" in what:
        every(jobs, only)


if __name__ == "__main__":
    main()
