#include "arch/cpu/cpu_config.h"

#include <algorithm>
#include <numeric>

#include "arch/energy/process_node.h"
#include "arch/memory/dram_params.h"
#include "arch/power/power_limit.h"
#include "sim/base/error.h"

namespace archsim {

double CpuConfig::mac_rate() const {
    const double amx = amx_macs.at(precision);
    if (amx > 0) return amx;
    const double simd = simd_macs.at(precision);
    return simd > 0 ? simd : simd_macs.fp32;
}

bool CpuConfig::uses_amx() const { return amx_macs.at(precision) > 0; }

double CpuConfig::mac_pj() const {
    if (!uses_amx() && simd_macs.at(precision) <= 0) return mac_pj_by.fp32;  // converted to fp32 and run there
    return mac_pj_by.at(precision);
}

namespace {

template <class F>
void declare_cache(ParamBinder<CpuConfig>& b, const std::string& level, F field, const CacheLevelConfig& d,
                   const std::string& unit, const std::string& source) {
    const bool shared = level == "l3";
    at_least(b.integer(level + ".kib", [field](CpuConfig& c) -> int64_t& { return field(c).kib; }, d.kib, "KiB",
                       std::string(shared ? "Shared " : "Per-core ") + unit + " capacity (" + source + ")"),
             1);
    at_most(at_least(b.integer(level + ".ways", [field](CpuConfig& c) -> int64_t& { return field(c).ways; }, d.ways, "ways",
                               unit + " associativity (" + source + "); at most 32766, the recency ranks the cache model keeps"),
                     1),
            32766);
    at_least(b.integer(level + ".latency_cycles", [field](CpuConfig& c) -> int64_t& { return field(c).latency_cycles; },
                       d.latency_cycles, "cycles", unit + " load-to-use latency (" + source + ")"),
             0);
    above(b.real(level + ".bytes_per_cycle", [field](CpuConfig& c) -> double& { return field(c).bytes_per_cycle; },
                 d.bytes_per_cycle, "bytes/cycle", unit + " bandwidth to the level above, per core (" + source + ")"),
          0);
    sram_at_node(at_least(b.real(level + ".pj_per_byte", [field](CpuConfig& c) -> double& { return field(c).pj_per_byte; }, 0,
                                 "pJ/byte", unit + " access energy, read or write"),
                          0),
                 [level](const ParamSet& p) { return 1024.0 * static_cast<double>(p.get_int(level + ".kib")); },
                 level + ".kib" + (shared ? "" : " (one core's)"));
}

}  // namespace

// Defaults: one AMD EPYC 7763 (Zen 3, "Milan"), from AMD's "Software Optimization Guide for AMD
// EPYC 7003 Processors" (pub. 56665, SOG) and the EPYC 7003 product page. Energies: Horowitz
// ISSCC 2014 (45 nm, 0.9 V) scaled to energy.node_nm and energy.vdd_v (7 nm at 0.75 V: x0.108),
// caches by their own capacity.
const ParamBinder<CpuConfig>& cpu_params() {
    static const ParamBinder<CpuConfig> b = [] {
        ParamBinder<CpuConfig> b;
        using C = CpuConfig;
        const std::string sog = "AMD SOG 56665, Zen 3";
        declare_machine_basics(b, {"cpu", "torch-frozen",
                                   "torch-frozen: TorchScript freeze + optimize_for_inference on oneDNN, what PyTorch deployments run on a CPU (docs/cpu_networks.md)",
                                   "fp32", "Operand precision of the run (accumulation in fp32 / int32)"});
        b.string("host.cpu", [](C& c) -> std::string& { return c.host_cpu; }, "", {},
                 "The machine this config was measured on, as tools/cpu-config names it (\"MODEL NAME, family F model M, N CPUs\"); "
                 "a run on another machine says so. \"\" = a published part, not tied to a machine");
        declare_clock_mhz(b, &C::clock_mhz, 2450.0, "Core clock under all-core load (EPYC 7763 base 2.45 GHz)");
        at_most(at_least(b.integer("cores", [](C& c) -> int64_t& { return c.cores; }, 64, "cores",
                                   "Cores the run uses, one thread each (EPYC 7763: 64)"),
                         1),
                1024);
        at_most(at_least(b.integer("core.vector_bits", [](C& c) -> int64_t& { return c.vector_bits; }, 256, "bits",
                                   "SIMD register width, a multiple of 128: 256 (AVX2) or 512 (AVX-512); sets the GEMM "
                                   "micro-tile (" + sog + ")"),
                         128),
                1024);
        at_least(b.integer("core.vector_registers", [](C& c) -> int64_t& { return c.vector_registers; }, 16, "registers",
                           "Architectural SIMD registers: 16 (AVX2) or 32 (AVX-512)"),
                 4);
        declare_per_precision<C>(b, "core.macs_per_cycle", [](C& c) -> PerPrecision& { return c.simd_macs; }, {32.0, 0.0, 0.0, 16.0},
                                 "MACs/core/cycle", "SIMD MACs (FMA) per core per cycle", "",
                                 {"VNNI vpdpbusd gives 4 per 32-bit lane; AVX2 without VNNI (vpmaddubsw + vpmaddwd) 2 per lane: "
                                  "2 pipes x 8 lanes x 2 (" + sog + ")",
                                  "native AVX512-FP16; 0 = none: fp16 runs converted at the fp32 rate",
                                  "AVX512-BF16 vdpbf16ps, 2 per fp32 lane; 0 = none", "2 FMA pipes x 8 lanes, > 0 (" + sog + ")"});
        b.rename("core.fp32_fma_per_cycle", "core.macs_per_cycle.fp32");
        b.rename("core.fp16_fma_per_cycle", "core.macs_per_cycle.fp16");
        b.rename("core.bf16_fma_per_cycle", "core.macs_per_cycle.bf16");
        b.rename("core.int8_mac_per_cycle", "core.macs_per_cycle.int8");
        declare_per_precision<C>(b, "core.amx_macs_per_cycle", [](C& c) -> PerPrecision& { return c.amx_macs; }, {},
                                 "MACs/core/cycle", "AMX tile MACs per core per cycle; 0 = no AMX path (the SIMD rate applies)", "",
                                 {"AMX-INT8", "AMX-FP16 (Granite Rapids)", "AMX-BF16", "no AMX format; keep 0"});
        b.rename("core.amx_bf16_fma_per_cycle", "core.amx_macs_per_cycle.bf16");
        b.rename("core.amx_int8_mac_per_cycle", "core.amx_macs_per_cycle.int8");
        above(b.real("core.pack_bytes_per_cycle", [](C& c) -> double& { return c.pack_bytes_per_cycle; }, 32.0, "bytes/cycle",
                     "Bytes a core copies per cycle while packing a GEMM block (one vector load + store per cycle)"),
              0);
        at_least(b.real("core.blas_pack_bytes_per_cycle", [](C& c) -> double& { return c.blas_pack_bytes_per_cycle; }, 0.0,
                        "bytes/cycle",
                        "Bytes of weight a core packs per cycle in the system BLAS, which repacks its weight operand at "
                        "every call (kernels a runtime profile's blas.ops sends there); 0 = core.pack_bytes_per_cycle. "
                        "tools/torch_latency.py calibrates it on the machine it runs on (OpenBLAS on one thread: "
                        "1.5-2.1 bytes/cycle, 5-7 GB/s, on the 2026-11-24 host)"),
                 0);
        at_least(b.real("core.reference_cycles_per_op", [](C& c) -> double& { return c.reference_cycles_per_op; }, 0.0,
                        "cycles/op",
                        "Core cycles per operation (a pooling window element, ...) of a kernel the runtime runs in the "
                        "framework's scalar reference code (a runtime profile's reference.ops: ATen's NCHW max pooling), "
                        "the operations split over the cores; 0 = such kernels run at the SIMD rate like any other. "
                        "tools/torch_latency.py calibrates it on the machine it runs on (13 cycles on the 2026-11-24 host)"),
                 0);
        at_least(b.integer("line_bytes", [](C& c) -> int64_t& { return c.line_bytes; }, 64, "bytes", "Cache line size (" + sog + ")"), 8);
        CacheLevelConfig l1{32, 8, 4, 64.0, 0};  // access energies derived from capacity and node
        CacheLevelConfig l2{512, 8, 12, 32.0, 0};
        CacheLevelConfig l3{32 * 1024, 16, 46, 32.0, 0};
        declare_cache(b, "l1d", [](C& c) -> CacheLevelConfig& { return c.l1; }, l1, "L1 data cache", sog);
        declare_cache(b, "l2", [](C& c) -> CacheLevelConfig& { return c.l2; }, l2, "L2 cache", sog);
        declare_cache(b, "l3", [](C& c) -> CacheLevelConfig& { return c.l3; }, l3, "L3 cache", sog);
        DramConfig dram;
        dram.bandwidth_gbps = 204.8;  // 8 channels DDR4-3200
        dram.latency_ns = 90.0;
        dram.channels = 8;
        dram.transaction_bytes = 64;
        dram.pj_per_byte = horowitz::kDramPjPerByte;  // Horowitz 2014: DRAM 1.3 nJ per 64-bit access (lower end)
        declare_dram_params<C>(b, [](C& c) -> DramConfig& { return c.dram; }, dram,
                               "EPYC 7003: 8 channels DDR4-3200, 204.8 GB/s; energy Horowitz 2014 1.3 nJ per 64 bits");
        at_most(above(b.real("efficiency.gemm", [](C& c) -> double& { return c.eff_gemm; }, 0.85, "fraction",
                             "Fraction of the peak MAC rate a GEMM micro-kernel sustains with its operands in L1/L2 "
                             "(calibrated by `archsim calibrate`; 0.85 an assumption before calibration)"),
                       0),
                1);
        at_most(above(b.real("efficiency.vector", [](C& c) -> double& { return c.eff_vector; }, 0.5, "fraction",
                             "Fraction of the peak SIMD rate elementwise, pooling and reduction kernels sustain (assumption)"),
                       0),
                1);
        at_most(above(b.real("efficiency.dram", [](C& c) -> double& { return c.eff_dram; }, 0.7, "fraction",
                             "Fraction of the peak DRAM bandwidth that streams sustain (calibrated; 0.7 an assumption, "
                             "STREAM-class figure)"),
                       0),
                1);
        at_least(b.real("core.op_overhead_us", [](C& c) -> double& { return c.op_overhead_us; }, 2.0, "us",
                        "Fixed cost of starting one operator: primitive dispatch and the OpenMP fork/join of its threads "
                        "(calibrated from the smallest kernels; 2 us an assumption before calibration)"),
                 0);
        b.boolean("gemm.prepacked_weights", [](C& c) -> bool& { return c.prepacked_weights; }, true,
                  "Weights are reordered into the micro-kernel's nr-column panel layout once, when the model is loaded "
                  "(oneDNN inference primitives), so inference packs no weight panels; false: BLIS packs B every call");
        b.string("gemm.blocking", [](C& c) -> std::string& { return c.blocking_name; }, "analytic", {"analytic", "search"},
                 "GEMM block sizes: analytic, the BLIS analytical model of the caches (Low et al. 2016, arch/cpu/blocking.h), "
                 "as the calibrated libraries block; search: chosen per GEMM by the mapping search among its variants "
                 "(arch/cpu/blocking_search.h; analytic under run --mapper fixed), which run --mapper search also applies");
        b.boolean("fusion.elementwise", [](C& c) -> bool& { return c.fuse_elementwise; }, true,
                  "Fuse elementwise operators into the kernel that produces their input (oneDNN post-ops: "
                  "eltwise, sum); false: each is its own pass over memory");
        at_most(above(b.real("efficiency.cache", [](C& c) -> double& { return c.eff_cache; }, 1.0, "fraction",
                             "Fraction of the L2 -> L1 and L3 -> L2 bandwidths (l2/l3.bytes_per_cycle) that streams sustain "
                             "(calibrated from the cache-resident memory-bound cases; 1.0 before calibration)"),
                       0),
                1);
        at_least(b.integer("sampling.sets_per_sample", [](C& c) -> int64_t& { return c.sample_sets; }, 16, "sets",
                           "Cache set sampling, a fast path of large kernels (off under `run --reference`): only the lines "
                           "of one cache set in this many are simulated, in every level, each standing for this many "
                           "lines (Kessler, Hill & Wood, IEEE Trans. Computers 1994); reduced to the largest divisor "
                           "that divides every level's number of sets; 1 = every line"),
                 1);
        at_least(b.real("sampling.min_kernel_l3s", [](C& c) -> double& { return c.sample_min_l3s; }, 2.0, "x l3.kib",
                        "Kernels whose tensors (inputs and outputs) span at least this many times the L3's capacity run "
                        "set-sampled (sampling.sets_per_sample), smaller ones line by line: a kernel near the L3's "
                        "capacity hits in some sets and misses in others, which the sampled sets do not represent "
                        "(sampled from 1x, resnet_basic_block's DRAM traffic on cpu/host -0.73% and one vgg16 "
                        "operator's energy +36%; from 2x every CPU config's golden check passes, docs/speed.md)"),
                 0);
        b.boolean("replay.repeats", [](C& c) -> bool& { return c.replay_repeats; }, true,
                  "Repeated instances (a transformer's layers, found in the kernel sequence), a fast path (off under "
                  "`run --reference`): once the caches meet one of an instance's first kernels as they met the same "
                  "kernel one instance before, renamed, it and the rest of the region (the last layer's tail included) "
                  "replay the records of the period before (exact; arch/cpu/repeat_replay.h); false: every instance "
                  "simulated");
        b.boolean("replay.units", [](C& c) -> bool& { return c.replay_units; }, true,
                  "Repeated loop units inside a kernel (a batched GEMM's instances, a tall GEMM's mc-row blocks), a "
                  "fast path (off under `run --reference`): once a core's L1d and L2 meet a unit as they met the unit "
                  "a period before, moved, the rest of the loop's units on that core replay their records moved, the "
                  "L3 and DRAM still simulated (exact; arch/cpu/unit_replay.h); false: every unit simulated");
        declare_process_node<C>(b, [](C& c) -> ProcessNode& { return c.node; }, {7.0, 0.75},
                                "EPYC 7763: TSMC N7 core dies; 0.75 V an assumption");
        declare_per_precision<C>(b, "energy.pj_per_mac", [](C& c) -> PerPrecision& { return c.mac_pj_by; }, {}, "pJ/MAC",
                                 "Energy of one SIMD or AMX MAC (FMA)");
        for (const char* p : {"fp32", "fp16", "bf16"}) b.rename(std::string("energy.fma_pj_") + p, std::string("energy.pj_per_mac.") + p);
        b.rename("energy.mac_pj_int8", "energy.pj_per_mac.int8");
        derive_mac_energies_at_node(b, "energy.pj_per_mac");
        declare_static_power(b, 0.0, "Static power; 0 = not modeled");
        declare_checked_limit(b, &C::tdp_w, "The vendor's TDP (EPYC 9654: 360 W).");
        return b;
    }();
    return b;
}

int64_t CpuConfig::sample_modulus() const {
    int64_t n = 0;
    for (const CacheLevelConfig* lvl : {&l1, &l2, &l3}) n = std::gcd(n, lvl->bytes() / (lvl->ways * line_bytes));
    return std::max<int64_t>(1, n);
}

int64_t CpuConfig::sample_ratio() const { return std::max<int64_t>(1, std::gcd(sample_sets, sample_modulus())); }

CpuConfig make_cpu_config(const ParamSet& p) {
    CpuConfig c = cpu_params().build(p);
    check_machine_basics(c);
    c.blocking_search = c.blocking_name == "search";
    if (c.simd_macs.fp32 <= 0) throw UserError("core.macs_per_cycle.fp32", "must be > 0 (every precision without its own rate runs at it)");
    for (const auto& [key, lvl] : {std::pair<const char*, const CacheLevelConfig*>{"l1d.kib", &c.l1}, {"l2.kib", &c.l2}, {"l3.kib", &c.l3}})
        if (lvl->bytes() % (lvl->ways * c.line_bytes) != 0)
            throw UserError(key, std::to_string(lvl->kib) + " KiB is not a whole number of " + std::to_string(lvl->ways) +
                                     "-way sets of " + std::to_string(c.line_bytes) + "-byte lines");
    if (c.vector_bits % 128 != 0) throw UserError("core.vector_bits", std::to_string(c.vector_bits) + " is not a multiple of 128");
    if (c.lanes() < 1) throw UserError("core.vector_bits", "narrower than one " + c.precision_name + " element");
    return c;
}

}  // namespace archsim
