#!/usr/bin/env python3
"""Energy per kernel on a lent NVIDIA GPU, from the board's own energy counter (NVML
nvmlDeviceGetTotalEnergyConsumption, mJ), for the GPU power model's checks (docs/power_validation.md).
Runs on the device machine (PyTorch and nvidia-ml-py there). Each phase runs one kernel for a few
seconds, either back to back (the board's power limit binds and the clock drops) or one call per
period with the card idle between (the limit does not bind: the kernel runs at the boost clock); the
counter's difference over the phase less the idle power times its span is the kernels' dynamic
energy. A sampler reads the SM clock and the power every 20 ms. Writes $OUT/energy.csv
(phase,seconds,calls,energy_j,idle_w,dynamic_j_per_call,median_sm_mhz_busy,median_power_w,
work_per_call,unit) and $OUT/samples.csv (t_s,phase,sm_mhz,power_w).
Usage (device machine): python3 tools/device/measure_energy.py
"""
import os, statistics, threading, time

import pynvml
import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
pynvml.nvmlInit()
H = pynvml.nvmlDeviceGetHandleByIndex(0)
T0 = time.time()
SAMPLES, STATE = [], {"phase": "start", "busy": False, "run": True}


def energy_j():
    return pynvml.nvmlDeviceGetTotalEnergyConsumption(H) / 1e3


def sampler():
    while STATE["run"]:
        SAMPLES.append((time.time() - T0, STATE["phase"], STATE["busy"],
                        pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM), pynvml.nvmlDeviceGetPowerUsage(H) / 1e3))
        time.sleep(0.02)


def phase(name, seconds, fn, work, unit, period_s=None):
    """fn back to back (period_s None), or once per period_s; returns the row for energy.csv."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    time.sleep(1.0)
    STATE["phase"] = name
    e0, t0, calls = energy_j(), time.time(), 0
    end = t0 + seconds
    while time.time() < end:
        if period_s is None:
            STATE["busy"] = True
            for _ in range(5):
                fn()
            calls += 5
            torch.cuda.synchronize()
        else:
            t = time.time()
            STATE["busy"] = True
            fn()
            torch.cuda.synchronize()
            STATE["busy"] = False
            calls += 1
            time.sleep(max(0.0, period_s - (time.time() - t)))
    STATE["busy"] = False
    torch.cuda.synchronize()
    t1, e1 = time.time(), energy_j()
    STATE["phase"] = "gap"
    return name, t1 - t0, calls, e1 - e0, work, unit


def main():
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    time.sleep(2)
    STATE["phase"] = "idle"
    e0, t0 = energy_j(), time.time()
    time.sleep(5)
    idle_w = (energy_j() - e0) / (time.time() - t0)
    rows = []
    n = 8192
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda")
    gemm = lambda: torch.matmul(a, b)
    rows.append(phase("fp16_gemm_8192_back_to_back", 8, gemm, 2 * n ** 3, "flop"))
    rows.append(phase("fp16_gemm_8192_one_per_8ms", 8, gemm, 2 * n ** 3, "flop", period_s=0.008))
    ai = torch.randint(-64, 64, (n, n), dtype=torch.int8, device="cuda")
    bi = torch.randint(-64, 64, (n, n), dtype=torch.int8, device="cuda")
    igemm = lambda: torch._int_mm(ai, bi)
    rows.append(phase("int8_gemm_8192_back_to_back", 8, igemm, 2 * n ** 3, "op"))
    rows.append(phase("int8_gemm_8192_one_per_8ms", 8, igemm, 2 * n ** 3, "op", period_s=0.008))
    del a, b, ai, bi
    x = torch.randn(1 << 28, dtype=torch.float16, device="cuda")
    g = lambda: F.gelu(x)
    rows.append(phase("gelu_2^28_back_to_back", 6, g, 4 * (1 << 28), "byte"))
    rows.append(phase("gelu_2^28_one_per_2ms", 6, g, 4 * (1 << 28), "byte", period_s=0.002))
    STATE["run"] = False
    th.join()
    with open(os.path.join(OUT, "samples.csv"), "w") as f:
        f.write("t_s,phase,busy,sm_mhz,power_w\n")
        for t, ph, busy, mhz, w in SAMPLES:
            f.write(f"{t:.3f},{ph},{int(busy)},{mhz},{w:.1f}\n")
    with open(os.path.join(OUT, "energy.csv"), "w") as f:
        f.write("phase,seconds,calls,energy_j,idle_w,dynamic_j_per_call,median_sm_mhz_busy,median_power_w,work_per_call,unit\n")
        print(f"idle {idle_w:.1f} W")
        for name, secs, calls, ej, work, unit in rows:
            busy = [s for s in SAMPLES if s[1] == name and s[2]]
            mhz = statistics.median(s[3] for s in busy) if busy else float("nan")
            pw = statistics.median(s[4] for s in SAMPLES if s[1] == name)
            dyn = (ej - idle_w * secs) / calls
            f.write(f"{name},{secs:.3f},{calls},{ej:.2f},{idle_w:.2f},{dyn:.6f},{mhz},{pw:.1f},{work},{unit}\n")
            print(f"{name:32s} {calls:6d} calls {ej:8.1f} J  dynamic {dyn * 1e3:9.3f} mJ/call  "
                  f"{dyn / work * 1e12:7.4f} pJ/{unit}  busy clock {mhz} MHz  power {pw:.0f} W  "
                  f"{calls * work / secs / 1e12:8.1f} T{unit}/s")


if __name__ == "__main__":
    main()
