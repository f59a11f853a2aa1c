#!/usr/bin/python3
"""Cost scaling of a simulation (issue 15): CPU seconds of `archsim run` on one llm workload
(a Llama-style decoder: hidden 1024, 16 heads, FFN 2816, vocabulary 32000, fp16; its prefill)
against the number of layers (4 to 96, 256-token prompt) and against the prompt length (128 to
2048 tokens, 8 layers), on one config of each machine kind, at `--detail kernel`. With kernel
memoization a layer that repeats one already simulated is replayed, so the cost should be
near-flat in layers. Prints one row per run and writes a plot (default docs/img/cost_scaling.png).
Once a run of a series takes more than --cap CPU seconds (default 30) its larger points are
skipped (the CPU model, not memoized, grows with the work) and the plot shows what ran.

Usage: bench/bench_scaling.py [--bin build/archsim] [--out docs/img/cost_scaling.png] [--quick] [--cap 30]
Needs Debian's python3-matplotlib; call it with /usr/bin/python3.
"""
import argparse, os, resource, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
KINDS = [("tpu", "tpu/tpu_128x128_ws.toml"), ("kpu", "kpu/t256.toml"), ("gpu", "gpu/a100_sxm4_40gb.toml"),
         ("cpu", "cpu/host.toml"), ("roofline", "roofline/tpu_v1.toml")]
ENTRY = """[m]
family = "llm"
model_family = "llama"
hidden = 1024
layers = {layers}
heads = 16
ffn = 2816
vocab = 32000
sequence = {{ prompt = {prompt}, generate = 2 }}
precision = {{ weights = "fp16", activations = "fp16" }}
"""


def cpu_seconds(binary, config, layers, prompt, work):
    path = os.path.join(work, f"l{layers}_p{prompt}.toml")
    with open(path, "w") as f:
        f.write(ENTRY.format(layers=layers, prompt=prompt))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([binary, "run", path + "#m@prefill", "--arch", os.path.join(SRC, "configs", config), "--out",
                        os.path.join(work, "out"), "--detail", "kernel", "--format", "csv"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{config} layers {layers} prompt {prompt}: {r.stderr.strip()}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "archsim"))
    ap.add_argument("--out", default=os.path.join(SRC, "docs", "img", "cost_scaling.png"))
    ap.add_argument("--quick", action="store_true", help="fewer points")
    ap.add_argument("--cap", type=float, default=30.0, help="CPU seconds past which a series stops growing")
    a = ap.parse_args()
    layer_points = [4, 16, 96] if a.quick else [4, 8, 16, 32, 64, 96]
    prompt_points = [128, 512, 2048] if a.quick else [128, 256, 512, 1024, 2048]
    by_layers, by_prompt = {}, {}
    with tempfile.TemporaryDirectory() as work:
        for kind, config in KINDS:
            for n in layer_points:
                s = cpu_seconds(a.bin, config, n, 256, work)
                by_layers.setdefault(kind, []).append(s)
                print(f"{kind:9} {config:28} layers {n:3} prompt  256  {s:8.3f} s CPU", flush=True)
                if s > a.cap:
                    print(f"{kind:9} past {a.cap} s: larger layer counts skipped", flush=True)
                    break
            for p in prompt_points:
                s = cpu_seconds(a.bin, config, 8, p, work)
                by_prompt.setdefault(kind, []).append(s)
                print(f"{kind:9} {config:28} layers   8 prompt {p:4}  {s:8.3f} s CPU", flush=True)
                if s > a.cap:
                    print(f"{kind:9} past {a.cap} s: longer prompts skipped", flush=True)
                    break
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind, _ in KINDS:
        ax1.plot(layer_points[:len(by_layers[kind])], by_layers[kind], marker="o", label=kind)
        ax2.plot(prompt_points[:len(by_prompt[kind])], by_prompt[kind], marker="o", label=kind)
    ax1.set_xlabel("decoder layers (256-token prompt)")
    ax2.set_xlabel("prompt tokens (8 decoder layers)")
    ax2.set_xscale("log", base=2)
    for ax in (ax1, ax2):
        ax.set_ylabel("CPU time of archsim run, s")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="machine kind")
    fig.suptitle("Simulation cost of a Llama-style prefill (hidden 1024) per machine kind, kernel detail, memoization on")
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
