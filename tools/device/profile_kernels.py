#!/usr/bin/env python3
"""Nsight Compute sections of the kernels the GPU model has not matched yet, for the next model
changes (docs/gpu_validation.md): the row-reduction kernels (eager softmax and LayerNorm, FP16),
small GEMMs (LLMCompass's 8192 x N x N, N = 64..1024) and the kernels of one BERT-Base layer at
sequence 384, batch 1 (its four GEMMs and PyTorch's scaled-dot-product attention). Each kernel runs
once under ncu (caches flushed, clocks not locked) with the SpeedOfLight, Occupancy, LaunchStats and
WarpStateStats sections. Runs on the device machine; writes $OUT/profile.csv (ncu --csv --page
details) and $OUT/profile_cases.txt (the cases in launch order).
With --stats: the softmax and LayerNorm kernels at every LLMCompass row length from 1024 up and
GELU, with the InstructionStats, ComputeWorkloadAnalysis, WarpStateStats and SpeedOfLight
sections on ncu's raw page (every metric: instructions per pipe, warp stall reasons); writes
$OUT/profile_stats.csv and $OUT/profile_stats_cases.txt.
Usage (device machine): python3 tools/device/profile_kernels.py [--stats]
"""
import os, subprocess, sys

OUT = os.environ.get("OUT", "/tmp/out")


STATS = "--stats" in sys.argv
# --stats: the reduction kernels at every LLMCompass row length from 1024 up, and GELU, with the
# instruction, pipe and warp-stall sections (raw page), for a model of issue- and latency-bound
# row kernels
ROWS = ((4096, 1024), (4096, 2048), (4096, 4096), (4096, 8192), (4096, 16384), (4096, 32768), (8192, 4096), (32768, 4096)) \
    if STATS else ((4096, 4096), (4096, 8192), (4096, 32768), (32768, 4096))
SMALL_N = (64, 256, 1024)
BERT_GEMMS = ((384, 2304, 768), (384, 768, 768), (384, 3072, 768), (384, 768, 3072))  # M, N, K


def case_names():
    """The cases in launch order (one kernel each, but cuBLAS may add a split-K reduction)."""
    names = []
    for m, n in ROWS:
        names += [f"softmax {m}x{n}", f"layernorm {m}x{n}"]
    if STATS:
        return names + ["gelu 2^28"]
    names += [f"matmul 8192x{n}x{n}" for n in SMALL_N]
    names += [f"bert matmul {m}x{n}x{k}" for m, n, k in BERT_GEMMS]
    return names + ["bert sdpa b1 h12 s384 d64"]


def target():
    """Runs each case once between cudaProfilerStart/Stop, after one warm-up each."""
    import torch
    import torch.nn.functional as F
    fns = []
    for m, n in ROWS:
        x = torch.randn(m, n, dtype=torch.float16, device="cuda")
        fns += [lambda x=x: torch.softmax(x, dim=-1), lambda x=x, n=n: F.layer_norm(x, [n])]
    if STATS:
        g = torch.randn(1 << 28, dtype=torch.float16, device="cuda")
        fns.append(lambda: F.gelu(g))
    for m, n, k in ([] if STATS else [(8192, n, n) for n in SMALL_N] + list(BERT_GEMMS)):
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        b = torch.randn(k, n, dtype=torch.float16, device="cuda")
        fns.append(lambda a=a, b=b: torch.matmul(a, b))
    if not STATS:
        q, k, v = (torch.randn(1, 12, 384, 64, dtype=torch.float16, device="cuda") for _ in range(3))
        fns.append(lambda: F.scaled_dot_product_attention(q, k, v))
    assert len(fns) == len(case_names())
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for fn in fns:
        fn()
        torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main():
    os.makedirs(OUT, exist_ok=True)
    ncu = subprocess.run("command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1", shell=True,
                         capture_output=True, text=True).stdout.strip()
    sections = ["InstructionStats", "ComputeWorkloadAnalysis", "WarpStateStats", "SpeedOfLight"] if STATS else \
        ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats"]
    cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none"]
    for sec in sections:
        cmd += ["--section", sec]
    cmd += ["--csv", "--page", "raw" if STATS else "details", sys.executable, os.path.abspath(__file__), "--target"]
    cmd += ["--stats"] if STATS else []
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    tag = "_stats" if STATS else ""
    with open(os.path.join(OUT, f"profile{tag}.csv"), "w") as f:
        f.write(r.stdout)
    with open(os.path.join(OUT, f"profile{tag}_cases.txt"), "w") as f:
        f.write("\n".join(case_names()) + "\n")
    print("ncu rc", r.returncode, r.stderr[-1500:])
    print(len(r.stdout.splitlines()), "lines")
    for line in r.stdout.splitlines():
        if '"Duration"' in line or '"Achieved Occupancy"' in line or '"Memory Throughput"' in line:
            print(line[-160:])


if __name__ == "__main__":
    target() if "--target" in sys.argv else main()
