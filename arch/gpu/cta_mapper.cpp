#include "arch/gpu/cta_mapper.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
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

/// Cycles of `ctas` CTAs of `p`'s tile in waves over the SMs, each running `k_iters` main-loop
/// iterations: per wave, the longest of its main loop (the SM shared by the CTAs the wave puts on
/// it), the pipeline's latency floor, its operand tiles through the L2 and one SM's through its
/// port (KernelPlan::est_cycles).
static double wave_cycles(const KernelPlan& p, int64_t ctas, int64_t k_iters, const GpuConfig& cfg) {
    const CtaTile& tile = p.tile;
    const int64_t eb = operand_bytes(cfg.precision), slots = cfg.sms * p.ctas_per_sm;
    const double loop_alone = static_cast<double>(k_iters) * kstep_cycles(tile, p.bk, cfg);  // a CTA alone on its SM
    const double latency_floor = static_cast<double>(k_iters * cfg.l2_latency_cycles) / static_cast<double>(std::max<int64_t>(1, tile.stages - 1));
    const double operand_bytes_per_cta = static_cast<double>((tile.bm + tile.bn) * k_iters * p.bk * eb);
    double cycles = 0;
    for (int64_t w = 0; w * slots < ctas; ++w) {
        const int64_t in_wave = std::min(slots, ctas - w * slots);
        const int64_t per_sm = std::min(p.ctas_per_sm, ceil_div(in_wave, cfg.sms));
        const double compute = loop_alone * static_cast<double>(per_sm);
        const double l2 = static_cast<double>(in_wave) * operand_bytes_per_cta / cfg.l2_bytes_per_cycle;
        const double port = static_cast<double>(per_sm) * operand_bytes_per_cta / cfg.sm_l2_bytes_per_cycle;
        cycles += std::max({latency_floor, compute, l2, port});
    }
    return cycles;
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
    p.waves = ceil_div(p.ctas, cfg.sms * p.ctas_per_sm);
    p.cta_cycles = static_cast<double>(p.k_iters) * kstep_cycles(tile, p.bk, cfg) * static_cast<double>(p.ctas_per_sm);
    p.est_cycles = wave_cycles(p, p.ctas, p.k_iters, cfg);
    const double partial_bytes = static_cast<double>((p.split_k - 1) * tiles * tile.bm * tile.bn) * 4.0 * 2.0;
    p.est_cycles += partial_bytes / cfg.l2_bytes_per_cycle;
    // serial split-K: a tile's splits add into its partial sum in turn, each waiting for the one
    // before to store it, then reading it (both through the SM's port, each with the L2 latency)
    const double partial_tile_cycles = static_cast<double>(tile.bm * tile.bn * 4) / cfg.sm_l2_bytes_per_cycle;
    p.est_cycles += static_cast<double>(p.split_k - 1) * 2.0 * (partial_tile_cycles + static_cast<double>(cfg.l2_latency_cycles));
    return p;
}

/// The fewest main-loop iterations a stream-K CTA's share may have (as a split-K split's).
constexpr int64_t kMinStreamKIters = 4;

std::vector<StreamKSegment> stream_k_segments(const KernelPlan& plan) {
    std::vector<StreamKSegment> out;
    const int64_t iters = plan.k_iters, total = plan.sk_tiles * iters;
    for (int64_t x = 0; x < plan.sk_ctas; ++x) {
        const int64_t end = (x + 1) * total / plan.sk_ctas;
        for (int64_t it = x * total / plan.sk_ctas; it < end;) {
            const int64_t t = it / iters, stop = std::min(end, (t + 1) * iters);
            out.push_back({x, t, it - t * iters, stop - t * iters});
            it = stop;
        }
    }
    return out;
}

/// The bytes of the operand tiles (A row tiles, B column tiles, whole K) that two or more of
/// `plan`'s first `tiles` output tiles read (numbered as wave_operand_bytes numbers CTAs of split 1).
static double shared_operand_bytes(const GemmView& g, const KernelPlan& plan, int64_t tiles, const GpuConfig& cfg) {
    const int64_t per_instance = ceil_div(g.m, plan.tile.bm) * ceil_div(g.n, plan.tile.bn);
    std::map<std::pair<int64_t, int64_t>, int64_t> rows, cols;  // (instance, tile row or column) -> readers
    for (int64_t t = 0; t < tiles; ++t) {
        const int64_t inst = t / per_instance;
        const auto [bi, bj] = tile_coords(g, plan, t % per_instance);
        ++rows[{inst, bi}];
        ++cols[{g.b_is_weight ? inst % std::max<int64_t>(1, g.groups) : inst, bj}];
    }
    int64_t shared_rows = 0, shared_cols = 0;
    for (const auto& [key, readers] : rows) shared_rows += readers > 1;
    for (const auto& [key, readers] : cols) shared_cols += readers > 1;
    return static_cast<double>(g.k * operand_bytes(cfg.precision)) *
           (static_cast<double>(shared_rows * plan.tile.bm) + static_cast<double>(shared_cols * plan.tile.bn));
}

KernelPlan plan_stream_k(const GemmView& g, const GpuConfig& cfg, const CtaTile& tile, bool m_fastest) {
    KernelPlan p = plan_kernel(g, cfg, tile, 1);
    p.m_fastest = m_fastest;
    if (!p.fits) return p;
    const int64_t tiles = p.ctas, slots = cfg.sms * p.ctas_per_sm, full = tiles / slots;
    if (tiles % slots == 0) return p;  // whole waves: nothing to balance
    const int64_t sk_tiles = full == 0 ? tiles : tiles % slots + slots;
    const int64_t sk_ctas = std::min(slots, sk_tiles * p.k_iters / kMinStreamKIters);
    // below a full wave each CTA would hold a tile or more (data-parallel's own schedule); after
    // a full wave, fewer CTAs than a wave would leave SMs idle
    if (full == 0 ? sk_ctas <= sk_tiles : sk_ctas < slots) return p;
    // its CTAs work at different K offsets at once, so tiles that read the same operand tile
    // share it only through the L2: only while those shared tiles fit half of it (else each
    // share would re-read them from DRAM)
    if (shared_operand_bytes(g, p, sk_tiles, cfg) > static_cast<double>(cfg.l2_mib << 20) / 2) return p;
    KernelPlan sk = p;
    sk.sk_tiles = sk_tiles;
    sk.sk_ctas = sk_ctas;
    sk.ctas = sk_ctas + (tiles - sk_tiles);
    sk.waves = 1 + ceil_div(tiles - sk_tiles, slots);
    // the stream-K wave: as a wave of sk_ctas CTAs each running the largest share
    const int64_t share = ceil_div(sk_tiles * p.k_iters, sk_ctas);
    KernelPlan wave = p;
    wave.ctas_per_sm = std::min(p.ctas_per_sm, ceil_div(sk_ctas, cfg.sms));
    const double sk_cycles = wave_cycles(wave, sk_ctas, share, cfg);
    // its fixup: each share that does not start its tile stores an fp32 partial, which the
    // tile's owner reads back (through the L2), the owner reading its peers' in turn through its
    // port, each with the L2 latency, after its own share (the peers' stores, at the start of
    // their shares, are done by then)
    std::vector<int64_t> peers(static_cast<size_t>(sk_tiles), 0);
    int64_t partials = 0;
    for (const StreamKSegment& s : stream_k_segments(sk))
        if (s.iter_begin > 0) {
            ++partials;
            ++peers[static_cast<size_t>(s.tile)];
        }
    const double partial_tile_cycles = static_cast<double>(tile.bm * tile.bn * 4) / cfg.sm_l2_bytes_per_cycle;
    const double most_peers = static_cast<double>(*std::max_element(peers.begin(), peers.end()));
    double fixup = static_cast<double>(partials * tile.bm * tile.bn) * 4.0 * 2.0 / cfg.l2_bytes_per_cycle;
    fixup += most_peers * (partial_tile_cycles + static_cast<double>(cfg.l2_latency_cycles));
    sk.est_cycles = sk_cycles + fixup + wave_cycles(p, tiles - sk_tiles, p.k_iters, cfg);
    return sk;
}

/// Cycles at the SM clock to move a GEMM's compulsory DRAM bytes at the sustained bandwidth:
/// A (its distinct elements, at most m x k: GemmView::a_unique_ratio(), the share every machine
/// model uses), B (a weight once per group) and C, every instance.
static double compulsory_dram_cycles(const GemmView& g, const GpuConfig& cfg) {
    if (cfg.dram.ideal) return 0;
    const double eb = static_cast<double>(operand_bytes(cfg.precision)), insts = static_cast<double>(g.batch * g.groups);
    const double a = g.a_unique_ratio() * static_cast<double>(g.m) * static_cast<double>(g.k);
    const double b = static_cast<double>(g.k * g.n) * (g.b_is_weight ? static_cast<double>(std::max<int64_t>(1, g.groups)) : insts);
    const double bytes = (a * insts + b + static_cast<double>(g.m * g.n) * insts) * eb;
    const DramConfig d = cfg.sustained_dram();
    return bytes / (d.bandwidth_gbps * 1e9) * cfg.clock_mhz * 1e6;
}

KernelChoice search_kernel(const GemmView& g, const GpuConfig& cfg, bool stream_k) {
    static constexpr int64_t kSplits[] = {1, 2, 3, 4, 6, 8, 12, 16};
    KernelChoice out;
    out.mapspace = (int64_t(cta_tile_menu().size()) * int64_t(std::size(kSplits)) + (stream_k ? 1 : 0)) * 2;
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
    if (stream_k) {
        // the chosen tile's stream-K schedule (in its raster order), taken only when strictly
        // faster: the same tile moves the same operand bytes per MAC (its energy, which a power
        // limit turns into time, differs only by the partial sums), so the two differ by how
        // evenly the last tiles' work spreads over the SMs. Neither beats the GEMM's compulsory
        // DRAM traffic (its operands and C once, at the sustained bandwidth): a kernel that
        // traffic bounds gains nothing.
        const KernelPlan sk = plan_stream_k(g, cfg, best.tile, out.plan.m_fastest);
        ++out.evaluated;
        const double floor = compulsory_dram_cycles(g, cfg);
        if (sk.sk_ctas > 0 && std::max(sk.est_cycles, floor) < std::max(best.est_cycles, floor) * (1 - 1e-9)) out.plan = sk;
    }
    return out;
}

KernelPlan choose_kernel(const GemmView& g, const GpuConfig& cfg, bool stream_k) { return search_kernel(g, cfg, stream_k).plan; }

std::string describe(const KernelPlan& plan) {
    const std::string split = plan.sk_ctas > 0 ? "stream-K " + std::to_string(plan.sk_tiles) + " tiles over " + std::to_string(plan.sk_ctas) + " CTAs"
                                               : "split-K " + std::to_string(plan.split_k);
    return "CTA " + std::to_string(plan.tile.bm) + "x" + std::to_string(plan.tile.bn) + ", " + split + ", " + (plan.m_fastest ? "M" : "N") + " fastest";
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
