#!/usr/bin/env python3
"""Energy per operation and per byte of an NVIDIA GPU's units, measured with microbenchmarks in the
manner of AccelWattch (Kandiah et al., MICRO 2021) and Antepara et al. (SC'25): each kernel keeps
one unit busy (tensor-core mma.sync, FP32 FMA, DRAM stream, L2-resident reads, shared-memory
reads) back to back for a few seconds while NVML's board energy counter
(nvmlDeviceGetTotalEnergyConsumption) and a 20 ms sampler of SM clock and power run. Energy per
unit of work = (energy - idle power x span) / work, at the clock the board held (the 700 W limit
binds for some); `clocked_idle` (every SM sleeping in __nanosleep) gives the power of a clocked,
idle chip, for a second attribution. Runs on the device machine (CuPy compiles the kernels with
NVRTC; nvidia-ml-py reads NVML). Writes $OUT/microbench.csv and $OUT/microbench_samples.csv.
With --clocks it runs instead the voltage set: kernels that keep the tensor pipe (and FP32
pipe) busy, each at full occupancy (the limit binds and the clock drops) and with one warp per SM
(it does not); the ratio of their energies per unit of work is (V(f) / V(boost))^2. Writes
$OUT/microbench_clocks.csv.
Usage (device machine): python3 tools/device/energy_microbench.py [--clocks]
"""
import os, statistics, sys, threading, time

import cupy as cp
import pynvml

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)

SRC = r'''
extern "C" __global__ void hmma(float* out, int iters) {
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x, s = tid * 2654435761u + 12345u;
    unsigned a[4][4], b[4][2];
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        #pragma unroll
        for (int q = 0; q < 4; ++q) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; a[j][q] = 0x38003800u | (s & 0x03FF03FFu); }
        #pragma unroll
        for (int q = 0; q < 2; ++q) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; b[j][q] = 0x38003800u | (s & 0x03FF03FFu); }
    }
    float c[4][4];
    #pragma unroll
    for (int j = 0; j < 4; ++j) { c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f; }
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            #pragma unroll
            for (int k = 0; k < 4; ++k) {
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                    : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                    : "r"(a[k][0]), "r"(a[k][1]), "r"(a[k][2]), "r"(a[k][3]), "r"(b[(j + k) & 3][0]), "r"(b[(j + k) & 3][1]));
            }
        }
    }
    float t = 0.f;
    #pragma unroll
    for (int j = 0; j < 4; ++j) t += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    out[tid] = t;
}
extern "C" __global__ void ffma(float* out, int iters) {
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[8];
    #pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = 0.1f + 0.01f * j + 1e-7f * tid;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], -1.0f, 1.0f);   // x, 1 - x, x, ...: every bit toggles
    }
    float t = 0.f;
    #pragma unroll
    for (int j = 0; j < 8; ++j) t += x[j];
    out[tid] = t;
}
extern "C" __global__ void copy4(const float4* __restrict__ in, float4* __restrict__ out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = in[i];
}
extern "C" __global__ void read4(const float4* __restrict__ in, float* out, long long n, int passes) {
    float ax = 0.f, ay = 0.f, az = 0.f, aw = 0.f;
    for (int p = 0; p < passes; ++p)
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
            float4 v = __ldcg(in + i); ax += v.x; ay += v.y; az += v.z; aw += v.w;
        }
    out[blockIdx.x * blockDim.x + threadIdx.x] = ax + ay + az + aw;
}
extern "C" __global__ void smem4(float* out, int iters) {
    __shared__ float4 s[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float ax = 0.f, ay = 0.f, az = 0.f, aw = 0.f;
    unsigned idx = threadIdx.x;
    for (int it = 0; it < iters; ++it) { float4 v = s[idx]; ax += v.x; ay += v.y; az += v.z; aw += v.w; idx = (idx + 32) & 2047; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = ax + ay + az + aw;
}
// the tensor pipe and the FP32 pipe busy together: R FMAs per thread beside each 16 mma.sync, so
// the board's limit binds harder and the clock drops (one kernel, two clocks: the voltage's share)
#define MIX(NAME, R) \
extern "C" __global__ void NAME(float* out, int iters) { \
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x, s = tid * 2654435761u + 12345u; \
    unsigned a[4][4], b[4][2]; \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) { \
        _Pragma("unroll") for (int q = 0; q < 4; ++q) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; a[j][q] = 0x38003800u | (s & 0x03FF03FFu); } \
        _Pragma("unroll") for (int q = 0; q < 2; ++q) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; b[j][q] = 0x38003800u | (s & 0x03FF03FFu); } } \
    float c[4][4], x[R]; \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) { c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f; } \
    _Pragma("unroll") for (int j = 0; j < R; ++j) x[j] = 0.1f + 0.01f * j + 1e-7f * tid; \
    for (int it = 0; it < iters; ++it) { \
        _Pragma("unroll") for (int j = 0; j < 4; ++j) { \
            _Pragma("unroll") for (int k = 0; k < 4; ++k) { \
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
                    : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3]) \
                    : "r"(a[k][0]), "r"(a[k][1]), "r"(a[k][2]), "r"(a[k][3]), "r"(b[(j + k) & 3][0]), "r"(b[(j + k) & 3][1])); } } \
        _Pragma("unroll") for (int j = 0; j < R; ++j) x[j] = fmaf(x[j], -1.0f, 1.0f); } \
    float t = 0.f; \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) t += c[j][0] + c[j][1] + c[j][2] + c[j][3]; \
    _Pragma("unroll") for (int j = 0; j < R; ++j) t += x[j]; \
    out[tid] = t; }
MIX(mix32, 32)
MIX(mix96, 96)
extern "C" __global__ void sleepk(float* out, int iters) {
    for (int it = 0; it < iters; ++it) __nanosleep(1000);
    if (threadIdx.x == 0) out[blockIdx.x] = 1.f;
}
'''

pynvml.nvmlInit()
H = pynvml.nvmlDeviceGetHandleByIndex(0)
SMS = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
MOD = cp.RawModule(code=SRC, options=("-std=c++17",))
T0 = time.time()
SAMPLES, STATE = [], {"phase": "start", "run": True}


def sampler():
    while STATE["run"]:
        SAMPLES.append((time.time() - T0, STATE["phase"], pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM),
                        pynvml.nvmlDeviceGetPowerUsage(H) / 1e3))
        time.sleep(0.02)


def energy_j():
    return pynvml.nvmlDeviceGetTotalEnergyConsumption(H) / 1e3


def measure(name, launch, work, unit, seconds=3.0):
    """launch() once per call; work per call in `unit`s; back to back for `seconds`."""
    launch(); cp.cuda.runtime.deviceSynchronize()
    t = time.time(); launch(); cp.cuda.runtime.deviceSynchronize(); one = time.time() - t
    STATE["phase"] = name
    e0, t0, calls = energy_j(), time.time(), 0
    while time.time() - t0 < seconds:
        launch(); calls += 1
        if calls % 4 == 0:
            cp.cuda.runtime.deviceSynchronize()
    cp.cuda.runtime.deviceSynchronize()
    t1, e1 = time.time(), energy_j()
    STATE["phase"] = "gap"
    time.sleep(0.5)
    return dict(name=name, seconds=t1 - t0, calls=calls, energy_j=e1 - e0, work=work * calls, unit=unit, one_call_s=one)


def main():
    threading.Thread(target=sampler, daemon=True).start()
    time.sleep(1); STATE["phase"] = "idle"
    e0, t0 = energy_j(), time.time(); time.sleep(4); idle_w = (energy_j() - e0) / (time.time() - t0)
    STATE["phase"] = "gap"
    out = cp.zeros(SMS * 64 * 1024, dtype=cp.float32)
    k = {n: MOD.get_function(n) for n in ("hmma", "ffma", "copy4", "read4", "smem4", "sleepk", "mix32", "mix96")}
    rows = []
    if "--clocks" in sys.argv:
        # one kernel at full occupancy (the limit binds) and at one warp per SM (it does not)
        rows.append(measure("clocked_idle", lambda: k["sleepk"]((SMS * 4,), (128,), (out, cp.int32(2000))), 0, "none"))
        for name, r in (("mix32", 32), ("mix96", 96), ("hmma", 0)):
            for label, ctas, threads in ((f"{name}_full", SMS * 4, 256), (f"{name}_quarter", SMS, 32)):
                warps = ctas * threads // 32
                rows.append(measure(label, lambda n=name, c=ctas, t=threads: k[n]((c,), (t,), (out, cp.int32(2048))),
                                    warps * 2048 * (16 * 2048 + 32 * r), "mac+fma"))
        return finish(rows, idle_w)
    # clocked idle: every SM holds a sleeping CTA of 4 warps
    rows.append(measure("clocked_idle", lambda: k["sleepk"]((SMS * 4,), (128,), (out, cp.int32(2000))), 0, "none"))
    it = 4096
    for label, ctas, threads in (("hmma_full", SMS * 4, 256), ("hmma_quarter", SMS, 32)):
        warps = ctas * threads // 32
        rows.append(measure(label, lambda c=ctas, t=threads: k["hmma"]((c,), (t,), (out, cp.int32(it))),
                            warps * it * 16 * 2048, "mac"))
    for label, ctas, threads in (("ffma_full", SMS * 8, 256), ("ffma_quarter", SMS, 32)):
        rows.append(measure(label, lambda c=ctas, t=threads: k["ffma"]((c,), (t,), (out, cp.int32(it * 16))),
                            ctas * threads * it * 16 * 8, "fma"))
    n = (1 << 30) // 16
    src = cp.ones(n * 4, dtype=cp.float32); dst = cp.empty_like(src)
    rows.append(measure("dram_copy", lambda: k["copy4"]((SMS * 16,), (256,), (src, dst, cp.int64(n))), 2 * n * 16, "byte"))
    rows.append(measure("dram_read", lambda: k["read4"]((SMS * 16,), (256,), (src, out, cp.int64(n), cp.int32(1))), n * 16, "byte"))
    n2 = (16 << 20) // 16
    rows.append(measure("l2_read", lambda: k["read4"]((SMS * 16,), (256,), (src, out, cp.int64(n2), cp.int32(64))), 64 * n2 * 16, "byte"))
    rows.append(measure("smem_read", lambda: k["smem4"]((SMS * 8,), (256,), (out, cp.int32(it * 16))), SMS * 8 * 256 * it * 16 * 16, "byte"))
    finish(rows, idle_w)


def finish(rows, idle_w):
    STATE["run"] = False
    time.sleep(0.1)
    tag = "_clocks" if "--clocks" in sys.argv else ""
    with open(os.path.join(OUT, f"microbench{tag}_samples.csv"), "w") as f:
        f.write("t_s,phase,sm_mhz,power_w\n")
        for t, ph, mhz, w in SAMPLES:
            f.write(f"{t:.3f},{ph},{mhz},{w:.1f}\n")
    ci = next(r for r in rows if r["name"] == "clocked_idle")
    ci_w = ci["energy_j"] / ci["seconds"]
    with open(os.path.join(OUT, f"microbench{tag}.csv"), "w") as f:
        f.write("name,seconds,calls,energy_j,idle_w,clocked_idle_w,median_sm_mhz,median_power_w,work,unit,rate_per_s,"
                "pj_per_unit_over_idle,pj_per_unit_over_clocked_idle\n")
        print(f"idle {idle_w:.1f} W, clocked idle {ci_w:.1f} W, SMs {SMS}")
        for r in rows:
            ss = [s for s in SAMPLES if s[1] == r["name"]]
            mhz = statistics.median(s[2] for s in ss); pw = statistics.median(s[3] for s in ss)
            rate = r["work"] / r["seconds"] if r["work"] else 0.0
            e_idle = (r["energy_j"] - idle_w * r["seconds"]) / r["work"] * 1e12 if r["work"] else 0.0
            e_ci = (r["energy_j"] - ci_w * r["seconds"]) / r["work"] * 1e12 if r["work"] else 0.0
            f.write(f"{r['name']},{r['seconds']:.3f},{r['calls']},{r['energy_j']:.2f},{idle_w:.2f},{ci_w:.2f},{mhz},{pw:.1f},"
                    f"{r['work']},{r['unit']},{rate:.4e},{e_idle:.5f},{e_ci:.5f}\n")
            print(f"{r['name']:14s} {r['calls']:6d} calls ({r['one_call_s'] * 1e3:7.2f} ms) {r['energy_j'] / r['seconds']:6.1f} W "
                  f"clock {mhz} MHz  rate {rate:.3e} {r['unit']}/s  {e_idle:8.4f} pJ/{r['unit']} over idle, "
                  f"{e_ci:8.4f} over clocked idle")


if __name__ == "__main__":
    main()
