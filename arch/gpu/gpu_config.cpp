#include "arch/gpu/gpu_config.h"

#include <string>

#include "sim/base/error.h"

#include "arch/energy/process_node.h"
#include "arch/memory/dram_params.h"
#include "arch/power/power_limit.h"
#include "sim/base/per_precision.h"

namespace archsim {

double GpuConfig::tensor_rate() const { return precision == Precision::Fp32 && !fp32_as_tf32 ? 0.0 : tensor.at(precision); }

double GpuConfig::contraction_fma_pj() const { return tensor_rate() <= 0 ? cuda_mac_pj : mma_pj.at(precision); }

// Defaults: NVIDIA A100-SXM4-80GB (A100 datasheet and "NVIDIA A100 Tensor Core GPU Architecture"
// whitepaper). Energies: Horowitz ISSCC 2014 (45 nm, 0.9 V) scaled to energy.node_nm and
// energy.vdd_v (arch/energy/process_node.h; 7 nm at 0.75 V: x0.108).
const ParamBinder<GpuConfig>& gpu_params() {
    static const ParamBinder<GpuConfig> b = [] {
        ParamBinder<GpuConfig> b;
        using C = GpuConfig;
        const std::string wp = "A100 whitepaper";
        declare_machine_basics(b, {"gpu", "tensorrt",
                                   "tensorrt: NVIDIA's inference runtime (fused attention, GEMM epilogues, pointwise fusion; docs/gpu_validation.md)",
                                   "fp16", "Operand precision of the run (accumulation in fp32 / int32)"});
        declare_clock_mhz(b, &C::clock_mhz, 1410.0, "SM clock (boost; " + wp + ")");
        at_most(at_least(b.integer("sms", [](C& c) -> int64_t& { return c.sms; }, 108, "SMs", "Streaming multiprocessors (" + wp + ")"), 1), 1024);
        above(b.real("cuda.macs_per_cycle", [](C& c) -> double& { return c.cuda_fp32_fma; }, 64.0, "MACs/SM/cycle",
                     "FP32 MACs (FMA) per SM per cycle on the CUDA cores: 108 x 64 x 2 x 1.41 GHz = 19.5 TFLOPS (" + wp + ")"), 0);
        b.rename("cuda.fp32_fma_per_sm_per_cycle", "cuda.macs_per_cycle");
        above(b.real("cuda.sfu_ops_per_cycle", [](C& c) -> double& { return c.sfu_ops; }, 16.0, "ops/SM/cycle",
                     "Special-function results per SM per cycle: exp2, reciprocal, and the type conversions that are not "
                     "8/16-bit integer widening (CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table: "
                     "16 for compute capability 7.5, 8.0, 8.6 and 9.0)"), 0);
        declare_per_precision<C>(b, "sm.macs_per_cycle", [](C& c) -> PerPrecision& { return c.tensor; }, {2048, 1024, 1024, 512},
                                 "MACs/SM/cycle", "Dense tensor-core MACs (FMA) per SM per cycle, 0 = no tensor path", "",
                                 {"624 TOPS (" + wp + ")", "4 tensor cores x 256 = 312 TFLOPS (" + wp + ")", "312 TFLOPS (" + wp + ")",
                                  "TF32, used for fp32 operands when tensor.fp32_as_tf32: 156 TFLOPS (" + wp + ")",
                                  "none on the A100: FP8 tensor cores arrived with Ada and Hopper (H100 datasheet: 1978.9 dense FP8 "
                                  "TFLOPS, twice its FP16 rate); a run at fp8 on a part with 0 here is refused"});
        for (const char* p : {"int8", "fp16", "bf16"})
            b.rename(std::string("tensor.") + p + "_fma_per_sm_per_cycle", std::string("sm.macs_per_cycle.") + p);
        b.rename("tensor.tf32_fma_per_sm_per_cycle", "sm.macs_per_cycle.fp32");
        at_most(above(b.real("sm.mma_efficiency", [](C& c) -> double& { return c.mma_efficiency; }, 1.0, "fraction",
                             "Fraction of the tensor-core rate a GEMM main loop sustains under load: the best measured matmul "
                             "throughput over the datasheet peak (1 = the datasheet rate, where no measurement is published)"),
                      0),
                1);
        b.boolean("tensor.fp32_as_tf32", [](C& c) -> bool& { return c.fp32_as_tf32; }, true,
                  "fp32 contractions run as TF32 on the tensor cores where the part has them (cuDNN's default for convolutions)");
        at_least(b.integer("sm.registers", [](C& c) -> int64_t& { return c.regs_per_sm; }, 65536, "32-bit registers", "Register file per SM (" + wp + ")"), 1);
        at_least(b.integer("sm.smem_kib", [](C& c) -> int64_t& { return c.smem_kib_per_sm; }, 164, "KiB", "Shared memory per SM at the largest carve-out (" + wp + ")"), 1);
        above(b.real("sm.smem_bytes_per_cycle", [](C& c) -> double& { return c.smem_bytes_per_cycle; }, 128.0, "bytes/cycle",
                     "Shared-memory bandwidth per SM: 32 banks of 4 bytes each per cycle (CUDA C++ Programming Guide, "
                     "shared memory, compute capability 5.x and later)"), 0);
        at_least(b.integer("sm.smem_kib_per_cta", [](C& c) -> int64_t& { return c.smem_kib_per_cta; }, 163, "KiB", "Largest shared memory one CTA may use (CUDA programming guide, cc 8.0)"), 1);
        at_least(b.integer("sm.max_ctas", [](C& c) -> int64_t& { return c.max_ctas_per_sm; }, 32, "CTAs", "Resident CTAs per SM (CUDA programming guide, cc 8.0)"), 1);
        at_least(b.integer("sm.max_warps", [](C& c) -> int64_t& { return c.max_warps_per_sm; }, 64, "warps", "Resident warps per SM (CUDA programming guide, cc 8.0)"), 1);
        above(b.real("sm.l2_bytes_per_cycle", [](C& c) -> double& { return c.sm_l2_bytes_per_cycle; }, 64.0, "bytes/cycle",
                     "One SM's load/store port to the L2: a kernel with few CTAs cannot use the whole L2 bandwidth "
                     "(an assumption: one 64-byte L2 sector pair per clock; no vendor figure)"), 0);
        at_least(b.integer("l2.mib", [](C& c) -> int64_t& { return c.l2_mib; }, 40, "MiB", "L2 cache (" + wp + ")"), 1);
        above(b.real("l2.bytes_per_cycle", [](C& c) -> double& { return c.l2_bytes_per_cycle; }, 5120.0, "bytes/cycle",
                     "L2 read bandwidth for all SMs: 5120 B/clk = 7.2 TB/s at 1.41 GHz (2.3x V100's, " + wp + ")"), 0);
        at_least(b.integer("l2.latency_cycles", [](C& c) -> int64_t& { return c.l2_latency_cycles; }, 200, "cycles",
                           "L2 hit latency (microbenchmark order of magnitude; an assumption)"), 0);
        DramConfig dram;
        dram.bandwidth_gbps = 2039.0;
        dram.latency_ns = 400.0;
        dram.channels = 1;            // transactions are whole tile loads: one device-wide server
        dram.transaction_bytes = 65536;
        dram.pj_per_byte = 8 * 3.97;  // HBM2 3.97 pJ/bit, activation, on-die movement and I/O (O'Connor et al., MICRO 2017)
        declare_dram_params<C>(b, [](C& c) -> DramConfig& { return c.dram; }, dram,
                               "A100-SXM4-80GB HBM2e 2039 GB/s (datasheet); energy: HBM2 3.97 pJ/bit (O'Connor et al., MICRO 2017, Table 3)");
        at_most(above(b.real("dram.efficiency", [](C& c) -> double& { return c.dram_efficiency; }, 1.0, "fraction",
                             "Fraction of dram.bandwidth_gbps that streaming kernels sustain (one load and one store stream at "
                             "full occupancy, as RRZE-HPC gpu-benches' gpu-stream SCALE measures it); 1 = the datasheet peak, "
                             "where no measurement is published"),
                      0),
                1);
        at_least(b.real("kernel.launch_overhead_us", [](C& c) -> double& { return c.launch_overhead_us; }, 2.0, "us",
                        "Gap between back-to-back kernels launched one by one on a stream (RRZE-HPC gpu-benches "
                        "gpu-small-kernels: the time per launch of a minimal kernel, which includes that kernel's own short "
                        "run, so an upper bound)"), 0);
        at_least(b.real("kernel.graph_launch_overhead_us", [](C& c) -> double& { return c.graph_launch_overhead_us; }, 1.0, "us",
                        "The same gap when the kernels are launched as one CUDA graph (cudaGraphLaunch; the same benchmark "
                        "with -graph)"), 0);
        b.boolean("kernel.cuda_graphs", [](C& c) -> bool& { return c.cuda_graphs; }, false,
                  "Kernels launched as a CUDA graph: kernel.graph_launch_overhead_us apart instead of kernel.launch_overhead_us "
                  "(a job's runtime_tuning.cuda_graphs sets it)");
        at_least(b.integer("kernel.gemv_max_rows", [](C& c) -> int64_t& { return c.gemv_max_rows; }, 8, "rows",
                           "GEMMs with at most this many rows (M: tokens x batch, pixels) run as bandwidth-bound GEMV / "
                           "split-K kernels that stream the weights across all SMs, as cuBLAS and TensorRT choose for skinny "
                           "products such as LLM decode; 0 = always CTA-tiled GEMMs"),
                 0);
        b.boolean("fusion.elementwise", [](C& c) -> bool& { return c.fuse_elementwise; }, true,
                  "Fuse elementwise operators into the kernel that produces their input (bias/activation/residual "
                  "epilogues, as TensorRT and cuDNN do); false: each is its own kernel");
        declare_process_node<C>(b, [](C& c) -> ProcessNode& { return c.node; }, {7.0, 0.75},
                                "A100: TSMC N7; 0.75 V an assumption (NVIDIA publishes no core voltage)");
        // Tensor-core MACs: NVIDIA's own per-instruction energies (W. Dally, "Hardware for Deep
        // Learning", Hot Chips 2023 keynote): HMMA 110 pJ for 128 FP16 ops (64 FMAs), IMMA 160 pJ
        // for 1024 INT8 ops (512 MACs), each plus about 30 pJ of instruction fetch, decode and
        // operand fetch. Applied as published (the keynote names no node).
        declare_per_precision<C>(b, "energy.pj_per_mac", [](C& c) -> PerPrecision& { return c.mma_pj; },
                                 {(160.0 + 30.0) / 512.0, (110.0 + 30.0) / 64.0, (110.0 + 30.0) / 64.0,
                                  (110.0 + 30.0) / 64.0 * horowitz::tf32_mac_pj() / horowitz::mac_pj(Precision::Fp16),
                                  (110.0 + 30.0) / 64.0 * horowitz::mac_pj(Precision::Fp8) / horowitz::mac_pj(Precision::Fp16)},
                                 "pJ/MAC", "Energy of one tensor-core MAC (FMA), its instruction's overhead included", "",
                                 {"IMMA (160 + 30 pJ) / 512 MACs (Dally, Hot Chips 2023)", "HMMA (110 + 30 pJ) / 64 FMAs (Dally, Hot Chips 2023)",
                                  "as FP16: HMMA (110 + 30 pJ) / 64 FMAs (Dally, Hot Chips 2023)",
                                  "TF32: FP16's HMMA energy x Horowitz's TF32/FP16 MAC ratio (1.67 / 2.0)",
                                  "FP8 (E4M3): FP16's HMMA energy x Horowitz's FP8/FP16 MAC ratio (1.05 / 2.0); NVIDIA publishes no "
                                  "FP8 figure"});
        for (const char* p : {"int8", "fp16", "bf16"}) b.rename(std::string("energy.mma_pj_") + p, std::string("energy.pj_per_mac.") + p);
        b.rename("energy.mma_pj_tf32", "energy.pj_per_mac.fp32");
        mac_at_node(at_least(b.real("energy.pj_per_cuda_mac", [](C& c) -> double& { return c.cuda_mac_pj; }, 0, "pJ/MAC",
                                    "Energy of one FP32 FMA on the CUDA cores (vector operations are charged half of it)"),
                             0),
                    Precision::Fp32);
        b.rename("energy.fma_pj_fp32", "energy.pj_per_cuda_mac");
        sram_at_node(at_least(b.real("registers.pj_per_byte", [](C& c) -> double& { return c.rf_pj_per_byte; }, 0, "pJ/byte",
                                     "Register-file access energy"),
                              0),
                     [](const ParamSet&) { return 8.0 * 1024; }, "one 8 KiB register-file bank");
        b.rename("energy.rf_pj_per_byte", "registers.pj_per_byte");
        // Shared memory / L1 and L2: the per-level energies measured on an A100-SXM4-40GB with
        // microbenchmarks (Antepara et al., "Benchmark-driven Models for Energy Analysis and
        // Attribution of GPU-Accelerated Supercomputing", SC'25, Table 3: L1 1.59 pJ/bit, L2
        // 4.71 pJ/bit, access path included), moved to another node by the Dennard rule
        // (node_scale(node, vdd) / node_scale(7 nm, 0.75 V): 1 on the A100 itself).
        auto from_a100 = [](double pj_per_bit) {
            return [pj_per_bit](const ParamSet& p) { return 8.0 * pj_per_bit * node_scale_of(p) / horowitz::node_scale(7.0, 0.75); };
        };
        derived(at_least(b.real("smem.pj_per_byte", [](C& c) -> double& { return c.smem_pj_per_byte; }, 0, "pJ/byte",
                                "Shared-memory / L1 access energy"), 0),
                from_a100(1.59), "1.59 pJ/bit measured on an A100 (Antepara et al., SC'25) scaled to energy.node_nm and energy.vdd_v");
        b.rename("energy.smem_pj_per_byte", "smem.pj_per_byte");
        derived(at_least(b.real("l2.pj_per_byte", [](C& c) -> double& { return c.l2_pj_per_byte; }, 0, "pJ/byte", "L2 access energy"), 0),
                from_a100(4.71), "4.71 pJ/bit measured on an A100 (Antepara et al., SC'25) scaled to energy.node_nm and energy.vdd_v");
        b.rename("energy.l2_pj_per_byte", "l2.pj_per_byte");
        declare_static_power(b, 54.0, "Idle board power, drawn whatever runs (leakage, HBM refresh, the board's fixed draw): an A100's "
                                      "constant power, 54 W (Antepara et al., SC'25; nvidia-smi reads 50-62 W on an idle A100 SXM4)");
        at_least(b.real("power.tdp_w", [](C& c) -> double& { return c.tdp_w; }, 400.0, "W",
                        "Board power limit the SM clock is lowered to fit (arch/power/power_controller.h; A100 SXM4 datasheet: "
                        "400 W); 0 = no limit"),
                 0);
        above(b.real("power.min_mhz", [](C& c) -> double& { return c.power_min_mhz; }, 210.0, "MHz",
                     "Lowest clock the power controller may set (A100: its lowest supported graphics clock, 210 MHz, where an idle "
                     "A100 SXM4 sits in nvidia-smi)"), 0);
        const std::string m4 = "A100-SXM4-80GB, nvidia-smi -q under load: seven boards at 1410 MHz read 893.75-931.25 mV, "
                               "one at 1155 MHz 743.75 mV (huggingface/m4-logs, tr_141-hanging/.../gpu.query.all.txt); idle at 210 MHz "
                               "706.25-712.5 mV";
        at_least(b.real("voltage.floor_mhz", [](C& c) -> double& { return c.vf_floor_mhz; }, 210.0, "MHz",
                        "Clock of the lowest voltage-frequency point: below it the voltage stays at voltage.floor_v (" + m4 + ")"), 0);
        at_least(b.real("voltage.floor_v", [](C& c) -> double& { return c.vf_floor_v; }, 0.709, "V", "Core voltage at voltage.floor_mhz (" + m4 + ")"), 0);
        at_least(b.real("voltage.knee_mhz", [](C& c) -> double& { return c.vf_knee_mhz; }, 1155.0, "MHz",
                        "Clock of a middle voltage-frequency point, where the voltage starts to rise steeply; 0 = none (" + m4 + ")"), 0);
        at_least(b.real("voltage.knee_v", [](C& c) -> double& { return c.vf_knee_v; }, 0.744, "V", "Core voltage at voltage.knee_mhz (" + m4 + ")"), 0);
        at_least(b.real("voltage.boost_v", [](C& c) -> double& { return c.vf_boost_v; }, 0.9125, "V",
                        "Core voltage at clock_mhz, where the energies hold; 0 = no published voltage: the voltage is taken as fixed "
                        "and power as proportional to the clock (" + m4 + ": their mean, 912.5 mV)"), 0);
        at_least(b.real("power.clock_step_mhz", [](C& c) -> double& { return c.power_step_mhz; }, 15.0, "MHz",
                        "Step between the clocks the power controller may set below clock_mhz (A100: its supported graphics clocks, "
                        "nvidia-smi -q -d SUPPORTED_CLOCKS, lie 15 MHz apart); 0 = any clock"), 0);
        above(b.real("power.window_us", [](C& c) -> double& { return c.power_window_us; }, 1000.0, "us",
                     "Window the power controller averages power over before it sets the next clock (assumption: GPU Boost "
                     "reacts on millisecond scales; no vendor figure)"),
              0);
        return b;
    }();
    return b;
}

GpuConfig make_gpu_config(const ParamSet& p) {
    GpuConfig c = gpu_params().build(p);
    // FP8 runs on the tensor cores only: a GPU without FP8 ones cannot run it (the other
    // precisions have a CUDA-core path)
    check_machine_basics(c, [&](Precision p) { return p == Precision::Fp8 ? c.tensor.fp8 : 1.0; }, "sm.macs_per_cycle", "GPU",
                         "is 0: this GPU has no FP8 tensor cores (they arrived with Ada and Hopper), so a run at fp8 cannot be "
                         "simulated on it; choose fp16, bf16 or int8");
    if (c.power_min_mhz > c.clock_mhz)
        throw UserError("power.min_mhz", "the lowest clock (" + format_value(c.power_min_mhz) + " MHz) is above clock_mhz (" +
                                             format_value(c.clock_mhz) + " MHz)");
    if (c.vf_boost_v > 0 && c.vf_knee_mhz > 0 && !(c.vf_floor_mhz < c.vf_knee_mhz && c.vf_knee_mhz < c.clock_mhz))
        throw UserError("voltage.knee_mhz", "the voltage-frequency points must rise: voltage.floor_mhz (" + format_value(c.vf_floor_mhz) +
                                                ") < voltage.knee_mhz (" + format_value(c.vf_knee_mhz) + ") < clock_mhz (" +
                                                format_value(c.clock_mhz) + ")");
    if (c.vf_boost_v > 0 && !(c.vf_floor_mhz < c.clock_mhz))
        throw UserError("voltage.floor_mhz", "is not below clock_mhz (" + format_value(c.clock_mhz) + " MHz)");
    return c;
}

}  // namespace archsim
