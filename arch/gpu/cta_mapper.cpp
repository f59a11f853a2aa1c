#include "arch/gpu/cta_mapper.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>
#include <stdexcept>

#include "sim/base/error.h"

namespace archsim {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const std::vector<CtaTile>& cta_tile_menu() {
    static const std::vector<CtaTile> menu = {
        {256, 128, 8, 3}, {128, 256, 8, 3}, {128, 128, 4, 3}, {128, 64, 4, 3}, {64, 128, 4, 3}, {64, 64, 4, 3}};
    return menu;
}

double kstep_cycles(const CtaTile& tile, int64_t bk, const GpuConfig& cfg) {
    const int64_t eb = operand_bytes(cfg.precision);
    const bool tall = tile.bm >= tile.bn;
    const int64_t wm = tile.warps >= 8 ? (tall ? 4 : 2) : 2, wn = tile.warps / wm;
    const double smem_bytes = static_cast<double>(((tile.bm + tile.bn) + (tile.bm * wn + tile.bn * wm)) * bk * eb);
    const double mma = static_cast<double>(tile.bm * tile.bn * bk) / cfg.sustained_rate();
    return std::max(mma, smem_bytes / cfg.smem_bytes_per_cycle);
}

KernelPlan plan_kernel(const GemmView& g, const GpuConfig& cfg, const CtaTile& tile, int64_t split_k) {
    KernelPlan p;
    p.tile = tile;
    p.split_k = std::max<int64_t>(1, split_k);
    const int64_t eb = operand_bytes(cfg.precision);
    p.bk = 64 / eb;
    p.k_per_split = ceil_div(ceil_div(std::max<int64_t>(g.k, 1), p.split_k), p.bk) * p.bk;
    p.k_iters = p.k_per_split / p.bk;
    p.smem_bytes_per_cta = tile.stages * (tile.bm + tile.bn) * p.bk * eb;
    const int64_t threads = tile.warps * 32;
    p.regs_per_thread = std::min<int64_t>(255, tile.bm * tile.bn / threads + 40);
    const int64_t regs_per_cta = p.regs_per_thread * threads;
    struct Limit { int64_t n; const char* name; };
    const Limit limits[] = {
        {cfg.max_ctas_per_sm, "ctas"},
        {cfg.max_warps_per_sm / tile.warps, "warps"},
        {cfg.regs_per_sm / regs_per_cta, "registers"},
        {p.smem_bytes_per_cta <= cfg.smem_kib_per_cta * 1024 ? cfg.smem_kib_per_sm * 1024 / p.smem_bytes_per_cta : 0, "smem"}};
    p.ctas_per_sm = limits[0].n;
    p.limiter = limits[0].name;
    for (const auto& l : limits)
        if (l.n < p.ctas_per_sm) {
            p.ctas_per_sm = l.n;
            p.limiter = l.name;
        }
    p.fits = p.ctas_per_sm >= 1;
    if (!p.fits) return p;
    const int64_t tiles = ceil_div(g.m, tile.bm) * ceil_div(g.n, tile.bn) * g.batch * g.groups;
    p.ctas = tiles * p.split_k;
    const int64_t slots = cfg.sms * p.ctas_per_sm;
    p.waves = ceil_div(p.ctas, slots);
    const double loop_alone = static_cast<double>(p.k_iters) * kstep_cycles(tile, p.bk, cfg);  // a CTA alone on its SM
    p.cta_cycles = loop_alone * static_cast<double>(p.ctas_per_sm);
    const double latency_floor = static_cast<double>(p.k_iters * cfg.l2_latency_cycles) / static_cast<double>(std::max<int64_t>(1, tile.stages - 1));
    const double operand_bytes_per_cta = static_cast<double>((tile.bm + tile.bn) * p.k_per_split * eb);
    for (int64_t w = 0; w < p.waves; ++w) {
        const int64_t in_wave = std::min(slots, p.ctas - w * slots);
        const int64_t per_sm = std::min(p.ctas_per_sm, ceil_div(in_wave, cfg.sms));
        const double compute = loop_alone * static_cast<double>(per_sm);
        const double l2 = static_cast<double>(in_wave) * operand_bytes_per_cta / cfg.l2_bytes_per_cycle;
        const double port = static_cast<double>(per_sm) * operand_bytes_per_cta / cfg.sm_l2_bytes_per_cycle;
        p.est_cycles += std::max({latency_floor, compute, l2, port});
    }
    const double partial_bytes = static_cast<double>((p.split_k - 1) * tiles * tile.bm * tile.bn) * 4.0 * 2.0;
    p.est_cycles += partial_bytes / cfg.l2_bytes_per_cycle;
    // serial split-K: a tile's splits add into its partial sum in turn, each waiting for the one
    // before to store it, then reading it (both through the SM's port, each with the L2 latency)
    const double partial_tile_cycles = static_cast<double>(tile.bm * tile.bn * 4) / cfg.sm_l2_bytes_per_cycle;
    p.est_cycles += static_cast<double>(p.split_k - 1) * 2.0 * (partial_tile_cycles + static_cast<double>(cfg.l2_latency_cycles));
    return p;
}

KernelChoice search_kernel(const GemmView& g, const GpuConfig& cfg) {
    static constexpr int64_t kSplits[] = {1, 2, 3, 4, 6, 8, 12, 16};
    KernelChoice out;
    out.mapspace = int64_t(cta_tile_menu().size()) * int64_t(std::size(kSplits)) * 2;
    KernelPlan best;
    bool have = false;
    for (const auto& t : cta_tile_menu())
        for (const int64_t split : kSplits) {
            KernelPlan p = plan_kernel(g, cfg, t, split);
            ++out.evaluated;
            if (!p.fits) break;
            if (split > 1 && (p.k_iters < 4 || p.ctas / split >= cfg.sms * p.ctas_per_sm)) break;
            if (!have || p.est_cycles < best.est_cycles * (1 - 1e-9) ||
                (p.est_cycles <= best.est_cycles * (1 + 1e-9) && p.split_k < best.split_k)) {
                best = p;
                have = true;
            }
        }
    if (!have) throw std::logic_error("no CTA tile of the menu fits this GPU's shared memory and registers");
    out.plan = with_raster_order(g, best, cfg);
    out.evaluated += 2;
    return out;
}

KernelPlan choose_kernel(const GemmView& g, const GpuConfig& cfg) { return search_kernel(g, cfg).plan; }

std::string describe(const KernelPlan& plan) {
    return "CTA " + std::to_string(plan.tile.bm) + "x" + std::to_string(plan.tile.bn) + ", split-K " + std::to_string(plan.split_k) + ", " +
           (plan.m_fastest ? "M" : "N") + " fastest";
}

std::pair<int64_t, int64_t> tile_coords(const GemmView& g, const KernelPlan& plan, int64_t tile) {
    const int64_t row_tiles = ceil_div(g.m, plan.tile.bm), col_tiles = ceil_div(g.n, plan.tile.bn);
    if (plan.m_fastest) return {tile % row_tiles, tile / row_tiles};
    return {tile / col_tiles, tile % col_tiles};
}

double wave_operand_bytes(const GemmView& g, const KernelPlan& plan, int64_t first, int64_t last, const GpuConfig& cfg) {
    const int64_t eb = operand_bytes(cfg.precision), split = plan.split_k;
    const int64_t per_instance = ceil_div(g.m, plan.tile.bm) * ceil_div(g.n, plan.tile.bn) * split;
    // distinct (instance, tile row, split) and (instance, tile column, split) among the wave's CTAs
    std::set<std::tuple<int64_t, int64_t, int64_t>> rows, cols;
    for (int64_t c = first; c < last; ++c) {
        const int64_t inst = c / per_instance, r = c % per_instance, sk = r % split;
        const auto [bi, bj] = tile_coords(g, plan, r / split);
        rows.emplace(inst, bi, sk);
        cols.emplace(g.b_is_weight ? inst % std::max<int64_t>(1, g.groups) : inst, bj, sk);
    }
    return static_cast<double>(plan.k_per_split * eb) *
           (static_cast<double>(rows.size() * plan.tile.bm) + static_cast<double>(cols.size() * plan.tile.bn));
}

KernelPlan with_raster_order(const GemmView& g, KernelPlan plan, const GpuConfig& cfg) {
    const int64_t wave = std::min(plan.ctas, cfg.sms * plan.ctas_per_sm);
    KernelPlan along_n = plan, down_m = plan;
    along_n.m_fastest = false;
    down_m.m_fastest = true;
    return wave_operand_bytes(g, down_m, 0, wave, cfg) < wave_operand_bytes(g, along_n, 0, wave, cfg) ? down_m : along_n;
}

int64_t operand_chunks(const GemmView& g, const KernelPlan& plan, int64_t first, int64_t last, const GpuConfig& cfg) {
    if (last <= first) return 1;
    const double bytes = wave_operand_bytes(g, plan, first, last, cfg);
    const int64_t chunks = static_cast<int64_t>(std::ceil(bytes / static_cast<double>(kOperandChunkBytes)));
    return std::clamp<int64_t>(chunks, 1, std::max<int64_t>(1, std::min(plan.k_iters, kMaxOperandChunks)));
}

void check_cta_menu_fits(const GpuConfig& cfg) {
    GemmView g;
    g.m = g.n = g.k = 256;
    const CtaTile* smallest = nullptr;
    KernelPlan at_smallest;
    for (const auto& t : cta_tile_menu()) {
        const KernelPlan p = plan_kernel(g, cfg, t);
        if (p.fits) return;
        if (!smallest || p.smem_bytes_per_cta < at_smallest.smem_bytes_per_cta) {
            smallest = &t;
            at_smallest = p;
        }
    }
    const std::string tile = std::to_string(smallest->bm) + "x" + std::to_string(smallest->bn) + " with " +
                             std::to_string(smallest->warps) + " warps and " + std::to_string(smallest->stages) + " stages";
    const int64_t need_kib = (at_smallest.smem_bytes_per_cta + 1023) / 1024;
    if (at_smallest.limiter == "smem") {
        const bool per_cta = at_smallest.smem_bytes_per_cta > cfg.smem_kib_per_cta * 1024;
        throw UserError(per_cta ? "sm.smem_kib_per_cta" : "sm.smem_kib",
                        std::to_string(per_cta ? cfg.smem_kib_per_cta : cfg.smem_kib_per_sm) +
                            " KiB holds no CTA tile of the menu (the smallest, " + tile + ", needs " + std::to_string(need_kib) +
                            " KiB of shared memory)");
    }
    const char* key = at_smallest.limiter == "registers" ? "sm.registers" : at_smallest.limiter == "warps" ? "sm.max_warps" : "sm.max_ctas";
    throw UserError(key, std::string("too few for any CTA tile of the menu (the smallest, ") + tile + ", is limited by " +
                             at_smallest.limiter + ")");
}

}  // namespace archsim
