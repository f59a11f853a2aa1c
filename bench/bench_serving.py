#!/usr/bin/python3
"""Speed of serving over time (docs/serving.md), Llama-3.1-8B on one H100 under the TensorRT-LLM
profile, 467 + 256 tokens per request, Poisson arrivals:
- one hour of a steady 10 requests/s (36,000 requests): the wall time of the whole command (its
  ~45 device runs included, in a fresh output folder) and of a second run that finds them done;
  the goal is at most 60 s;
- a day of four 6-hour phases at a base rate of 10 requests/s (low, steady_state, peak, spike:
  about 920,000 requests), the phases sharing their device runs; the goal is at most 2 minutes.

Usage: bench/bench_serving.py [--archsim BIN] [--out DIR]
"""
import argparse
import os
import shutil
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = """    framework: tensorrt-llm
    model_family: llama
    params: { hidden_size: 4096, n_layers: 32, vocab_size: 128256, n_heads: 32, n_kv_heads: 8, ffn_hidden_size: 14336 }
    parallelism: { tp: 1, pp: 1, dp: 1 }
    sequence: { prompt: 467, generate: 256 }
    precision: { weights: bf16, activations: bf16 }
    dataloader: synthetic
    track: parity
"""
ENTRY = ("workloads:\n  - name: hour\n" + MODEL + "    duration_minutes: 60\n    serving: { arrival_rate_per_s: 10, requests: 36000 }\n"
         "  - name: day\n" + MODEL + """    duration_minutes: 1440
    serving: { arrival_rate_per_s: 10 }
    schedule:
      phases:
        - { name: night, duration_minutes: 360, request_profile: low }
        - { name: morning, duration_minutes: 360, request_profile: steady_state }
        - { name: noon, duration_minutes: 360, request_profile: peak }
        - { name: evening, duration_minutes: 360, request_profile: spike }
""")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--archsim", default=os.path.join(ROOT, "build", "archsim"))
    ap.add_argument("--out", default="out/bench_serving")
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    yaml = os.path.join(a.out, "hour.yaml")
    with open(yaml, "w") as f:
        f.write(ENTRY)
    target = os.path.join(ROOT, "configs", "clusters", "targets.yaml") + "#NVIDIA_H100_8x_NVLink"
    for label in ("fresh (device runs included)", "device runs done"):
        t0 = time.perf_counter()
        subprocess.run([a.archsim, "run", f"{yaml}#hour", "--target", target, "--out", os.path.join(a.out, "run"), "--quiet",
                        "--format", "json"], check=True, stdout=subprocess.DEVNULL)
        print(f"one hour at 10 requests/s, {label}: {time.perf_counter() - t0:.1f} s wall (goal: 60 s)")
    t0 = time.perf_counter()
    subprocess.run([a.archsim, "run", f"{yaml}#day", "--target", target, "--out", os.path.join(a.out, "day"), "--quiet", "--format", "json"],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"a day of four 6-hour phases, fresh: {time.perf_counter() - t0:.1f} s wall (goal: 120 s)")


if __name__ == "__main__":
    main()
