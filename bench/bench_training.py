#!/usr/bin/python3
"""Benchmark: issue 16's training goals that are not unit tests, on this machine.

Prints three tables:
  speed   wall seconds of `archsim run --train` against the same model's inference run, per
          machine kind (goal: a training step costs at most 4x the inference in wall time);
          ResNet-50 and ResNet-18 at batch 1 (../shared/models) and GPT-2 small's training
          graph (workloads/llm_presets.toml shape, batch 8, sequence 1024) against its forward;
  megatron
          one A100-80GB's training step of Megatron-LM's 1.7B GPT (Narayanan et al., SC21,
          Table 1, first row; workloads/llm_presets.toml#megatron_gpt_1_7b) with full
          recomputation, Adam and mixed precision, 16 sequences per step (the table's 512 over 32
          GPUs) as microbatches of 1, 2, 4 or 8: per-GPU TFLOP/s by the paper's formula
          F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) over the step time, against the table's 137
          (which also pays the data-parallel gradient all-reduce, not simulated here);
  memory  GPT-2 small training at batch 8, sequence 1024, mixed precision with Adam: the peak
          and its categories against Korthikanti et al.'s closed form (16 bytes per parameter +
          34 s b h + 5 a s^2 b bytes per layer), goal within 10%, with the attention unfused as
          they count it; and with FlashAttention-2 kernels, whose scores are not saved (no
          5 a s^2 b term).
Both megatron and memory run the attention unfused (TensorRT's profile without its attention
pass, as Megatron-LM ran in 2021) and fused (the A100 config's TensorRT profile).
Every run is at --detail kernel. Usage: bench/bench_training.py [speed|megatron|memory ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ARCHSIM", os.path.join(HERE, "build", "archsim"))
SHARED = os.path.join(HERE, "..", "shared")
PRESETS = os.path.join(HERE, "workloads", "llm_presets.toml")
MACHINES = ["tpu/tpu_128x128_ws", "kpu/t256", "gpu/a100_sxm4_80gb", "cpu/host", "roofline/tpu_v1"]


def run(args, out):
    """Runs archsim with `args` into `out`; returns (wall seconds, metrics.json or None, stderr)."""
    t0 = time.monotonic()
    p = subprocess.run([BIN, "run", *args, "--detail", "kernel", "--format", "json", "--out", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        return wall, None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    with open(os.path.join(out, "metrics.json")) as f:
        return wall, json.load(f), ""


def gpt2_train_file(work):
    """A workload file with GPT-2 small's training entry (batch 8, sequence 1024)."""
    path = os.path.join(work, "gpt2_train.toml")
    with open(path, "w") as f:
        f.write('[gpt2_small_train]\nfamily = "llm"\npreset = "gpt2-small"\n'
                'sequence = { prompt = 1024, generate = 0 }\nbatch = 8\n')
    return path + "#gpt2_small_train"


def unfused_attention_runtime(work):
    """TensorRT's profile without the attention pass: the attention core as separate kernels
    (scaled, masked softmax fused; the scores through HBM), as Megatron-LM ran it in 2021 and as
    Korthikanti et al. count its memory. Returns the profile's path."""
    with open(os.path.join(HERE, "configs", "runtimes", "tensorrt.toml")) as f:
        text = f.read()
    if "attention = true" not in text:
        raise SystemExit("configs/runtimes/tensorrt.toml has no 'attention = true' to turn off")
    path = os.path.join(work, "tensorrt_unfused_attention.toml")
    with open(path, "w") as f:
        f.write(text.replace("attention = true", "attention = false"))
    return path


def speed(work):
    print("speed: wall seconds, training step vs inference (goal: ratio <= 4)")
    print(f"{'model':<14} {'machine':<22} {'infer s':>8} {'train s':>8} {'ratio':>6}  verdict")
    gpt = gpt2_train_file(work)
    cases = [("resnet50 b1", [os.path.join(SHARED, "models", "resnet50.onnx")], ["--train"]),
             ("resnet18 b1", [os.path.join(SHARED, "models", "resnet18.onnx")], ["--train"]),
             ("gpt2-small b8", [gpt + "@train"], ["--train"])]
    for label, model, train in cases:
        for m in MACHINES:
            arch = ["--arch", os.path.join(HERE, "configs", m + ".toml")]
            wi, mi, ei = run(model + arch, os.path.join(work, "i"))
            wt, mt, et = run(model + arch + train, os.path.join(work, "t"))
            if mi is None or mt is None:
                print(f"{label:<14} {m:<22} FAILED: {ei or et}")
                continue
            ratio = wt / wi
            print(f"{label:<14} {m:<22} {wi:8.2f} {wt:8.2f} {ratio:6.2f}  {'met' if ratio <= 4 else 'not met'}")


def megatron(work):
    B, S, L, H, V = 16, 2048, 24, 2304, 51200
    flops = 96 * B * S * L * H * H * (1 + S / (6 * H) + V / (16 * L * H))
    print("megatron: 1.7B GPT on one A100-80GB, 16 sequences per step, full recomputation, Adam, fp16")
    print("  attention as Megatron-LM ran it in 2021 (no fused attention: the scores through HBM), then as")
    print("  FlashAttention-2 forward and backward kernels (TensorRT's profile, the A100 config's default)")
    print(f"{'attention':>9} {'microbatch':>10} {'x':>3} {'step s':>8} {'TFLOP/s/GPU':>12} {'vs 137':>7} {'MFU %':>6} "
          f"{'peak GiB':>9} {'wall s':>7}")
    for label, runtime in (("unfused", ["--runtime", unfused_attention_runtime(work)]), ("flash", [])):
        for b in (1, 2, 4, 8):
            n = B // b
            wall, m, err = run([PRESETS + "#megatron_gpt_1_7b", "--batch", str(b), "--microbatches", str(n), "--recompute", "full",
                                "--optimizer", "adam", "--arch", os.path.join(HERE, "configs", "gpu", "a100_sxm4_80gb.toml")]
                               + runtime, os.path.join(work, "m"))
            if m is None:
                print(f"{label:>9} {b:>10} FAILED: {err}")
                continue
            step = m["total"]["latency_s"]
            t = m["training"]
            tf = flops / step / 1e12
            print(f"{label:>9} {b:>10} {n:>3} {step:8.3f} {tf:12.1f} {tf / 137:7.2f} {100 * t['mfu']:6.1f} "
                  f"{t['memory']['peak_bytes'] / 2**30:9.2f} {wall:7.2f}")
    print(f"(TFLOP/s/GPU: the paper's F = {flops:.4g} per step over the step time; the fused backward also recomputes "
          "Q K^T, hardware FLOPs beyond F)")


def memory(work):
    B, S, L, H, A, V = 8, 1024, 12, 768, 12, 50257
    print("memory: GPT-2 small, batch 8, sequence 1024, fp16 with Adam, on the A100 (GiB)")
    for label, runtime, scores in (("unfused attention (Korthikanti et al.'s setting)", ["--runtime", unfused_attention_runtime(work)], True),
                                   ("FlashAttention-2 kernels (no score term)", [], False)):
        wall, m, err = run([gpt2_train_file(work), "--optimizer", "adam", "--arch",
                            os.path.join(HERE, "configs", "gpu", "a100_sxm4_80gb.toml")] + runtime, os.path.join(work, "g"))
        if m is None:
            print("memory: FAILED:", err)
            continue
        t = m["training"]
        params = t["params"]
        closed = 16 * params + L * (34 * S * B * H + (5 * A * S * S * B if scores else 0))
        peak = t["memory"]["peak_bytes"]
        print(f" {label}")
        for k, v in t["memory"]["at_peak"].items():
            print(f"  {k:<26} {v / 2**30:8.3f}")
        print(f"  {'peak':<26} {peak / 2**30:8.3f}  at {t['memory']['peak_kernel']}")
        print(f"  {'closed form':<26} {closed / 2**30:8.3f}  ({100 * (peak / closed - 1):+.1f}%, goal within 10%: "
              f"{'met' if abs(peak / closed - 1) <= 0.10 else 'not met'}); with the logits "
              f"{(closed + 2 * S * B * V) / 2**30:.3f} ({100 * (peak / (closed + 2 * S * B * V) - 1):+.1f}%)")
    print(f"  (16 bytes per parameter + 34 s b h [+ 5 a s^2 b] per layer; the closed form leaves out the logits, "
          f"2 s b V bytes = {2 * S * B * V / 2**30:.3f} GiB)")


def main():
    groups = sys.argv[1:] or ["speed", "megatron", "memory"]
    with tempfile.TemporaryDirectory() as work:
        for g in groups:
            {"speed": speed, "megatron": megatron, "memory": memory}[g](work)
            print()


if __name__ == "__main__":
    main()
