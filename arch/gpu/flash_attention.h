#pragma once
// How a FlashAttention-2 forward kernel (T. Dao, "FlashAttention-2: Faster Attention with Better
// Parallelism and Work Partitioning", 2023) covers a fused attention kernel on a GPU: one CTA
// per (query tile, batch x head) keeps its Q tile in shared memory, streams K and V in tiles,
// computes S = Q K^T and P V on the tensor cores and the online softmax on the CUDA cores, and
// writes only O: the score matrix never reaches L2 or HBM.
#include <cstdint>

#include "arch/gpu/gpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// The kernel's tiling, occupancy and per-CTA time.
struct FlashPlan {
    /// Query rows per CTA and key/value rows per main-loop step, with 4 warps: the sm80 choices
    /// of flash-attention's csrc/flash_attn/src/flash_fwd_launch_template.h (head dim <= 64:
    /// 128 x 128; <= 128: 128 x 64); larger heads 64 x 64 (our choice, to fit shared memory).
    int64_t block_m = 0, block_n = 0, warps = 4;
    int64_t q_tiles = 0;               ///< ceil(q_len / block_m)
    int64_t ctas = 0;                  ///< q_tiles x batch
    int64_t kv_iters = 0;              ///< ceil(kv_len / block_n)
    int64_t smem_bytes_per_cta = 0;    ///< (block_m + 2 block_n) x max(head_dim, v_dim) x operand bytes: Q, K and V tiles
    int64_t ctas_per_sm = 0;           ///< min of the CTA, warp and shared-memory limits (>= 1)
    int64_t waves = 0;                 ///< ceil(ctas / (SMs x ctas_per_sm))
};

/// Plans `a` on `cfg` (operand bytes of cfg.precision).
FlashPlan plan_flash_attention(const AttentionView& a, const GpuConfig& cfg);

/// The key/value positions query tile `q_tile` processes: all kv_len, or under a causal mask
/// only the blocks up to its last row's diagonal (FlashAttention-2 skips the blocks that are
/// masked out entirely; the diagonal block is computed and masked in registers).
int64_t flash_kv_seen(const AttentionView& a, const FlashPlan& p, int64_t q_tile);

/// One CTA's time, cycles, when `sharing` CTAs share its SM and it processes `kv_seen` key
/// positions (flash_kv_seen): its MMAs (rows x kv_seen x
/// (head_dim + v_dim) MACs at the SM's sustained tensor rate / sharing) then its softmax, not overlapped
/// with them (FlashAttention-2 on Ampere). The softmax takes, per score, the longer of two pipes
/// that issue side by side: the FMA pipe (ops_per_score - 1 operations: scale, mask, max,
/// subtract, sum, normalize) and the quarter-rate special-function pipe (cuda.sfu_ops_per_cycle)
/// for the one exponential (MUFU.EX2; FlashAttention-3, Shah et al. 2024, names its throughput
/// as the softmax's bound). int8's dequantization of S and requantization of P are not priced:
/// a kernel can do them at full rate (magic-number conversions) or on the quarter-rate pipe, and
/// which TensorRT's kernels do is not published.
double flash_cta_cycles(const AttentionView& a, int64_t rows, int64_t kv_seen, int64_t sharing, const GpuConfig& cfg);

/// How FlashAttention-2's backward (Dao 2023, algorithm 2; AttentionView::backward) covers the
/// kernel: one CTA per (key/value tile, batch x head) keeps its K and V tiles and its dK and dV
/// accumulators on chip and walks the query tiles, loading Q, dO and the softmax statistics,
/// recomputing S and P, and adding its share of dQ into an fp32 accumulator in global memory
/// (atomic adds, in L2); a pre-kernel computes rowsum(dO O) per query row and a post-kernel
/// converts the dQ accumulator to the operand type.
struct FlashBwdPlan {
    /// Query rows per step and key/value rows per CTA, 8 warps: the sm80 choices of
    /// flash-attention 2's csrc/flash_attn/src/flash_bwd_launch_template.h (head dim <= 64:
    /// 128 x 128; <= 128: 64 x 128); larger heads 64 x 64 (our choice, to fit shared memory).
    int64_t block_m = 0, block_n = 0, warps = 8;
    int64_t kv_tiles = 0;             ///< ceil(kv_len / block_n)
    int64_t ctas = 0;                 ///< kv_tiles x batch
    /// Q and dO tiles (double-buffered), the K and V tiles and the block_m x block_n dS tile,
    /// x operand bytes
    int64_t smem_bytes_per_cta = 0;
    int64_t ctas_per_sm = 0;          ///< min of the CTA, warp and shared-memory limits (>= 1)
    int64_t waves = 0;                ///< ceil(ctas / (SMs x ctas_per_sm))
};

/// Plans the backward kernel `a` on `cfg` (operand bytes of cfg.precision).
FlashBwdPlan plan_flash_attention_backward(const AttentionView& a, const GpuConfig& cfg);

/// The query rows key/value tile `kv_tile` meets: all q_len, or under a causal mask those from
/// the query tile holding the first row that sees the tile's first column (the tiles above it
/// are masked out entirely and skipped).
int64_t flash_bwd_q_seen(const AttentionView& a, const FlashBwdPlan& p, int64_t kv_tile);

/// One backward CTA's time, cycles, when `sharing` CTAs share its SM and its `cols` key
/// positions meet `q_seen` query rows: its five MMAs (cols x q_seen x (3 head_dim + 2 v_dim)
/// MACs: S, dP and dV, dQ, dK) at the SM's sustained tensor rate / sharing, then its elementwise
/// work per score on the FMA pipe (ops_per_score - 1: the softmax recomputation and the dropout,
/// softmax and scale gradients) or the special-function pipe (one exponential), the longer, as
/// flash_cta_cycles.
double flash_bwd_cta_cycles(const AttentionView& a, int64_t cols, int64_t q_seen, int64_t sharing, const GpuConfig& cfg);

}  // namespace archsim
