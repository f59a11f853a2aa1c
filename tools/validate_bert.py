#!/usr/bin/env python3
"""BERT-Base on the A100-40GB against TensorRT demoBERT (../shared/reference/gpu/
trt_bert_base_a100_40gb.csv: sequence 128 and 384, batch 1..128, INT8 and FP16, GPU time).

Each row runs archsim's transformer_encoder workload with BERT-Base's shapes (12 layers, d_model
768, 12 heads, FFN 3072, GELU) on configs/gpu/a100_sxm4_40gb.toml under a runtime profile
(default tensorrt) and prints predicted vs measured, the error, and the MAPE per precision.
Usage: tools/validate_bert.py [ARCHSIM] [--runtime NAME] [--jobs N]
"""
import argparse, csv, json, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
REF = os.path.join(SRC, "..", "shared", "reference", "gpu", "trt_bert_base_a100_40gb.csv")
WORKLOAD = """[bert]
family = "transformer_encoder"
layers = 12
d_model = 768
heads = 12
ffn = 3072
sequence = {seq}
activation = "gelu"
batch = {batch}
"""


def run(binary, runtime, seq, batch, precision, tmp):
    stem = os.path.join(tmp, f"s{seq}_b{batch}_{precision}")
    with open(stem + ".toml", "w") as f:
        f.write(WORKLOAD.format(seq=seq, batch=batch))
    out = stem + "_out"
    cmd = [binary, "run", stem + ".toml#bert", "--arch", os.path.join(SRC, "configs", "gpu", "a100_sxm4_40gb.toml"),
           "--precision", precision, "--runtime", runtime, "--out", out, "--format", "json"]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    with open(os.path.join(out, "metrics.json")) as f:
        return json.load(f)["total"]["latency_s"] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("archsim", nargs="?", default=os.path.join(SRC, "build", "archsim"))
    ap.add_argument("--runtime", default="tensorrt")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    with open(REF) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    cases = [(int(r["seq"]), int(r["batch"]), p, float(r[p + "_avg_ms"])) for r in rows for p in ("int8", "fp16")]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        pred = list(pool.map(lambda c: run(a.archsim, a.runtime, c[0], c[1], c[2], tmp), cases))
    print(f"BERT-Base, A100-40GB, runtime {a.runtime}: predicted vs TensorRT demoBERT (ms)")
    print(f"{'seq':>4} {'batch':>5} {'prec':>5} {'TensorRT':>9} {'archsim':>9} {'error':>8}")
    errs = {"int8": [], "fp16": []}
    for (seq, batch, p, ref), ms in zip(cases, pred):
        e = (ms - ref) / ref
        errs[p].append(abs(e))
        print(f"{seq:>4} {batch:>5} {p:>5} {ref:>9.2f} {ms:>9.3f} {100 * e:>+7.1f}%")
    for p, v in errs.items():
        print(f"{p}: MAPE {100 * sum(v) / len(v):.1f}%, worst {100 * max(v):.1f}%, within 20%: {sum(x <= 0.2 for x in v)} of {len(v)}")
    allv = errs["int8"] + errs["fp16"]
    print(f"all: MAPE {100 * sum(allv) / len(allv):.1f}% (goal: every case within 20%, MAPE <= 10%)")


if __name__ == "__main__":
    main()
