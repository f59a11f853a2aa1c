#!/usr/bin/python3
"""Measures batch-1 latency of whole networks with PyTorch on this machine and compares it with
archsim's CPU model on the same networks (../shared/models/<name>.onnx).

Run with Debian's python3-torch and python3-torchvision (call /usr/bin/python3). Debian's torch
sends convolutions to oneDNN and Linear/MatMul to the system BLAS; install libopenblas0-pthread
first (the reference BLAS is single-threaded and unoptimized) and keep OPENBLAS_NUM_THREADS=1 so
OpenBLAS's threads do not fight torch's own (this script sets it when it is unset). The BLAS in
use is recorded with every measurement.

What is compared: torchvision's network with random weights (latency does not depend on their
values), eval mode, BatchNorm folded into the preceding convolution (the ONNX exports in
../shared/models have it folded too), under torch.no_grad(), `--threads` threads. A shared
machine's load comes and goes over seconds to minutes, so in the inference modes every timed
thing (each network, and the framework-cost, packing and pooling microbenchmarks) is timed in
`--rounds` rounds, round-robin: in each round `--reps` timed calls after warm-up (`--warmup` in
the first round, 2 after), and the round's median. Load only ever slows a run, and the model
(calibrated on the calmest of repeated timings, `archsim calibrate`) predicts the unloaded
machine, so each thing's measurement is its calmest round: the networks' and the
microbenchmarks' alike (the framework cost per operator the predictions take included). Every
thing sees the same calm and busy spells. The rounds' range is shown as the spread, with the
error each round would give; a network whose two calmest rounds disagree by more than 10% is
flagged. The CSV keeps every round's time and framework cost. (Pairing each network's round
with the framework cost of the same round was tried on 2026-11-27: the chain's single round is
noisier than the network's, 14-30 us per operator, and the small networks' errors spread more.)
In train mode a timing whose 10th-90th percentile range exceeds 10% of its median is taken again
(up to 4 times, the smallest median kept) and one still above 25% is flagged.
Three ways to run it (`--mode`):
  frozen (default): torch.jit.freeze + torch.jit.optimize_for_inference, PyTorch's own inference
      path: oneDNN convolutions with weights prepacked once, ReLU/Add/SiLU still separate ops,
      to_mkldnn / to_dense around the operators oneDNN does not take. The model runs under the
      torch-frozen runtime profile (configs/runtimes/torch-frozen.toml) with prepacked weights.
  eager: plain module calls; oneDNN reorders the weights at every call, and a few operators take
      non-oneDNN paths (max pooling, some convolutions). The model runs under the torch-eager
      profile with gemm.prepacked_weights=false.
  train: one training step at `--batch` (default 8): zero_grad, forward in training mode
      (BatchNorm on the batch's statistics, not folded), cross-entropy loss, backward, SGD step
      (torch.optim.SGD, no momentum), eager. The network is exported with
      torch.onnx.TrainingMode.TRAINING (BatchNormalization kept) and simulated with `archsim run
      --train --optimizer sgd` under the torch-eager profile. Models: resnet18 and mlp4 (Linear
      1024 -> 2048 -> 2048 -> 2048 -> 1000, ReLU between: a 4-layer MLP).
In all three, the framework's own cost per operator (dispatch, allocation, oneDNN's per-primitive
setup) is measured here, on a chain of 100 tiny 1x1 convolutions each followed by a ReLU, run the
same way, and given to the model as core.op_overhead_us: a measurement of this machine, not a
fitted number. In train mode the chain runs whole training steps (forward, backward through
autograd, the SGD update of its 200 parameters); the chain's step is simulated at two overheads
and the overhead at which the model takes the measured time is used (the chain has no
arithmetic to speak of, so the time is the framework's per-kernel cost). Linear layers go to the system BLAS on one thread (the profiles' [blas] section,
simulated with threads = 1); the rate at which it packs a weight is calibrated here too, on a
2048 x 2048 layer with one input row (timed, then simulated), and given as
core.blas_pack_bytes_per_cycle; ATen's scalar max pooling, which both modes run for a pool
outside oneDNN, is timed on a 1 x 32 x 64 x 64 tensor and given as core.reference_cycles_per_op.

Usage: /usr/bin/python3 tools/torch_latency.py [--models resnet18,resnet50,...] [--threads 2]
       [--mode frozen|eager|train] [--batch 8] [--arch configs/cpu/host.calibrated.toml]
       [--archsim build/archsim] [--csv OUT.csv]
Prints a Markdown table; exits 1 if a model cannot be measured or simulated.
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402  (after OPENBLAS_NUM_THREADS)
import torchvision  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "squeezenet1_1", "shufflenet_v2_x1_0",
          "mobilenet_v3_small", "vgg16"]


def fold_batchnorm(module):
    """Folds every BatchNorm2d that directly follows a Conv2d (adjacent in a Sequential, or a
    convN/bnN attribute pair as in torchvision's ResNet blocks) into the convolution."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    for child in module.children():
        fold_batchnorm(child)
    if isinstance(module, torch.nn.Sequential):
        mods = list(module._modules.items())
        for (name_a, a), (name_b, b) in zip(mods, mods[1:]):
            if isinstance(a, torch.nn.Conv2d) and isinstance(b, torch.nn.BatchNorm2d):
                module._modules[name_a] = fuse_conv_bn_eval(a, b)
                module._modules[name_b] = torch.nn.Identity()
    for name, sub in list(module._modules.items()):
        if name.startswith("conv") and isinstance(sub, torch.nn.Conv2d):
            bn_name = "bn" + name[len("conv"):]
            bn = module._modules.get(bn_name)
            if isinstance(bn, torch.nn.BatchNorm2d):
                module._modules[name] = fuse_conv_bn_eval(sub, bn)
                module._modules[bn_name] = torch.nn.Identity()


def blas_in_use():
    """The system BLAS torch's Linear goes to (Debian alternatives), and its thread setting."""
    link = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
    target = os.path.realpath(link) if os.path.exists(link) else "unknown"
    name = "openblas-pthread" if "openblas-pthread" in target else ("reference" if "/blas/" in target else target)
    return f"{name} (OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')})"


def cpu_model():
    """This machine's CPU as lscpu names it, with its logical CPU count."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown (no lscpu)"
    info = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return f"{info.get('Model name', '?').strip()}, {info.get('CPU(s)', '?').strip()} CPUs"


def prepare(model, mode):
    """The module as `mode` runs it."""
    if mode == "frozen":
        return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))
    return model


# A shared machine's measurements settle or are repeated: a timing whose 10th-90th percentile
# range exceeds STABLE of its median is taken again, up to ATTEMPTS times, and the attempt with
# the smallest median counts (another process can only slow a run down); one still above
# UNSTABLE is flagged in the output.
STABLE, UNSTABLE, ATTEMPTS = 0.10, 0.25, 4


def settled(measure):
    """`measure()` -> (median, p10, p90), repeated while its spread exceeds STABLE (see above)."""
    best = measure()
    for _ in range(ATTEMPTS - 1):
        if (best[2] - best[1]) <= STABLE * best[0]:
            break
        again = measure()
        if again[0] < best[0]:
            best = again
    return best


def call_times(fn, x, warmup, reps):
    """`fn(x)` called `warmup` times untimed, then `reps` times timed: the times, s."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t0)
    return times


def timed(fn, x, warmup, reps):
    """Median, 10th and 90th percentile of `reps` timed calls after `warmup` untimed ones, s,
    settled (repeated while they disagree, see settled())."""
    def once():
        times = call_times(fn, x, warmup, reps)
        q = statistics.quantiles(times, n=10)
        return statistics.median(times), q[0], q[-1]
    return settled(once)


class Rounds:
    """Round-robin timing on a shared machine (see the module doc): things are added with
    add(key, fn, x), run(rounds, warmup, reps) times each in turn, round after round;
    medians[key] holds each round's median and result(key) is (the calmest round's median, the
    busiest round's), s."""

    def __init__(self):
        self.things, self.medians = {}, {}

    def add(self, key, fn, x):
        self.things[key] = (fn, x)
        self.medians[key] = []

    def run(self, rounds, warmup, reps, progress=None):
        for r in range(rounds):
            for key, (fn, x) in self.things.items():
                self.medians[key].append(statistics.median(call_times(fn, x, warmup if r == 0 else min(warmup, 2), reps)))
            if progress:
                progress(r + 1)

    def result(self, key):
        m = self.medians[key]
        return min(m), max(m)

    def unsettled(self, key):
        """Whether the rounds' medians never came within STABLE of each other (even the two
        calmest rounds disagree by more)."""
        m = sorted(self.medians[key])
        return len(m) >= 2 and m[1] - m[0] > STABLE * m[0]


class ConvReluChain(torch.nn.Module):
    """100 pairs of a 1x1 convolution (8 -> 8 channels) and a ReLU on a 1 x 8 x 1 x 1 tensor: no
    arithmetic to speak of, so the time is the framework's cost per operator on the path a
    network's operators take (in frozen mode oneDNN's, blocked layout and all; a chain of ReLUs
    on a plain tensor would miss oneDNN's per-primitive cost: 0.6 against 11 us here)."""

    def __init__(self, pairs=100):
        super().__init__()
        self.convs = torch.nn.ModuleList([torch.nn.Conv2d(8, 8, 1) for _ in range(pairs)])

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return x


PAIRS = 100  # the ConvReluChain's pairs


def chain_thing(mode):
    """The framework-cost microbenchmark as `mode` runs it: (callable, input)."""
    return prepare(ConvReluChain(PAIRS).eval(), mode), torch.randn(1, 8, 1, 1)


def op_overhead_us(chain_s):
    """core.op_overhead_us from the ConvReluChain's measured time `chain_s` (s): its 2 x PAIRS
    operators share it."""
    return chain_s / (2 * PAIRS) * 1e6


def linear_thing():
    """The BLAS packing microbenchmark: one Linear layer with one input row (1 x 2048 by a
    2048 x 2048 fp32 weight: no shared network's shape), (module, input)."""
    return torch.nn.Linear(2048, 2048).eval(), torch.randn(1, 2048)


def blas_pack_bytes_per_cycle(archsim, arch, mode, overhead_us, layer, x, measured):
    """core.blas_pack_bytes_per_cycle for this machine from linear_thing()'s `layer` and input `x`
    timed through PyTorch at `measured` s (the system BLAS packs its weight at every call). The
    layer is exported to ONNX and simulated at two packing rates; the model's time is a + b / rate
    (the rest of the call plus the packing), so the rate at which the model takes the measured
    time is b / (measured - a). Returns (rate in bytes/cycle, the machine's clock in Hz)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "linear_2048.onnx")
        with torch.no_grad():
            torch.onnx.export(layer, x, path, input_names=["x"], output_names=["y"])
        r1, r2 = 1.0, 4.0
        t1, clock_hz = simulate(archsim, path, arch, mode, overhead_us, r1)
        t2, _ = simulate(archsim, path, arch, mode, overhead_us, r2)
    b = (t1 - t2) / (1 / r1 - 1 / r2)
    a = t1 - b / r1
    if b <= 0 or measured <= a:
        # the rest of the call alone is slower than the whole measured call: the config describes a
        # slower machine than this one is now (its DRAM or cache rates), so nothing is left for packing
        rate = config_value(archsim, arch, "core", "blas_pack_bytes_per_cycle")
        print(f"warning: BLAS calibration: the model's Linear takes {a * 1e6:.0f} us without packing, measured "
              f"{measured * 1e6:.0f} us: no packing rate fits; the config's is used ({rate:.2f} bytes/cycle; 0 = core.pack_bytes_per_cycle)", file=sys.stderr)
        return rate, clock_hz
    return b / (measured - a), clock_hz


def config_value(archsim, arch, table, key):
    """Key `table.key` of CPU config `arch` (a TOML file): its value there, else the declared
    default (`archsim params cpu`)."""
    import tomllib
    with open(arch, "rb") as f:
        v = tomllib.load(f).get(table, {}).get(key)
    if v is None:
        decls = json.loads(subprocess.run([archsim, "params", "cpu", "--format", "json"], capture_output=True, text=True,
                                          check=True).stdout)
        v = next(d["default"] for d in decls if d["key"] == f"{table}.{key}")
    return float(v)


def pool_thing():
    """The scalar pooling microbenchmark: ATen's NCHW max pooling (what both modes run for a pool
    outside oneDNN) on a 1 x 32 x 64 x 64 tensor, 3 x 3 window, stride 2 (no shared network's
    shape): (module, input)."""
    return torch.nn.MaxPool2d(3, 2, 1), torch.randn(1, 32, 64, 64)


def reference_cycles_per_op(pool, x, measured, threads, clock_hz):
    """core.reference_cycles_per_op for this machine: pool_thing()'s `pool` on `x` timed at
    `measured` s, as core cycles per window element with the elements split over the `threads`,
    at the machine's clock `clock_hz` (as archsim resolves the config)."""
    ops = pool(x).numel() * 9
    return measured * clock_hz * threads / ops


def network_thing(name, mode):
    """torchvision's `name` as `mode` runs it (BatchNorm folded): (callable, input)."""
    model = getattr(torchvision.models, name)(weights=None).eval()
    fold_batchnorm(model)
    return prepare(model, mode), torch.randn(1, 3, 224, 224)


TRAIN_MODELS = ["resnet18", "mlp4"]
WARNED = set()  # archsim's warnings already passed on


def train_model(name):
    """The network `name` in training mode: a torchvision model, or mlp4 (4 Linear layers)."""
    if name == "mlp4":
        layers = [1024, 2048, 2048, 2048, 1000]
        mods = []
        for i in range(4):
            mods.append(torch.nn.Linear(layers[i], layers[i + 1]))
            if i < 3:
                mods.append(torch.nn.ReLU())
        return torch.nn.Sequential(*mods).train(), (1024,), 1000
    if not hasattr(torchvision.models, name):
        raise RuntimeError(f"{name}: not a torchvision model (or mlp4)")
    return getattr(torchvision.models, name)(weights=None).train(), (3, 224, 224), 1000


def timed_steps(model, x, y, warmup, reps):
    """Median, 10th and 90th percentile of `reps` SGD training steps after `warmup`, s."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    def once():
        for _ in range(warmup):
            step()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        q = statistics.quantiles(times, n=10)
        return statistics.median(times), q[0], q[-1]
    return settled(once)


def export_training(model, shape, batch, path):
    """`model` to ONNX as it trains: BatchNormalization kept (training mode), nothing folded."""
    torch.onnx.export(model, torch.randn(batch, *shape), path, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["x"], output_names=["y"], opset_version=13)


def train_op_overhead_us(archsim, arch, threads, warmup, reps):
    """core.op_overhead_us of a training step (see the module doc): the ConvReluChain's step timed
    here, simulated at 0 and 10 us per kernel; the model's time is a + b x overhead."""
    torch.set_num_threads(threads)
    chain = ConvReluChain().train()
    x, y = torch.randn(1, 8, 1, 1), torch.randint(0, 8, (1,))
    measured, _, _ = timed_steps(FlattenOut(chain), x, y, warmup, reps)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain.onnx")
        export_training(FlattenOut(chain), (8, 1, 1), 1, path)
        t0, _ = simulate(archsim, path, arch, "eager", 0.0, 1.0, train_batch=1)
        t1, _ = simulate(archsim, path, arch, "eager", 10.0, 1.0, train_batch=1)
    b = (t1 - t0) / 10.0
    if b <= 0 or measured <= t0:
        raise RuntimeError(f"training overhead calibration: the model's chain step takes {t0 * 1e6:.0f} us at no overhead, "
                           f"measured {measured * 1e6:.0f} us")
    return (measured - t0) / b, measured


class FlattenOut(torch.nn.Module):
    """A module whose output is flattened to [batch, features] (class scores for the loss)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return torch.flatten(self.inner(x), 1)


def main_train(args):
    """--mode train: the training step of each model measured and simulated (module doc)."""
    torch.set_num_threads(args.threads)
    overhead, chain_s = train_op_overhead_us(args.archsim, args.arch, args.threads, 5, 30)
    print(f"  framework cost per kernel (training step, eager): {overhead:.2f} us (chain step {chain_s * 1e3:.2f} ms)",
          file=sys.stderr)
    infer_chain_s, _, _ = timed(*chain_thing("eager"), 20, 50)  # the packing fit's overhead, as inference runs it
    layer, lx = linear_thing()
    blas_s, _, _ = timed(layer, lx, 5, 30)
    blas_bpc, clock_hz = blas_pack_bytes_per_cycle(args.archsim, args.arch, "eager", op_overhead_us(infer_chain_s), layer, lx, blas_s)
    print(f"  BLAS weight packing: {blas_bpc:.2f} bytes/cycle (2048 x 2048 Linear: {blas_s * 1e3:.2f} ms)", file=sys.stderr)
    pool, px = pool_thing()
    pool_s, _, _ = timed(pool, px, 5, 50)
    ref_cpo = reference_cycles_per_op(pool, px, pool_s, args.threads, clock_hz)
    rows = []
    models = [m for m in args.models.split(",") if m] if args.models else TRAIN_MODELS
    for name in models:
        model, shape, classes = train_model(name)
        x, y = torch.randn(args.batch, *shape), torch.randint(0, classes, (args.batch,))
        med, p10, p90 = timed_steps(model, x, y, max(2, args.warmup // 3), args.reps)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".onnx")
            export_training(model, shape, args.batch, path)
            pred, _ = simulate(args.archsim, path, args.arch, "eager", overhead, blas_bpc, ref_cpo, train_batch=args.batch)
        rows.append({"model": name, "batch": args.batch, "measured_ms": med * 1e3, "p10_ms": p10 * 1e3, "p90_ms": p90 * 1e3,
                     "predicted_ms": pred * 1e3, "error_pct": 100 * (pred - med) / med, "threads": args.threads, "mode": "train",
                     "op_overhead_us": round(overhead, 3), "blas_pack_bytes_per_cycle": round(blas_bpc, 3),
                     "reference_cycles_per_op": round(ref_cpo, 2), "blas": blas_in_use(), "torch": torch.__version__})
        print(f"  {name} b{args.batch} training step: measured {med * 1e3:.2f} ms, predicted {pred * 1e3:.2f} ms", file=sys.stderr)
    return rows, overhead, blas_bpc, ref_cpo


def runtime_file(mode, tmp):
    """A copy of configs/runtimes/torch-<mode>.toml in `tmp` whose BLAS runs on one thread, as
    OpenBLAS does here (OPENBLAS_NUM_THREADS=1); returns its path."""
    with open(os.path.join(ROOT, "configs", "runtimes", f"torch-{mode}.toml")) as f:
        text = f.read()
    one = re.sub(r"(?m)^threads = 0\b", "threads = 1", text)
    if one == text:
        raise RuntimeError(f"configs/runtimes/torch-{mode}.toml: no '[blas] threads = 0' line to set to 1")
    path = os.path.join(tmp, f"torch-{mode}.toml")
    with open(path, "w") as f:
        f.write(one)
    return path


def simulate(archsim, model_path, arch, mode, overhead_us, blas_bpc, ref_cpo=0.0, train_batch=0):
    """Simulates `model_path` on `arch` as tools/torch_latency runs it (with `train_batch`, its SGD
    training step at that batch); returns (latency in s, the machine's clock in Hz as the run
    resolved it)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [archsim, "run", model_path, "--arch", arch, "--out", out, "--format", "json",
               "--runtime", runtime_file(mode, out),
               "--set", "gemm.prepacked_weights=" + ("true" if mode == "frozen" else "false"),
               "--set", f"core.op_overhead_us={overhead_us:.3f}",
               "--set", f"core.blas_pack_bytes_per_cycle={blas_bpc:.3f}",
               "--set", f"core.reference_cycles_per_op={ref_cpo:.3f}", "--detail", "kernel"]
        if train_batch:
            cmd += ["--train", "--optimizer", "sgd", "--loss", "cross_entropy", "--batch", str(train_batch)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        for line in r.stderr.splitlines():  # a config written on another machine: said once
            if "host.cpu:" in line and line not in WARNED:
                WARNED.add(line)
                print(line, file=sys.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"{model_path}: archsim failed: {r.stderr.strip().splitlines()[-1:]}")
        with open(os.path.join(out, "metrics.json")) as f:
            m = json.load(f)
        return m["total"]["latency_s"], m["clock_hz"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="default: " + ",".join(MODELS) + " (train: " + ",".join(TRAIN_MODELS) + ")")
    ap.add_argument("--mode", choices=["frozen", "eager", "train"], default="frozen")
    ap.add_argument("--batch", type=int, default=8, help="train mode's batch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=0, help="timed calls per timing (default: 20 in train mode, 10 per round otherwise)")
    ap.add_argument("--rounds", type=int, default=10, help="inference modes: round-robin rounds (see the module doc)")
    ap.add_argument("--arch", default=os.path.join(ROOT, "configs/cpu/host.calibrated.toml"))
    ap.add_argument("--archsim", default=os.path.join(ROOT, "build/archsim"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    if args.reps <= 0:
        args.reps = 20 if args.mode == "train" else 10
    if args.mode == "train":
        rows, overhead, blas_bpc, ref_cpo = main_train(args)
        return report(rows, args, overhead, blas_bpc, ref_cpo)

    torch.set_num_threads(args.threads)
    names = [m for m in (args.models or ",".join(MODELS)).split(",") if m]
    for name in names:
        path = os.path.join(args.shared, name + ".onnx")
        if not hasattr(torchvision.models, name) or not os.path.exists(path):
            print(f"torch_latency: {name}: not a torchvision model with {path}", file=sys.stderr)
            return 1
    rounds = Rounds()
    rounds.add("chain", *chain_thing(args.mode))
    layer, lx = linear_thing()
    rounds.add("linear", layer, lx)
    pool, px = pool_thing()
    rounds.add("pool", pool, px)
    for name in names:
        rounds.add(name, *network_thing(name, args.mode))
    rounds.run(args.rounds, args.warmup, args.reps,
               lambda r: print(f"  round {r} of {args.rounds} timed", file=sys.stderr))
    # the framework's cost per operator: the chain's calmest round, as every other timing
    overheads = [op_overhead_us(t) for t in rounds.medians["chain"]]
    overhead = min(overheads)
    print(f"  framework cost per operator ({args.mode}): {overhead:.2f} us (rounds {min(overheads):.2f}-{max(overheads):.2f})",
          file=sys.stderr)
    blas_s = rounds.result("linear")[0]
    blas_bpc, clock_hz = blas_pack_bytes_per_cycle(args.archsim, args.arch, args.mode, overhead, layer, lx, blas_s)
    print(f"  BLAS weight packing: {blas_bpc:.2f} bytes/cycle (2048 x 2048 Linear: {blas_s * 1e3:.2f} ms)",
          file=sys.stderr)
    ref_cpo = reference_cycles_per_op(pool, px, rounds.result("pool")[0], args.threads, clock_hz)
    print(f"  scalar max pooling: {ref_cpo:.1f} cycles per window element", file=sys.stderr)
    for key in ("chain", "linear", "pool"):
        if rounds.unsettled(key):
            lo, hi = rounds.result(key)
            print(f"warning: the {key} microbenchmark's rounds never agreed within {STABLE:.0%} ({lo * 1e3:.3f}-{hi * 1e3:.3f} ms): "
                  "the machine is busy; the predictions take its calmest round", file=sys.stderr)
    rows = []
    for name in names:
        path = os.path.join(args.shared, name + ".onnx")
        pred, _ = simulate(args.archsim, path, args.arch, args.mode, overhead, blas_bpc, ref_cpo)
        measured = rounds.medians[name]
        med = min(measured)  # the network's calmest round
        errors = [100 * (pred - m) / m for m in measured]  # what each round would give
        rows.append({"model": name, "measured_ms": med * 1e3, "p10_ms": min(measured) * 1e3, "p90_ms": max(measured) * 1e3,
                     "unsettled": rounds.unsettled(name),
                     "predicted_ms": pred * 1e3, "error_pct": 100 * (pred - med) / med, "error_min_pct": min(errors),
                     "error_max_pct": max(errors), "threads": args.threads, "mode": args.mode, "op_overhead_us": round(overhead, 3),
                     "blas_pack_bytes_per_cycle": round(blas_bpc, 3), "reference_cycles_per_op": round(ref_cpo, 2),
                     "blas": blas_in_use(), "torch": torch.__version__,
                     "rounds_ms": " ".join(f"{m * 1e3:.3f}" for m in measured),
                     "rounds_op_overhead_us": " ".join(f"{o:.3f}" for o in overheads)})
        print(f"  {name}: measured {med * 1e3:.2f} ms (its calmest of {len(measured)} rounds), predicted {pred * 1e3:.2f} ms",
              file=sys.stderr)
    return report(rows, args, overhead, blas_bpc, ref_cpo)


def report(rows, args, overhead, blas_bpc, ref_cpo):
    """The Markdown table, the summary line (protocol, lscpu's CPU) and the CSV."""
    spread = "p10-p90" if args.mode == "train" else f"range of {args.rounds} rounds"
    rng = "error_min_pct" in rows[0]
    print(f"| model | measured ms ({spread}) | predicted ms | error{' (rounds)' if rng else ''} |\n|---|---|---|---|")
    for r in rows:
        err = f"{r['error_pct']:+.1f}%" + (f" ({r['error_min_pct']:+.1f}..{r['error_max_pct']:+.1f})" if rng else "")
        print(f"| {r['model']} | {r['measured_ms']:.2f} ({r['p10_ms']:.2f}-{r['p90_ms']:.2f}) | {r['predicted_ms']:.2f} | {err} |")
    for r in rows:
        if args.mode == "train" and r["p90_ms"] - r["p10_ms"] > UNSTABLE * r["measured_ms"]:
            print(f"warning: {r['model']}: its timings did not settle ({r['p10_ms']:.2f}-{r['p90_ms']:.2f} ms around "
                  f"{r['measured_ms']:.2f} ms after {ATTEMPTS} attempts): the machine is busy; compare with care", file=sys.stderr)
        if r.get("unsettled"):
            print(f"warning: {r['model']}: even its two calmest rounds disagree by more than {STABLE:.0%} (rounds "
                  f"{r['p10_ms']:.2f}-{r['p90_ms']:.2f} ms): the machine is busy; compare with care", file=sys.stderr)
    errs = [abs(r["error_pct"]) for r in rows]
    print(f"\nMAPE {statistics.mean(errs):.1f}%, worst {max(errs):.1f}%, within 20%: {sum(e <= 20 for e in errs)} of {len(errs)}")
    runtime = "torch-eager" if args.mode == "train" else f"torch-{args.mode}"
    protocol = (f"SGD training step at batch {args.batch}, median of {args.reps}" if args.mode == "train"
                else f"each thing's calmest of {args.rounds} round-robin rounds, medians of {args.reps} after warm-up")
    print(f"torch {torch.__version__} ({args.mode}: {protocol}, runtime {runtime}), {args.threads} threads, framework cost "
          f"per operator {overhead:.2f} us, BLAS {blas_in_use()} packing {blas_bpc:.2f} bytes/cycle, scalar max pooling {ref_cpo:.1f} cycles/element, config {args.arch}, CPU {cpu_model()}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
