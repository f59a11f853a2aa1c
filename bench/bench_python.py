#!/usr/bin/python3
"""Issue 40's speed check of the Python module: N runs of the bundled ResNet-18 on the TPU
(configs/tpu/tpu_128x128_ws.toml) from one Python process (after import) against N separate
`archsim run` invocations from a shell loop, alternating in blocks so both see the same machine.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py [--runs 100] [--block 10]
Prints both wall times and their ratio (the goal: Python at most 1.2x the CLI's)."""
import argparse
import os
import subprocess
import tempfile
import time

import archsim

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--runs", type=int, default=100)
ap.add_argument("--block", type=int, default=10)
args = ap.parse_args()
arch = "tpu/tpu_128x128_ws"
py_s = cli_s = 0.0
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "run")
    script = f'for i in $(seq {args.block}); do "{archsim.binary()}" run --arch {arch} --out {out} --quiet --format json > /dev/null 2>&1 || exit 1; done'
    for _ in range(0, args.runs, args.block):
        t0 = time.perf_counter()
        for _ in range(args.block):
            archsim.run(arch=arch, out=out)
        py_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(["bash", "-c", script], check=True)
        cli_s += time.perf_counter() - t0
runs = (args.runs + args.block - 1) // args.block * args.block
print(f"{runs} runs of ResNet-18 on {arch}: Python {py_s:.2f} s ({py_s / runs * 1e3:.1f} ms/run), "
      f"CLI {cli_s:.2f} s ({cli_s / runs * 1e3:.1f} ms/run), Python / CLI {py_s / cli_s:.3f}")
