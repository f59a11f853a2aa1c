#!/usr/bin/env python3
"""Measures single kernels and board power on a lent NVIDIA GPU, for the GPU model's checks
(docs/gpu_validation.md, "Measured here"). Runs on the device machine (PyTorch, nvidia-smi and
Nsight Compute there); writes to $OUT:
  info.txt      GPU, driver, PyTorch, `nvidia-smi -q -d CLOCK,POWER,VOLTAGE,TEMPERATURE`
  kernels.csv   family,m,n,k,kernel_us,wall_us,reps: FP16 kernels at LLMCompass's A100 shapes
                (../shared/reference/gpu/kernels_a100): torch.matmul, torch.softmax(-1),
                F.layer_norm (eager, no affine), F.gelu (erf); kernel_us = median of CUDA-event
                spans around one call, wall_us = median host time of one call + synchronize
                (LLMCompass's protocol); the same input each repeat, as LLMCompass's scripts do
  power.csv     t_s,phase,power_w,sm_mhz,mem_mhz,temp_c: nvidia-smi every 100 ms while the card
                idles, runs one FP16 GEMM back to back, and one GELU back to back
  phases.csv    phase,start_s,end_s,calls,flops_or_bytes: what each phase ran (t_s's time base)
  ncu.csv       Nsight Compute's per-kernel DRAM and L2 bytes and time (caches flushed before
                each kernel) for the reduction kernels and two GEMMs
Usage (device machine): python3 tools/device/measure_kernels.py [--skip-ncu]
"""
import os, statistics, subprocess, sys, threading, time

import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "log.txt"), "a")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


MATMUL = [(m, 12288, 12288) for m in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)] + \
         [(8192, n, n) for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)]
ROWS = [(4096, 1 << e) for e in range(5, 16)] + [(1 << e, 4096) for e in range(5, 16)]
GELU = [1 << e for e in range(10, 30)]


def timed(fn, budget_s=0.25):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter(); fn(); torch.cuda.synchronize(); one = time.perf_counter() - t
    reps = int(max(5, min(100, budget_s / max(one, 1e-6))))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in ev:
        s.record(); fn(); e.record()
    torch.cuda.synchronize()
    kern = statistics.median(s.elapsed_time(e) for s, e in ev) * 1e3
    wall = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); torch.cuda.synchronize(); wall.append(time.perf_counter() - t)
    return kern, statistics.median(wall) * 1e6, reps


def info():
    with open(os.path.join(OUT, "info.txt"), "w") as f:
        p = torch.cuda.get_device_properties(0)
        f.write(f"torch {torch.__version__} cuda {torch.version.cuda} device {p.name} sms {p.multi_processor_count} "
                f"mem {p.total_memory} l2 {getattr(p, 'L2_cache_size', '?')}\n")
        f.write(subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,VOLTAGE,TEMPERATURE,PERFORMANCE"],
                               capture_output=True, text=True).stdout)
    log(open(os.path.join(OUT, "info.txt")).read().splitlines()[0])


class Sampler:
    """nvidia-smi's power, clocks and temperature every 100 ms, stamped on arrival."""

    FIELDS = "power.draw.instant,clocks.sm,clocks.mem,temperature.gpu"

    def __init__(self, t0):
        fields = self.FIELDS
        if subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                          capture_output=True).returncode != 0:
            fields = fields.replace("power.draw.instant", "power.draw")
        log("sampling", fields)
        self.t0, self.rows, self.phase = t0, [], "idle"
        self.p = subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", "100"],
                                  stdout=subprocess.PIPE, text=True)
        self.th = threading.Thread(target=self.read, daemon=True)
        self.th.start()

    def read(self):
        for line in self.p.stdout:
            self.rows.append((time.time() - self.t0, self.phase, line.strip().replace(" ", "")))

    def stop(self):
        self.p.terminate()
        self.th.join(timeout=2)
        with open(os.path.join(OUT, "power.csv"), "w") as f:
            f.write("t_s,phase,power_w,sm_mhz,mem_mhz,temp_c\n")
            for t, ph, line in self.rows:
                f.write(f"{t:.3f},{ph},{line}\n")


def power():
    t0 = time.time()
    s = Sampler(t0)
    phases = []

    def phase(name, seconds, fn, work):
        s.phase = name
        start = time.time() - t0
        calls = 0
        end_at = time.time() + seconds
        while time.time() < end_at:
            for _ in range(10):
                fn()
            calls += 10
            torch.cuda.synchronize()
        end = time.time() - t0
        phases.append((name, start, end, calls, work))
        log(f"{name}: {calls} calls in {end - start:.2f} s, {calls * work / (end - start) / 1e12:.1f} T/s")

    time.sleep(3)
    phases.append(("idle", 0.0, time.time() - t0, 0, 0))
    a = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
    phase("gemm_fp16_8192", 10.0, lambda: torch.matmul(a, b), 2 * 8192 ** 3)
    s.phase = "cool"; time.sleep(3)
    a2 = torch.randn(4096, 12288, dtype=torch.float16, device="cuda")
    b2 = torch.randn(12288, 12288, dtype=torch.float16, device="cuda")
    phase("gemm_fp16_4096x12288x12288", 6.0, lambda: torch.matmul(a2, b2), 2 * 4096 * 12288 * 12288)
    del a, b, a2, b2
    s.phase = "cool"; time.sleep(3)
    x = torch.randn(1 << 28, dtype=torch.float16, device="cuda")
    phase("gelu_2^28", 6.0, lambda: F.gelu(x), 4 * (1 << 28))
    del x
    s.phase = "idle_after"; time.sleep(2)
    s.stop()
    with open(os.path.join(OUT, "phases.csv"), "w") as f:
        f.write("phase,start_s,end_s,calls,flops_or_bytes\n")
        for p in phases:
            f.write(",".join(str(v) for v in p) + "\n")
    torch.cuda.empty_cache()


def kernels():
    rows = []
    for m, n, k in MATMUL:
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        b = torch.randn(k, n, dtype=torch.float16, device="cuda")
        rows.append(("matmul", m, n, k) + timed(lambda: torch.matmul(a, b)))
        del a, b
    for m, n in ROWS:
        x = torch.randn(m, n, dtype=torch.float16, device="cuda")
        rows.append(("softmax", m, n, 0) + timed(lambda: torch.softmax(x, dim=-1)))
        rows.append(("layernorm", m, n, 0) + timed(lambda: F.layer_norm(x, [n])))
        del x
    for n in GELU:
        x = torch.randn(n, dtype=torch.float16, device="cuda")
        rows.append(("gelu", n, 0, 0) + timed(lambda: F.gelu(x)))
        del x
    with open(os.path.join(OUT, "kernels.csv"), "w") as f:
        f.write("family,m,n,k,kernel_us,wall_us,reps\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]},{r[2]},{r[3]},{r[4]:.3f},{r[5]:.3f},{r[6]}\n")
    for r in rows:
        log(f"{r[0]:9s} {r[1]:>10} {r[2]:>6} {r[3]:>6} kernel {r[4]:10.2f} us  wall {r[5]:10.2f} us")
    torch.cuda.empty_cache()


def ncu_target():
    """Each kernel of interest once, between cudaProfilerStart/Stop (run under ncu)."""
    cases = []
    for m, n in ((4096, 1024), (4096, 4096), (4096, 8192), (4096, 16384), (4096, 32768), (32768, 4096)):
        x = torch.randn(m, n, dtype=torch.float16, device="cuda")
        cases.append((f"softmax {m}x{n}", lambda x=x: torch.softmax(x, dim=-1)))
        cases.append((f"layernorm {m}x{n}", lambda x=x, n=n: F.layer_norm(x, [n])))
    g = torch.randn(1 << 28, dtype=torch.float16, device="cuda")
    cases.append(("gelu 2^28", lambda: F.gelu(g)))
    for m, n, k in ((4096, 12288, 12288), (8192, 8192, 8192), (256, 12288, 12288)):
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        b = torch.randn(k, n, dtype=torch.float16, device="cuda")
        cases.append((f"matmul {m}x{n}x{k}", lambda a=a, b=b: torch.matmul(a, b)))
    for _, fn in cases:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for name, fn in cases:
        torch.cuda.nvtx.range_push(name)
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.cudart().cudaProfilerStop()


def ncu():
    ncu_bin = subprocess.run("command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1",
                             shell=True, capture_output=True, text=True).stdout.strip()
    if not ncu_bin:
        log("ncu not found"); return
    metrics = "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active"
    cmd = [ncu_bin, "--profile-from-start", "off", "--clock-control", "none", "--nvtx",
           "--metrics", metrics, "--csv", sys.executable, os.path.abspath(__file__), "--ncu-target"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    with open(os.path.join(OUT, "ncu.csv"), "w") as f:
        f.write(r.stdout)
    log("ncu rc", r.returncode, r.stderr[-2000:])
    for line in r.stdout.splitlines()[-40:]:
        log(line[:300])


if __name__ == "__main__":
    if "--ncu-target" in sys.argv:
        ncu_target(); sys.exit(0)
    t = time.time()
    info()
    power(); log(f"power done {time.time() - t:.0f} s")
    kernels(); log(f"kernels done {time.time() - t:.0f} s")
    if "--skip-ncu" not in sys.argv:
        ncu(); log(f"ncu done {time.time() - t:.0f} s")
