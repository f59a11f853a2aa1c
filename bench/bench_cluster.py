#!/usr/bin/python3
"""Megatron-LM Table 1 (Narayanan et al., SC21) through `archsim run WORKLOADS.yaml#NAME --target`:
per row the simulated step, per-GPU TFLOP/s by the paper's formula against the table's (the rows
in ../shared/reference/cluster/megatron_table1_given.csv), the split of the step into compute,
exposed communication by level and bubble, memory, and the wall time of each run.
Usage: bench/bench_cluster.py [build/archsim] [--out DIR]"""
import csv, json, os, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
exe = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.path.join(root, "build", "archsim")
out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "/tmp/archsim_bench_cluster"
rows = ["1_7B", "3_6B", "7_5B", "18B", "39B", "76B", "145B", "310B", "530B", "1T"]
given = {}
ref = os.path.join(root, "..", "shared", "reference", "cluster", "megatron_table1_given.csv")
if os.path.exists(ref):
    lines = [l for l in open(ref) if not l.startswith("#")]
    for r in csv.DictReader(lines):
        given[float(r["params_b"])] = float(r["tflops_per_gpu"])
total = 0.0
print(f"{'row':6} {'GPUs':>5} {'step s':>8} {'TFLOP/s':>8} {'table':>6} {'err':>7} {'compute':>8} {'exposed':>8} {'bubble':>7} {'mem GB':>7} {'wall s':>6}  exposed by level")
for r in rows:
    d = os.path.join(out, r)
    subprocess.run(["rm", "-rf", d])
    t0 = time.time()
    p = subprocess.run([exe, "run", f"{root}/workloads/workloads.yaml#megatron_gpt_{r}", "--target",
                        f"{root}/configs/clusters/targets.yaml#NVIDIA_A100_80GB_SuperPOD", "--out", d],
                       capture_output=True, text=True)
    wall = time.time() - t0
    total += wall
    if p.returncode != 0:
        print(r, "failed:", p.stderr.strip())
        continue
    j = json.load(open(os.path.join(d, "last_run.json")))
    params_b = j["model"]["parameters"] / 1e9
    ref_v = next((v for k, v in given.items() if abs(k - params_b) / k < 0.05), None)
    b = j["breakdown_s"]
    err = f"{100 * (j['tflops_per_device'] / ref_v - 1):+.1f}%" if ref_v else "-"
    by = ", ".join(f"{k} {v:.2f}" for k, v in sorted(b["exposed_by"].items()))
    print(f"{r:6} {j['devices']:>5} {j['step_time_s']:>8.2f} {j['tflops_per_device']:>8.1f} {ref_v or '-':>6} {err:>7} "
          f"{b['compute']:>8.2f} {b['exposed_communication']:>8.2f} {b['bubble']:>7.2f} {j['memory_per_device_bytes'] / 1e9:>7.1f} {wall:>6.1f}  {by}")
print(f"all rows: {total:.1f} s wall")
