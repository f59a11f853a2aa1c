#!/usr/bin/env python3
"""Load-to-use latency of an NVIDIA GPU's L2 and DRAM by pointer chasing (one thread follows a
random cyclic chain of 8-byte indices through a buffer, loads with ld.global.cg so L1 is bypassed;
Mei & Chu, "Dissecting GPU Memory Hierarchy through Microbenchmarking", IEEE TPDS 2017, is the
method): buffers of 4 MiB (L2-resident) up to 2 GiB (DRAM, pages spread across the HBM stacks),
chains of 64-byte-aligned elements 4 KiB apart on average. Prints cycles (clock64) and ns per load.
Runs on the device machine (CuPy). Writes $OUT/latency.csv.
Usage (device machine): python3 tools/device/latency_microbench.py
"""
import os, time

import cupy as cp
import numpy as np

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
SRC = r'''
extern "C" __global__ void chase(const unsigned long long* __restrict__ next, unsigned long long start, int steps,
                                 unsigned long long* out) {
    unsigned long long p = start;
    for (int i = 0; i < 256; ++i) p = __ldcg(next + p);          // warm the TLB and the path
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) p = __ldcg(next + p);
    long long t1 = clock64();
    out[0] = p; out[1] = (unsigned long long)(t1 - t0);
}
'''
MOD = cp.RawModule(code=SRC)
chase = MOD.get_function("chase")
FLUSH = cp.ones(64 << 20, dtype=cp.float32)


def measure(size_bytes, steps=20000, seed=1):
    slots = size_bytes // 64                       # one chain element per 64-byte line
    rng = np.random.default_rng(seed)
    order = rng.permutation(slots)
    nxt = np.zeros(size_bytes // 8, dtype=np.uint64)
    idx = order * 8                                # element index (8-byte words) of each line
    nxt[idx] = np.roll(idx, -1)
    d = cp.asarray(nxt)
    out = cp.zeros(2, dtype=cp.uint64)
    # the first call loads the module; each call starts where no earlier call has been, so a
    # buffer larger than the L2 is read from DRAM (a call touches (steps + 256) x 64 bytes)
    chase((1,), (1,), (d, np.uint64(idx[0]), np.int32(steps), out))
    cp.cuda.runtime.deviceSynchronize()
    start = idx[min(len(idx) - 1, (steps + 256) * 2)]
    if size_bytes > (64 << 20):
        FLUSH.sum()                                # 256 MiB through the L2: the upload's lines leave it
    cp.cuda.runtime.deviceSynchronize()
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ev0.record(); chase((1,), (1,), (d, np.uint64(start), np.int32(steps), out)); ev1.record(); ev1.synchronize()
    cycles = int(out[1].get()) / steps
    ns = cp.cuda.get_elapsed_time(ev0, ev1) * 1e6 / (steps + 256)
    del d
    return cycles, ns


def main():
    rows = []
    for mib in (1, 4, 8, 16, 24, 32, 48, 64, 128, 512, 2048):
        c, ns = measure(mib << 20, steps=20000 if mib < 128 else 8000)
        rows.append((mib, c, ns))
        print(f"{mib:5d} MiB  {c:7.1f} cycles  {ns:7.1f} ns per load", flush=True)
    with open(os.path.join(OUT, "latency.csv"), "w") as f:
        f.write("buffer_mib,cycles_per_load,ns_per_load\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]:.1f},{r[2]:.1f}\n")


if __name__ == "__main__":
    main()
