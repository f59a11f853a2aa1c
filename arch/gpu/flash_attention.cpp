#include "arch/gpu/flash_attention.h"

#include <algorithm>

namespace archsim {

namespace {

/// Sets plan `p`'s CTAs per SM (the CTA, warp and shared-memory limits, at least 1) and waves,
/// from its CTAs, warps and shared memory per CTA.
template <typename Plan>
void fill_occupancy(Plan& p, const GpuConfig& cfg) {
    const int64_t by_smem = std::max<int64_t>(1, cfg.smem_kib_per_sm * 1024 / std::max<int64_t>(1, p.smem_bytes_per_cta));
    p.ctas_per_sm = std::max<int64_t>(1, std::min({cfg.max_ctas_per_sm, cfg.max_warps_per_sm / p.warps, by_smem}));
    const int64_t slots = cfg.sms * p.ctas_per_sm;
    p.waves = (p.ctas + slots - 1) / slots;
}

}  // namespace

FlashPlan plan_flash_attention(const AttentionView& a, const GpuConfig& cfg) {
    FlashPlan p;
    if (a.head_dim <= 64) p.block_m = 128, p.block_n = 128;
    else if (a.head_dim <= 128) p.block_m = 128, p.block_n = 64;
    else p.block_m = 64, p.block_n = 64;
    const int64_t eb = operand_bytes(cfg.precision);
    p.q_tiles = (a.q_len + p.block_m - 1) / p.block_m;
    p.ctas = p.q_tiles * a.batch;
    p.kv_iters = (a.kv_len + p.block_n - 1) / p.block_n;
    p.smem_bytes_per_cta = (p.block_m + 2 * p.block_n) * std::max(a.head_dim, a.v_dim) * eb;
    fill_occupancy(p, cfg);
    return p;
}

int64_t flash_kv_seen(const AttentionView& a, const FlashPlan& p, int64_t q_tile) {
    if (!a.causal) return a.kv_len;
    const int64_t last_row = std::min(a.q_len, (q_tile + 1) * p.block_m) - 1;
    const int64_t visible = last_row + 1 + (a.kv_len - a.q_len);
    return std::min(a.kv_len, (visible + p.block_n - 1) / p.block_n * p.block_n);
}

double flash_cta_cycles(const AttentionView& a, int64_t rows, int64_t kv_seen, int64_t sharing, const GpuConfig& cfg) {
    const double scores = static_cast<double>(rows) * static_cast<double>(kv_seen);
    const double macs = scores * static_cast<double>(a.head_dim + a.v_dim);
    const double share = static_cast<double>(std::max<int64_t>(1, sharing));
    const double fma_per_score = std::max(0.0, a.ops_per_score - 1.0);
    const double softmax = std::max(scores * fma_per_score / cfg.cuda_fp32_fma, scores / cfg.sfu_ops);
    return (macs / cfg.sustained_rate() + softmax) * share;
}

FlashBwdPlan plan_flash_attention_backward(const AttentionView& a, const GpuConfig& cfg) {
    FlashBwdPlan p;
    if (a.head_dim <= 64) p.block_m = 128, p.block_n = 128;
    else if (a.head_dim <= 128) p.block_m = 64, p.block_n = 128;
    else p.block_m = 64, p.block_n = 64;
    const int64_t eb = operand_bytes(cfg.precision), dims = a.head_dim + a.v_dim;
    p.kv_tiles = (a.kv_len + p.block_n - 1) / p.block_n;
    p.ctas = p.kv_tiles * a.batch;
    p.smem_bytes_per_cta = (2 * p.block_m * dims + p.block_n * dims + p.block_m * p.block_n) * eb;
    fill_occupancy(p, cfg);
    return p;
}

int64_t flash_bwd_q_seen(const AttentionView& a, const FlashBwdPlan& p, int64_t kv_tile) {
    if (!a.causal) return a.q_len;
    // query row i sees key c when c <= i + (kv_len - q_len)
    const int64_t first_row = std::max<int64_t>(0, kv_tile * p.block_n - (a.kv_len - a.q_len));
    if (first_row >= a.q_len) return 0;
    return a.q_len - first_row / p.block_m * p.block_m;
}

double flash_bwd_cta_cycles(const AttentionView& a, int64_t cols, int64_t q_seen, int64_t sharing, const GpuConfig& cfg) {
    const double scores = static_cast<double>(cols) * static_cast<double>(q_seen);
    const double macs = scores * static_cast<double>(3 * a.head_dim + 2 * a.v_dim);
    const double share = static_cast<double>(std::max<int64_t>(1, sharing));
    const double fma_per_score = std::max(0.0, a.ops_per_score - 1.0);
    const double vector = std::max(scores * fma_per_score / cfg.cuda_fp32_fma, scores / cfg.sfu_ops);
    return (macs / cfg.sustained_rate() + vector) * share;
}

}  // namespace archsim
