#pragma once
// CUTLASS/cuBLAS-style tiling of a GEMM into CTAs: tile menu, occupancy, waves. Pure functions.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/gpu/gpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// A CTA tile from the menu: BM x BN outputs, a K step of 64 bytes of operand (BK = 64 / operand
/// bytes: 64 int8, 32 fp16/bf16, 16 tf32/fp32, CUTLASS's defaults), `warps` warps and a
/// `stages`-deep shared-memory pipeline (CUTLASS multistage).
struct CtaTile {
    int64_t bm = 128, bn = 128, warps = 4, stages = 3;
};

/// The menu, largest first: 256x128 (8 warps), 128x256 (8), 128x128 (4), 128x64 (4),
/// 64x128 (4), 64x64 (4), as in CUTLASS's default GEMM configurations.
const std::vector<CtaTile>& cta_tile_menu();

/// One GEMM kernel's launch shape on a GPU.
struct KernelPlan {
    CtaTile tile;
    int64_t bk = 0;                  ///< K elements per main-loop iteration
    int64_t k_iters = 0;             ///< ceil(K / bk)
    int64_t smem_bytes_per_cta = 0;  ///< stages x (BM + BN) x BK x operand bytes
    int64_t regs_per_thread = 0;     ///< BM x BN fp32 accumulators over the CTA's threads + 40, <= 255
    int64_t ctas_per_sm = 0;         ///< occupancy: min of the CTA, warp, register and shared-memory limits
    std::string limiter;             ///< which limit set ctas_per_sm: "ctas", "warps", "registers", "smem"
    int64_t ctas = 0;                ///< ceil(M/BM) x ceil(N/BN) x batch x groups
    int64_t waves = 0;               ///< ceil(ctas / (SMs x ctas_per_sm)); the last may be partial
    double cta_cycles = 0;           ///< one CTA's main loop: BM x BN x k_iters x BK / (SM rate / ctas_per_sm)
    double est_cycles = 0;           ///< waves x cta_cycles: the compute-bound kernel time
    bool fits = false;               ///< false if the tile cannot be resident at all
};

/// Plans `g` (one repeat step) with a given tile.
KernelPlan plan_kernel(const GemmView& g, const GpuConfig& cfg, const CtaTile& tile);

/// Picks the tile as cuBLAS's heuristics do in spirit: among the menu tiles that fit, the one
/// with the fewest compute-bound cycles (which includes the tail wave's quantization); on a tie
/// the larger tile (fewer CTAs, less operand traffic). Throws std::logic_error if none fits.
KernelPlan choose_kernel(const GemmView& g, const GpuConfig& cfg);

/// The config's cross-key check for the tile menu: throws UserError(key, reason) naming the SM
/// limit (shared memory per CTA or per SM, registers, warps, CTAs) that leaves no tile resident.
void check_cta_menu_fits(const GpuConfig& cfg);

}  // namespace archsim
