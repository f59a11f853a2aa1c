#!/usr/bin/python3
"""Power checks of issue 38, printed as tables (docs/power_validation.md holds their output):

1. MLPerf Inference Power, ResNet-50 Offline (../shared/reference/power/mlperf_power_a100_t4.csv):
   every row's part at its cap (gpu_power_limit_w, set with --set power.tdp_w; empty = the
   config's own limit) and batch (gpu_batch; 256 where empty), INT8, under the GPU's default
   runtime (tensorrt). Throughput per GPU against the mean of the rows at that cap and batch;
   the model's average board power less its own idle power against (loaded wall - the session's
   lowest sample) / GPUs, the rows' mean. Goal: both within 20%.
2. Idle board power: each GPU config's energy.static_w against the NVML readings its config cites.
3. KPU: per part and power mode, a large INT8 GEMM (4096 x 4096 x 4096, one Gemm) at full use:
   what it draws unthrottled at the mode's clock (power.<mode>_w = 0) and what clock fits the
   envelope (the controller's mean clock under it), against the vendor's peak TOPS / TDP.
4. KPU: every bundled model at batch 1 and 8 on every part and mode: the largest average power
   over the envelope (goal: never above 1).

Usage: bench/power_validation.py [ARCHSIM] [--skip-kpu-models]
No constant in configs/ was fitted to these numbers (docs/power_validation.md lists the sources).
"""
import csv, json, os, subprocess, sys, tempfile, tomllib
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
SHARED = os.path.join(SRC, "..", "shared")
ARCHSIM = next((a for a in sys.argv[1:] if not a.startswith("--")), os.path.join(SRC, "build", "archsim"))
CONFIG = {"NVIDIA T4": "gpu/t4.toml", "NVIDIA A100-SXM-80GB": "gpu/a100_sxm4_80gb.toml"}


def run(model, config, out, batch=None, sets=(), precision=None):
    cmd = [ARCHSIM, "run", model, "--arch", os.path.join(SRC, "configs", config), "--out", out, "--quiet", "--detail", "kernel"]
    if batch: cmd += ["--batch", str(batch)]
    if precision: cmd += ["--precision", precision]
    for s in sets: cmd += ["--set", s]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    with open(os.path.join(out, "metrics.json")) as f:
        return json.load(f)["total"], ""


def pct(model, ref):
    return 100.0 * (model - ref) / ref


def mlperf(tmp):
    rows = defaultdict(list)
    with open(os.path.join(SHARED, "reference", "power", "mlperf_power_a100_t4.csv")) as f:
        for r in csv.DictReader(row for row in f if not row.startswith("#")):
            if r["benchmark"] != "resnet50" or r["scenario"] != "Offline" or "do not count twice" in r["note"]:
                continue
            n = int(r["n_accelerators"])
            key = (r["accelerator"], r["gpu_power_limit_w"], r["gpu_batch"] or "256")
            rows[key].append((float(r["samples_per_s"]) / n, (float(r["avg_wall_power_w"]) - float(r["session_min_w_idle_proxy"])) / n,
                              r["round"]))
    print("MLPerf Inference Power, ResNet-50 Offline, INT8 (per GPU; measured = mean of the rows)")
    print(f"{'part':<22} {'cap_W':>6} {'batch':>5} {'rounds':<10} {'img/s meas':>10} {'img/s model':>11} {'err':>7}"
          f" {'W-idle meas':>11} {'W-idle model':>12} {'err':>7} {'clock_MHz':>9} {'throttled':>9}")
    worst = 0.0
    for (part, cap, batch), vals in sorted(rows.items()):
        sets = [f"power.tdp_w={cap}"] if cap else []
        t, err = run(os.path.join(SHARED, "models", "resnet50.onnx"), CONFIG[part], os.path.join(tmp, "mlperf"), batch, sets, "int8")
        if t is None:
            print(f"{part:<22} {cap or 'dflt':>6} {batch:>5} FAILED: {err}")
            continue
        thr_meas = sum(v[0] for v in vals) / len(vals)
        w_meas = sum(v[1] for v in vals) / len(vals)
        thr = int(batch) / t["latency_s"]
        w = t["power_avg_w"] - t["static_power_w"]
        e1, e2 = pct(thr, thr_meas), pct(w, w_meas)
        worst = max(worst, abs(e1), abs(e2))
        print(f"{part:<22} {cap or t['power_limit_w']:>6} {batch:>5} {','.join(v[2] for v in vals):<10} {thr_meas:>10.0f} {thr:>11.0f}"
              f" {e1:>+6.1f}% {w_meas:>11.1f} {w:>12.1f} {e2:>+6.1f}% {t['clock_mean_hz'] / 1e6:>9.0f} {100 * t['throttled_share']:>8.0f}%")
    print(f"largest error: {worst:.1f}% (goal: 20%)\n")


def idle():
    cited = {"gpu/a100_sxm4_80gb.toml": "50-62 W (nvidia-smi, idle A100 SXM4)", "gpu/a100_sxm4_40gb.toml": "52-53 W (nvidia-smi, P0 idle)",
             "gpu/t4.toml": "8-9 W (nvidia-smi, P8)", "gpu/a30.toml": "27-43 W (nvidia-smi)", "gpu/h100_sxm5_80gb.toml": "68-75 W (nvidia-smi, P0)"}
    print("Idle board power (energy.static_w) against NVML readings")
    for cfg, reading in cited.items():
        with open(os.path.join(SRC, "configs", cfg), "rb") as f:
            static = tomllib.load(f)["energy"]["static_w"]
        print(f"  {cfg:<26} model {static:>5.1f} W   NVML {reading}")
    print()


def kpu_gemm(tmp):
    wl = os.path.join(tmp, "gemm.toml")
    with open(wl, "w") as f:
        f.write('[gemm]\nfamily = "mlp"\nlayers = 8\ninput = 4096\nwidth = 4096\noutput = 4096\n')
    print("KPU: 4096 x 4096 x 4096 INT8 Gemms (batch 4096, eight in a chain) at full use, unthrottled at the mode's clock, and the "
          "clock the controller settles at under the mode's envelope (the last Gemm's)")
    print(f"{'part':<5} {'mode':<5} {'clock_MHz':>9} {'env_W':>6} {'unthrottled_W':>13} {'pJ/MAC all-in':>13} {'util%':>6}"
          f" {'fits_MHz':>8} {'avg_W':>6} {'TOPS/W model':>12} {'TOPS/W vendor':>13}")
    vendor = {}
    with open(os.path.join(SHARED, "reference", "kpu", "design_points.csv")) as f:
        for r in csv.DictReader(row for row in f if not row.startswith("#")):
            vendor[r["sku"].lower()] = float(r["tops_per_w"])
    for part in ("t64", "t256", "t768"):
        for mode in ("low", "mid", "high"):
            free, err = run(wl + "#gemm", f"kpu/{part}.toml", os.path.join(tmp, "g0"), 4096, [f"power_mode={mode}", f"power.{mode}_w=0"], "int8")
            cap, err2 = run(wl + "#gemm", f"kpu/{part}.toml", os.path.join(tmp, "g1"), 4096, [f"power_mode={mode}"], "int8")
            with open(os.path.join(tmp, "g1", "metrics.json")) as f:
                cap_ops = json.load(f)["ops"]
            if free is None or cap is None:
                print(f"{part:<5} {mode:<5} FAILED: {err or err2}")
                continue
            env = cap["power_limit_w"]
            pj_mac = free["energy_j"] / free["macs"] * 1e12
            tops_w = 2 * cap["macs"] / cap["energy_j"] * 1e-12
            settled_mhz = [o["clock_hz"] for o in cap_ops if o["macs"] > 0][-1] / 1e6
            print(f"{part:<5} {mode:<5} {free['clock_mean_hz'] / 1e6:>9.0f} {env:>6.0f} {free['power_avg_w']:>13.1f} {pj_mac:>13.3f}"
                  f" {100 * free['utilization']:>6.1f} {settled_mhz:>8.0f} {cap['power_avg_w']:>6.1f} {tops_w:>12.2f}"
                  f" {vendor[part] if mode == 'mid' else '':>13}")
    print()


def kpu_models(tmp):
    models = sorted(m for m in os.listdir(os.path.join(SHARED, "models")) if m.endswith(".onnx"))
    worst, worst_run, runs = 0.0, "", 0
    for m in models:
        for part in ("t64", "t256", "t768"):
            for mode in ("low", "mid", "high"):
                for batch in (1, 8):
                    t, _ = run(os.path.join(SHARED, "models", m), f"kpu/{part}.toml", os.path.join(tmp, "km"), batch, [f"power_mode={mode}"])
                    if t is None:
                        continue  # a model exported with a static batch refuses batch 8 (a one-line error)
                    runs += 1
                    r = t["power_avg_w"] / t["power_limit_w"]
                    if r > worst:
                        worst, worst_run = r, f"{m} on {part} {mode} at batch {batch}: {t['power_avg_w']:.2f} of {t['power_limit_w']:.0f} W"
    print(f"KPU: {runs} runs of the bundled models (every part, mode, batch 1 and 8): highest average power / envelope "
          f"{worst:.3f} ({worst_run}); goal: at most 1")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        mlperf(tmp)
        idle()
        kpu_gemm(tmp)
        if "--skip-kpu-models" not in sys.argv:
            kpu_models(tmp)


if __name__ == "__main__":
    main()
