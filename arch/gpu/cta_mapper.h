#pragma once
// CUTLASS/cuBLAS-style tiling of a GEMM into CTAs: tile menu, occupancy, waves. Pure functions.
#include <cstdint>
#include <string>
#include <utility>
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

/// Cycles of one main-loop iteration (a BK step) of a CTA of `tile` alone on its SM: the longer
/// of its MMAs (BM x BN x BK at the SM's sustained tensor rate, GpuConfig::sustained_rate) and its shared-memory traffic at
/// sm.smem_bytes_per_cycle: the A and B tiles written once by the asynchronous copies, then read
/// by every warp for its warp tile (warps in a 2 x 2 grid, 8 warps 4 x 2 along the longer side,
/// as CUTLASS's default configurations): (BM + BN) BK + (BM wn + BN wm) BK operand bytes. Small
/// tiles are bound by the second (64 x 64: 1.5x their MMA time on an A100).
double kstep_cycles(const CtaTile& tile, int64_t bk, const GpuConfig& cfg);

/// One GEMM kernel's launch shape on a GPU.
struct KernelPlan {
    CtaTile tile;
    int64_t split_k = 1;             ///< CTAs sharing one output tile, each over a K range (serial split-K)
    int64_t bk = 0;                  ///< K elements per main-loop iteration
    int64_t k_per_split = 0;         ///< K elements of one CTA: ceil(K / split_k) rounded up to bk
    int64_t k_iters = 0;             ///< main-loop iterations of one CTA: k_per_split / bk
    int64_t smem_bytes_per_cta = 0;  ///< stages x (BM + BN) x BK x operand bytes
    int64_t regs_per_thread = 0;     ///< BM x BN fp32 accumulators over the CTA's threads + 40, <= 255
    int64_t ctas_per_sm = 0;         ///< occupancy: min of the CTA, warp, register and shared-memory limits
    std::string limiter;             ///< which limit set ctas_per_sm: "ctas", "warps", "registers", "smem"
    int64_t ctas = 0;                ///< ceil(M/BM) x ceil(N/BN) x split_k x batch x groups
    int64_t waves = 0;               ///< ceil(ctas / (SMs x ctas_per_sm)); the last may be partial
    double cta_cycles = 0;           ///< one CTA's main loop in a full wave: k_iters x kstep_cycles x ctas_per_sm
    /// The kernel's estimated cycles: per wave, the longest of a CTA's main loop (kstep_cycles)
    /// with the SM shared by the CTAs that wave puts on it (a tail wave's fewer), k_iters x L2 latency /
    /// (stages - 1) (Little's law on the multistage pipeline), the wave's A and B tiles through
    /// the L2's bandwidth and one SM's tiles through its port; plus split-K's partial tiles
    /// (fp32, written and read back once per extra split) through the L2, and their chain (each
    /// split after the first waits for the one before to store its partial, then reads it:
    /// 2 x (tile through the SM port + L2 latency) per extra split).
    double est_cycles = 0;
    bool fits = false;               ///< false if the tile cannot be resident at all
    /// The raster order: consecutive CTAs walk down M within a column of tiles (true; CUTLASS's
    /// GemmIdentityThreadblockSwizzle puts the M tile on blockIdx.x, which the block scheduler
    /// dispatches fastest) or along N within a row of tiles (false). choose_kernel takes the
    /// one whose first wave shares more operand tiles.
    bool m_fastest = false;
    /// Stream-K (Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense
    /// Matrix-Matrix Multiplication on the GPU", PPoPP 2023; CUTLASS 2.11's
    /// ThreadblockSwizzleStreamK): the first `sk_tiles` output tiles are shared by `sk_ctas` CTAs
    /// (at most one wave), each over an equal share of their sk_tiles x k_iters main-loop
    /// iterations, and run first; the other tiles follow data-parallel, one CTA each. 0: none.
    /// A tile's share that does not start at its first iteration stores an fp32 partial sum;
    /// the CTA whose share starts the tile reads its peers' partials and stores C.
    int64_t sk_tiles = 0, sk_ctas = 0;
};

/// Plans `g` (one repeat step) with a given tile, its K split over `split_k` CTAs.
KernelPlan plan_kernel(const GemmView& g, const GpuConfig& cfg, const CtaTile& tile, int64_t split_k = 1);

/// Plans `g` with `tile` (in raster order `m_fastest`, KernelPlan::m_fastest) as stream-K's
/// hybrid runs it: the tail wave's tiles and one full wave's more (all tiles if there is no full
/// wave) shared by one wave of CTAs, each with at least 4 main-loop iterations, the rest
/// data-parallel, as CUTLASS's stream-K dispatch forms its stream-K wave from the last full wave
/// and the partial one. Its est_cycles: the stream-K wave as a wave whose CTAs each run the
/// largest share, plus the fixup (every partial sum stored and read back through the L2; the
/// owner with the most peers reading theirs in turn through its port, each with the L2 latency,
/// after its own share), then the data-parallel waves as plan_kernel prices them.
/// KernelPlan::sk_ctas is 0 (and the plan is plan_kernel's with split 1, in raster order
/// `m_fastest`) when the tiles fill whole waves; when, with no full wave, shares of at least 4
/// iterations give no more CTAs than tiles (data-parallel already is that schedule); when, after
/// a full wave, they give fewer CTAs than a wave; or when the operand tiles that two or more
/// stream-K tiles read exceed half the L2: the wave's CTAs work at different K offsets at once,
/// so those tiles are shared only through the L2 (a data-parallel wave's CTAs advance through K
/// together).
KernelPlan plan_stream_k(const GemmView& g, const GpuConfig& cfg, const CtaTile& tile, bool m_fastest = false);

/// One CTA's share of a stream-K wave within one output tile: tile `tile` (index among the
/// plan's tiles, instance-major, raster order within an instance), main-loop iterations
/// [iter_begin, iter_end) of its k_iters.
struct StreamKSegment {
    int64_t cta = 0, tile = 0, iter_begin = 0, iter_end = 0;
};
/// The stream-K wave's segments, CTA by CTA, each CTA's in iteration order: CTA x runs
/// iterations [x T / C, (x + 1) T / C) of the T = sk_tiles x k_iters, C = sk_ctas.
std::vector<StreamKSegment> stream_k_segments(const KernelPlan& plan);

/// The output tile (row, column) of a GEMM instance's tile index `tile` under `plan`'s raster
/// order (KernelPlan::m_fastest).
std::pair<int64_t, int64_t> tile_coords(const GemmView& g, const KernelPlan& plan, int64_t tile);

/// The distinct operand bytes (A row tiles and B column tiles, each over the plan's K per split)
/// the CTAs [first, last) of `plan` read, CTAs numbered instance, then tile (in raster order),
/// then split: what one wave must fetch if nothing is resident.
double wave_operand_bytes(const GemmView& g, const KernelPlan& plan, int64_t first, int64_t last, const GpuConfig& cfg);

/// `plan` in the raster order whose first wave reads fewer distinct operand bytes
/// (wave_operand_bytes), along N on a tie.
KernelPlan with_raster_order(const GemmView& g, KernelPlan plan, const GpuConfig& cfg);

/// Picks the tile and split as cuBLAS's heuristics do in spirit: among the menu tiles that fit,
/// each with split-K of 1, 2, 3, 4, 6, 8, 12 or 16 (a split keeps at least 4 main-loop
/// iterations; only while the tiles alone fill less than one wave), the plan with the fewest
/// estimated cycles; on a tie the fewer splits, then the larger tile (fewer CTAs, less operand
/// traffic); then its raster order (with_raster_order), as a library's threadblock swizzle is
/// chosen for L2 reuse. Split-K is
/// what cuBLAS and CUTLASS use for GEMMs with few output tiles and a long K (CUTLASS
/// GemmSplitKSerial). With `stream_k`, also the chosen tile's stream-K plan (search_kernel).
/// Throws std::logic_error if no tile fits.
KernelPlan choose_kernel(const GemmView& g, const GpuConfig& cfg, bool stream_k = false);

/// choose_kernel's choice with what its search looked at: the mapspace (the menu's tiles x the 8
/// split-K factors x the 2 raster orders; with stream-K, 2 more: the chosen tile's stream-K
/// plan in either order) and the plans it priced (each tile and split it planned before a limit
/// stopped that tile, the 2 raster orders of the winner, and with stream-K its stream-K plan).
struct KernelChoice {
    KernelPlan plan;
    int64_t mapspace = 0, evaluated = 0;
};
/// With `stream_k` (archsim's --mapper search), the chosen plan's tile in its raster order is
/// also planned as stream-K (plan_stream_k) and taken when its estimate is lower, each estimate
/// raised to the GEMM's compulsory DRAM time first (its operands and C once at the sustained
/// bandwidth: a kernel bound by that gains nothing from balancing its tiles). Only that
/// tile's: the same tile moves the same operand bytes per MAC, so the two differ in how evenly
/// the last tiles spread over the SMs and in the partial sums; a smaller tile's stream-K plan
/// can look faster by its cycles yet draw more energy, which a power limit turns into time.
/// Without it, the library heuristics' menu alone, which the GPU's kernel validation checks
/// (docs/gpu_validation.md).
KernelChoice search_kernel(const GemmView& g, const GpuConfig& cfg, bool stream_k = false);

/// A kernel plan as the run reports it: "CTA 128x256, split-K 2, N fastest", or with stream-K
/// "CTA 128x256, stream-K 140 tiles over 108 CTAs, N fastest".
std::string describe(const KernelPlan& plan);

/// The most operand bytes (A row tiles and B column tiles) one wave's K chunk loads: half the
/// smallest L2 of the bundled GPUs (the T4's 4 MiB), so a chunk's operands stay resident in any
/// of them while its CTAs read it. A simulation granularity, not a property of the part: the
/// hardware's window is the pipeline's stages x BK (kilobytes), far too many transactions to
/// simulate; fixed, so a larger L2 changes only what hits, never how loads are cut up.
constexpr int64_t kOperandChunkBytes = int64_t(2) << 20;
/// At most this many K chunks per wave (the simulation's cost: a transaction per chunk, CTA and
/// operand). A wave whose distinct whole-K tiles exceed 32 x 2 MiB cuts them into chunks of more
/// than 2 MiB (the 4096 x 12288 x 12288 GEMM's wave: 320 MB in 32 chunks of 10 MB, within every
/// bundled L2 but the T4's 4 MiB).
constexpr int64_t kMaxOperandChunks = 32;

/// How many K chunks the CTAs [first, last) of one wave of `plan` load their operands in: the
/// wave's distinct A row tiles and B column tiles over one chunk of K take at most
/// kOperandChunkBytes. A wave's CTAs advance through K together, so a B column tile that several
/// of them read is fetched from DRAM once per wave, not once per CTA, however long K is (cuBLAS
/// and CUTLASS stream K in BK steps: only the wave's k-window needs to be resident). 1 when the
/// whole-K tiles are that small; a 4096 x 12288 x 12288 fp16 GEMM's 128 x 256 tiles on an A100
/// would need 160 and take kMaxOperandChunks. At most one chunk per main-loop iteration. CTAs are
/// numbered as gemm_kernel numbers them: instance, then tile (raster order), then split.
int64_t operand_chunks(const GemmView& g, const KernelPlan& plan, int64_t first, int64_t last, const GpuConfig& cfg);

/// The config's cross-key check for the tile menu: throws UserError(key, reason) naming the SM
/// limit (shared memory per CTA or per SM, registers, warps, CTAs) that leaves no tile resident.
void check_cta_menu_fits(const GpuConfig& cfg);

}  // namespace archsim
