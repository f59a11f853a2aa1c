#pragma once
// Typed configuration of the GPU model (kind = "gpu").
#include <cstdint>
#include <string>

#include "arch/common/machine_keys.h"
#include "arch/energy/process_node.h"
#include "arch/memory/dram_config.h"
#include "arch/power/power_spec.h"
#include "sim/base/precision.h"
#include "sim/base/params.h"
#include "sim/base/per_precision.h"

namespace archsim {

/// An NVIDIA-style GPU: SMs with CUDA cores and tensor cores, shared memory and registers per
/// SM, a shared L2 and HBM/GDDR. Filled only by make_gpu_config(), already valid.
struct GpuConfig : MachineBasics {
    double clock_mhz = 0;
    int64_t sms = 0;
    double cuda_fp32_fma = 0;                 ///< FP32 FMA per SM per cycle on CUDA cores
    double sfu_ops = 0;                       ///< exp2 / reciprocal / type conversions per SM per cycle (the quarter-rate pipe)
    PerPrecision tensor;                      ///< dense tensor-core MACs per SM per cycle (fp32: TF32); 0 = none
    double mma_efficiency = 1.0;              ///< fraction of the tensor-core rate a GEMM main loop sustains
    bool fp32_as_tf32 = true;
    int64_t regs_per_sm = 0, smem_kib_per_sm = 0, smem_kib_per_cta = 0, max_ctas_per_sm = 0, max_warps_per_sm = 0;
    double smem_bytes_per_cycle = 0;          ///< shared-memory bandwidth per SM, bytes per cycle
    double sm_l2_bytes_per_cycle = 0;         ///< one SM's port to the L2, bytes per cycle
    int64_t l2_mib = 0;
    double l2_bytes_per_cycle = 0;
    int64_t l2_latency_cycles = 0;
    DramConfig dram;                          ///< dram.bandwidth_gbps is the datasheet peak; the model runs at dram_efficiency of it
    double dram_efficiency = 1.0;             ///< fraction of the datasheet DRAM bandwidth streaming kernels sustain
    double launch_overhead_us = 0;            ///< gap between back-to-back kernels launched on one stream, us
    double graph_launch_overhead_us = 0;      ///< the same gap when the kernels are launched as one CUDA graph, us
    bool cuda_graphs = false;                 ///< kernels launched as CUDA graphs (graph_launch_overhead_us apart)
    int64_t gemv_max_rows = 0;                ///< GEMMs with at most this many rows run as bandwidth-bound GEMV kernels
    bool fuse_elementwise = true;
    PerPrecision mma_pj;                      ///< energy per tensor-core MAC (fp32: TF32), pJ
    ProcessNode node;                         ///< what the Horowitz-derived energy defaults are scaled to
    double cuda_mac_pj = 0;                   ///< energy per CUDA-core FP32 FMA, pJ
    double rf_pj_per_byte = 0, smem_pj_per_byte = 0, l2_pj_per_byte = 0;
    double power_window_us = 1000;            ///< the power controller's averaging window, us
    double power_min_mhz = 0;                 ///< the lowest clock the controller may set, MHz
    double power_step_mhz = 0;                ///< step between the clocks it may set, MHz
    double vf_floor_mhz = 0, vf_floor_v = 0;  ///< lowest voltage-frequency point (voltage.floor_*)
    double vf_knee_mhz = 0, vf_knee_v = 0;    ///< middle point (voltage.knee_*); 0 = none
    double vf_boost_v = 0;                    ///< voltage at clock_mhz; 0 = unknown: fixed voltage

    /// The board's power envelope for MachineBase::enable_power: static_w, the limit tdp_w, the
    /// nominal (boost) clock down to power_min_mhz, and the voltage-frequency points (floor, knee,
    /// clock_mhz at vf_boost_v; none when vf_boost_v is 0: power then ~ clock).
    PowerSpec power_spec() const {
        PowerSpec s;
        s.static_w = static_w, s.limit_w = tdp_w, s.window_us = power_window_us, s.nominal_mhz = clock_mhz, s.min_mhz = power_min_mhz;
        s.step_mhz = power_step_mhz;
        if (vf_boost_v > 0) {
            s.points.push_back({vf_floor_mhz, vf_floor_v});
            if (vf_knee_mhz > 0) s.points.push_back({vf_knee_mhz, vf_knee_v});
            s.points.push_back({clock_mhz, vf_boost_v});
        }
        return s;
    }

    double cycle_ps() const { return 1e6 / clock_mhz; }
    /// The gap before each kernel, us: graph_launch_overhead_us under cuda_graphs, else launch_overhead_us.
    double kernel_gap_us() const { return cuda_graphs ? graph_launch_overhead_us : launch_overhead_us; }
    /// The DRAM the model simulates: `dram` with its bandwidth lowered to what streams sustain
    /// (bandwidth_gbps x dram_efficiency).
    DramConfig sustained_dram() const {
        DramConfig d = dram;
        d.bandwidth_gbps *= dram_efficiency;
        return d;
    }
    /// Tensor-core FMA per SM per cycle for the run's precision (TF32 for fp32 when allowed);
    /// 0 when the part has no tensor path for it (the contraction then runs on CUDA cores).
    double tensor_rate() const;
    /// FMA per SM per cycle a contraction gets: tensor_rate(), or the CUDA cores' FP32 rate.
    double contraction_rate() const { return tensor_rate() > 0 ? tensor_rate() : cuda_fp32_fma; }
    /// FMA per SM per cycle a main loop sustains: contraction_rate() times mma_efficiency on the
    /// tensor path (the CUDA-core path at its full rate).
    double sustained_rate() const { return tensor_rate() > 0 ? tensor_rate() * mma_efficiency : cuda_fp32_fma; }
    /// Energy of one contraction FMA on the path contraction_rate() uses, pJ.
    double contraction_fma_pj() const;
};

/// The declared parameters of kind "gpu".
const ParamBinder<GpuConfig>& gpu_params();

/// Builds a GpuConfig from resolved values.
GpuConfig make_gpu_config(const ParamSet& p);

}  // namespace archsim
