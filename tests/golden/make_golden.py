#!/usr/bin/env python3
"""Records the metrics.json of every shared model on every machine config (the matrix the
"every shared model runs on ..." tests walk) as the golden values those tests compare against.

Usage: tests/golden/make_golden.py BUILD_DIR [--jobs N] [--only CONFIG_SUBSTRING] [--models SUBSTRING] [--none] [--check]
Writes tests/golden/metrics/<config stem>[.<precision>][.fixed].json: {model file: {"total": {...},
"ops": [[latency_s, energy_j, compute_cycles, stall_cycles] per operator in metrics.json order]}}, one model a line,
each run under its config's default runtime; the configs of FIXED_MAPPER also under `--mapper fixed`
(<stem>.fixed.json: every kernel on the machine's one fixed schedule, the values main had before the
mapping search, kept to show the search moves nothing else). --none: the NONE_MODELS under `--runtime none` (the graph as
imported, what every run was before runtime profiles) into tests/golden/metrics_none/ instead.
Run it only when a change is meant to move numbers, and say so in the commit. --check compares
with the stored files instead (what the tests do, but in parallel) and lists every difference.
The golden values are recorded with `archsim run --reference` (every kernel simulated, every DRAM
burst its own transaction) and the tests run with the fast paths on (kernel memoization, DRAM
burst runs), so the tests are also the check that the fast paths give the full-detail numbers.
`total.events` is left out: how many events a run emits is what the fast paths change.
"""
import argparse, json, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(SRC, "..", "shared")

# (config under configs/, precisions; "" = the config's own), as tests/integration/test_models_cli.cpp
MATRIX = [
    ("tpu/tpu_32x32_ws.toml", [""]), ("tpu/tpu_32x32_os.toml", [""]), ("tpu/tpu_32x32_is.toml", [""]),
    ("tpu/tpu_128x128_ws.toml", [""]), ("tpu/tpu_128x128_os.toml", [""]), ("tpu/tpu_128x128_is.toml", [""]),
    ("tpu/tpu_v1.toml", [""]),
    ("kpu/t64.toml", [""]), ("kpu/t256.toml", [""]), ("kpu/t768.toml", [""]),
    ("gpu/a100_sxm4_80gb.toml", ["fp32", "fp16", "int8"]), ("gpu/h100_sxm5_80gb.toml", ["fp32", "fp16", "int8"]),
    ("gpu/t4.toml", ["fp32", "fp16", "int8"]),
    ("cpu/host.toml", [""]), ("cpu/xeon_8480p.toml", ["bf16", "int8"]), ("cpu/epyc_9654.toml", [""]),
    ("roofline/tpu_v1.toml", [""]), ("roofline/kpu_t256.toml", [""]), ("roofline/a100_sxm4_80gb.toml", [""]),
    ("roofline/host.toml", [""]),
]

# The configs whose machines search their mappings: their runs under `--mapper fixed` are kept too.
FIXED_MAPPER = ["kpu/t64.toml", "kpu/t256.toml", "kpu/t768.toml"]

# The models whose graph-as-imported runs are kept (tests/golden/metrics_none/): a GEMM chain, a
# convolution block and a raw transformer export, each small enough for every config under ASan.
NONE_MODELS = ["models/mlp.onnx", "models/resnet_basic_block.onnx", "models/raw/bert_like_encoder.onnx"]


def models():
    out = []
    for d in ("models", "models/raw"):
        p = os.path.join(SHARED, d)
        out += sorted(os.path.join(d, f) for f in os.listdir(p) if f.endswith(".onnx"))
    return out


def golden_name(config, prec, mapper=""):
    stem = config.replace("/", "_")[:-len(".toml")]
    return stem + ("." + prec if prec else "") + ("." + mapper if mapper else "") + ".json"


def digest(m):
    total = dict(m["total"])
    total.pop("events", None)
    ops = [[o["latency_s"], o["energy_j"], o["compute_cycles"], o["stall_cycles"]] for o in m["ops"]]
    return {"total": total, "ops": ops}


def differences(want, got, path, total_tol=1e-9, op_tol=1e-9):
    """Every place where `got` differs from `want` (numbers beyond a relative total_tol, op_tol
    under "ops"). The CPU's steady-state fast-forward is bounded, not exact: its checks pass
    5e-3 and 5e-2, as tests/integration/test_models_cli.cpp does."""
    tol = op_tol if ".ops" in path or path.endswith("ops") else total_tol
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if want != got and abs(want - got) > tol * max(abs(want), abs(got)):
            yield f"{path}: golden {want}, now {got}"
    elif isinstance(want, dict) and isinstance(got, dict):
        for k, v in want.items():
            if k not in got:
                yield f"{path}.{k}: missing"
            else:
                yield from differences(v, got[k], f"{path}.{k}", total_tol, op_tol)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (x, y) in enumerate(zip(want, got)):
            yield from differences(x, y, f"{path}[{i}]", total_tol, op_tol)
    elif want != got:
        yield f"{path}: golden {want}, now {got}"


def run_one(binary, config, prec, model, runtime="", reference=True, mapper=""):
    with tempfile.TemporaryDirectory() as out:
        cmd = [binary, "run", os.path.join(SHARED, model), "--arch", os.path.join(SRC, "configs", config),
               "--out", out, "--format", "csv"] + (["--precision", prec] if prec else []) + (["--runtime", runtime] if runtime else [])
        cmd += ["--reference"] if reference else []
        cmd += ["--mapper", mapper] if mapper else []
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
        with open(os.path.join(out, "metrics.json")) as f:
            return digest(json.load(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--models", default="")
    ap.add_argument("--none", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    binary = os.path.join(os.path.abspath(a.build), "archsim")
    folder = os.path.join(HERE, "metrics_none" if a.none else "metrics")
    runtime = "none" if a.none else ""
    os.makedirs(folder, exist_ok=True)
    ms = [m for m in (NONE_MODELS if a.none else models()) if a.models in m]
    bad = 0
    for config, precs in MATRIX:
        if a.only and a.only not in config:
            continue
        variants = [(p, "") for p in precs] + ([(p, "fixed") for p in precs] if config in FIXED_MAPPER and not a.none else [])
        for prec, mapper in variants:
            with ThreadPoolExecutor(a.jobs) as pool:
                res = list(pool.map(lambda m: run_one(binary, config, prec, m, runtime, reference=not a.check, mapper=mapper), ms))
            name = golden_name(config, prec, mapper)
            path = os.path.join(folder, name)
            if a.check:
                with open(path) as f:
                    want = json.load(f)
                cpu = config.startswith("cpu/")
                for m, r in zip(ms, res):
                    for where in differences(want[m], r, m, 5e-3 if cpu else 1e-9, 5e-2 if cpu else 1e-9):
                        print(f"{name}: {where}")
                        bad += 1
                print(f"checked {name}", flush=True)
                continue
            with open(path, "w") as f:
                f.write("{\n" + ",\n".join(json.dumps(m) + ": " + json.dumps(r, sort_keys=True, separators=(",", ":"))
                                           for m, r in zip(ms, res)) + "\n}\n")
            print(path, flush=True)
    if bad:
        sys.exit(f"{bad} differences")


if __name__ == "__main__":
    main()
