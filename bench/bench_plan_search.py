#!/usr/bin/python3
"""Benchmark: issue 43's parallel-plan search goals, printed (not a timed test).

GPT-3 175B (workloads/workloads.yaml#gpt3_175b_korthikanti: sequence 2048, fp16, Adam) on the
bundled NVIDIA_A100_80GB_SuperPOD target:
  64    64 A100s at global batch 64: the plan of Korthikanti et al. 2022 (tp 8, pp 8, 3 virtual
        stages, microbatch 1, selective recomputation with sequence parallelism) as written, then
        `--search on` (goals: a step no slower than that plan's, at least 20 plans evaluated, at
        most 2 minutes of wall time);
  1024  1,024 A100s at global batch 1,536 (the same plan with dp 16), as written and searched
        (goal: at most 10 minutes; pass --budget to give the search more than its default).
Per case: the step, the plan, plans enumerated / evaluated / infeasible, device runs, wall time.
Usage: bench/bench_plan_search.py [64|1024 ...] [--budget SECONDS] [--out DIR]"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ARCHSIM", os.path.join(ROOT, "build", "archsim"))
JOB = os.path.join(ROOT, "workloads", "workloads.yaml#gpt3_175b_korthikanti")
TARGET = os.path.join(ROOT, "configs", "clusters", "targets.yaml#NVIDIA_A100_80GB_SuperPOD")
CASES = {"64": [], "1024": ["--parallel", "dp=16", "--global-batch", "1536"]}


def run(out, extra):
    """One job run into `out` (a fresh folder); returns (wall seconds, last_run.json or None, stderr's last line)."""
    subprocess.run(["rm", "-rf", out])
    t0 = time.monotonic()
    p = subprocess.run([BIN, "run", JOB, "--target", TARGET, "--out", out, "--quiet", "--detail", "kernel", *extra],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        return wall, None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    with open(os.path.join(out, "last_run.json")) as f:
        return wall, json.load(f), ""


def plan_of(j):
    p = j["parallelism"]
    return (f"tp{p['tp']} pp{p['pp']} dp{p['dp']} v{p['virtual_stages']} mb{p['microbatch']} {p['recompute']}"
            f"{' sp' if p['sequence_parallel'] else ''} zero{p['zero_stage']}")


def main():
    args = sys.argv[1:]
    out = args[args.index("--out") + 1] if "--out" in args else "/tmp/archsim_bench_plan_search"
    budget = args[args.index("--budget") + 1] if "--budget" in args else None
    cases = [a for a in args if a in CASES] or list(CASES)
    print(f"{'case':5} {'run':7} {'step s':>8} {'wall s':>7} {'plans':>6} {'eval':>5} {'infeas':>6} {'runs':>5}  plan")
    for c in cases:
        wall, j, err = run(os.path.join(out, c, "paper"), CASES[c])
        if j is None:
            print(f"{c:5} paper   failed: {err}")
            continue
        paper = j["step_time_s"]
        print(f"{c:5} {'paper':7} {paper:>8.3f} {wall:>7.1f} {'':>6} {'':>5} {'':>6} {'':>5}  {plan_of(j)}")
        extra = CASES[c] + ["--search", "on"] + (["--search-budget", budget] if budget else [])
        wall, j, err = run(os.path.join(out, c, "search"), extra)
        if j is None:
            print(f"{c:5} search  failed: {err}")
            continue
        s = j["search"]
        print(f"{c:5} {'search':7} {j['step_time_s']:>8.3f} {wall:>7.1f} {s['plans_enumerated']:>6} {s['plans_evaluated']:>5} "
              f"{s['plans_infeasible']:>6} {s['device_runs']:>5}  {plan_of(j)}  ({100 * (j['step_time_s'] / paper - 1):+.1f}% against the paper's "
              f"plan; stopped: {s['stopped']}; gap to the lowest bound left {100 * s['gap_to_lowest_bound_left']:.0f}%)")
        for r in s["top"][:5]:
            print(f"{'':14} {r['step_time_s']:>8.3f} {'':>7}  {r['id']}  {r['memory_per_device_bytes'] / 1e9:.1f} GB")


if __name__ == "__main__":
    main()
