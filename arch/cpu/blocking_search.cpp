#include "arch/cpu/blocking_search.h"

#include "arch/common/bound_search.h"

#include <algorithm>
#include <tuple>

namespace archsim {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The per-core rates and capacities price_blocking() times blocks with.
struct Machine {
    double e = 4;                   ///< operand bytes
    double cycles_per_mac = 0;      ///< a core's micro-kernel
    double pack_cycles_per_byte = 0;
    double l2_bytes_per_cycle = 0;  ///< L2 -> L1 fills
    double l3_bytes_per_cycle = 0;  ///< L3 -> L2
    double dram_bytes_per_cycle = 0;///< a core's share of the DRAM
    double l1 = 0, l2 = 0, l3 = 0;  ///< usable capacities: every way but one, bytes

    Machine(const CpuConfig& cfg, const CpuGemmShape& g) {
        e = static_cast<double>(operand_bytes(cfg.precision));
        cycles_per_mac = 1.0 / (cfg.mac_rate() * cfg.eff_gemm);
        pack_cycles_per_byte = cfg.pack_cycles_per_byte(g.packing.blas);
        l2_bytes_per_cycle = cfg.l2.bytes_per_cycle * cfg.eff_cache;
        l3_bytes_per_cycle = cfg.l3.bytes_per_cycle * cfg.eff_cache;
        const double dram_total = cfg.dram.ideal ? 0.0 : cfg.dram.bandwidth_gbps * cfg.eff_dram * 1e3 / cfg.clock_mhz;
        dram_bytes_per_cycle = dram_total / static_cast<double>(std::max<int64_t>(1, g.cores));
        auto usable = [](const CacheLevelConfig& c) { return static_cast<double>(c.bytes()) * double(c.ways - 1) / double(c.ways); };
        l1 = usable(cfg.l1), l2 = usable(cfg.l2), l3 = usable(cfg.l3);
    }
    /// CoreSchedule::finish_block's end: busy, busy's packing plus the L1 fills, or the L3 and DRAM.
    double block(double pack, double compute, double l1_miss_bytes, double l2_miss_bytes, double dram_bytes) const {
        const double dram = dram_bytes_per_cycle > 0 ? dram_bytes / dram_bytes_per_cycle : 0.0;
        return std::max({pack + compute, pack + l1_miss_bytes / l2_bytes_per_cycle, l2_miss_bytes / l3_bytes_per_cycle + dram});
    }
};

/// Walks the nest of `g` under `b`: its cost with its bound (the busiest core's compute and
/// packing per step); `bound_only` times compute and packing alone (cycles = bound_cycles).
BlockingCost walk(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& b, bool bound_only) {
    BlockingCost out;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return out;
    const Machine mc(cfg, g);
    const GemmNest nest = plan_gemm_nest(fit_blocking(b, g.m, g.n, g.k), g.m, g.n, g.k, g.cores, g.packing);
    const Blocking& nb = nest.b;
    const double e = mc.e;
    const int64_t a_cols = g.a_cols > 0 ? std::min(g.a_cols, g.k) : g.k;
    const double panel = double(nb.kc * nb.nc) * e;
    const bool a_stays = double(g.m * a_cols) * e + panel <= mc.l3, c_stays = double(g.m * g.n) * e + panel <= mc.l3;
    const auto cores = static_cast<size_t>(nest.cores);
    for (int64_t jc = 0; jc < g.n; jc += nb.nc) {
        const int64_t ncb = std::min(nb.nc, g.n - jc);
        for (int64_t pc = 0; pc < g.k; pc += nb.kc) {
            const int64_t kcb = std::min(nb.kc, g.k - pc);
            const bool last_pc = pc + kcb >= g.k;
            // the B panel, packed by the cores together (its source read once from DRAM, the
            // packed lines claimed in the L3)
            if (nest.pack_b) {
                double step = 0, step_bound = 0;
                for (const PackRows& s : pack_rows(kcb, nest.cores)) {
                    const double bytes = double(s.rows * ncb) * e, pack = bytes * mc.pack_cycles_per_byte;
                    step_bound = std::max(step_bound, pack);
                    if (!bound_only) step = std::max(step, mc.block(pack, 0, 2 * bytes, 2 * bytes, bytes));
                    out.dram_bytes += bytes;
                }
                out.cycles += step, out.bound_cycles += step_bound;
            }
            const MacroQueues q = macro_queues(nest, ncb, kcb);
            const int64_t src_cols = a_source_cols(pc, kcb, a_cols).second;
            double step = 0, step_bound = 0;
            for (size_t c = 0; c < cores && c < q.queue.size(); ++c) {
                double t = 0, t_bound = 0;
                bool first_block = true;
                for (const int64_t w : q.queue[c]) {
                    const MacroWork wk = q.work(w);
                    const double compute = double(wk.macs) * mc.cycles_per_mac;
                    const double sa = double(wk.mcb * kcb) * e, src = double(wk.mcb * src_cols) * e;
                    const double pack = nest.pack_a ? sa * mc.pack_cycles_per_byte : 0.0;
                    t_bound += pack + compute;
                    if (bound_only) continue;
                    const double ncols = double(ceil_div(wk.cols, nb.nr)), nrows = double(ceil_div(wk.mcb, nb.mr));
                    const double sb_micro = double(kcb * nb.nr) * e, sb = double(kcb * wk.cols) * e, sc = double(wk.mcb * wk.cols) * e;
                    const double a_block = nest.pack_a ? sa : src;  // what the micro-kernels read of A
                    // L1: the A block once if it fits beside a B micro-panel, else once per nr
                    // column; a B micro-panel once if it fits beside an A micro-panel, else once
                    // per mr row; C's tiles read and written; packing reads the source, writes the copy
                    const double a_l1 = a_block + sb_micro <= mc.l1 ? a_block : a_block * ncols;
                    const double b_l1 = sb_micro + double(nb.mr * kcb) * e <= mc.l1 ? sb : sb * nrows;
                    const double l1 = a_l1 + b_l1 + 2 * sc + (nest.pack_a ? src + sa : 0.0);
                    // L2: the A block stays when it fits beside a B micro-panel (packed A is
                    // written in place, never fetched); the B panel stays across this core's
                    // blocks when it fits beside the A block; C's tiles and the packing's source
                    const bool a_in_l2 = a_block + sb_micro <= mc.l2;
                    const double a_l2 = nest.pack_a ? (a_in_l2 ? 0.0 : sa * ncols) + src : (a_in_l2 ? src : src * ncols);
                    const double b_l2 = first_block || a_block + sb > mc.l2 ? sb : 0.0;
                    const double l2 = a_l2 + b_l2 + 2 * sc;
                    // DRAM: A's source on first touch (or again when A does not stay in the L3),
                    // C read on the first kc slice (or every one when C does not stay) and written
                    // on the last (or every one), an unpacked B panel once per step
                    double dram = (jc == 0 || !a_stays) ? src : 0.0;
                    dram += (pc == 0 || !c_stays) ? sc : 0.0;
                    dram += (last_pc || !c_stays) ? sc : 0.0;
                    if (!nest.pack_b && w == 0) dram += double(kcb * ncb) * e;
                    t += mc.block(pack, compute, l1, l2, dram);
                    out.dram_bytes += dram;
                    first_block = false;
                }
                step = std::max(step, t), step_bound = std::max(step_bound, t_bound);
            }
            out.cycles += step, out.bound_cycles += step_bound;
        }
    }
    return out;
}

}  // namespace

BlockingCost price_blocking(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& b) { return walk(cfg, g, b, false); }

double blocking_bound_cycles(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& b) { return walk(cfg, g, b, true).bound_cycles; }

std::vector<Blocking> blocking_mapspace(const Blocking& base, const CpuGemmShape& g) {
    std::vector<Blocking> out;
    auto round = [](int64_t v, int64_t q) { return std::max(q, v / q * q); };
    for (const double fk : {1.0, 0.5, 2.0})
        for (const double fm : {1.0, 0.5, 2.0})
            for (const double fn : {1.0, 0.5, 2.0}) {
                Blocking b = base;
                b.kc = round(static_cast<int64_t>(double(base.kc) * fk), 4);
                b.mc = round(static_cast<int64_t>(double(base.mc) * fm), base.mr);
                b.nc = round(static_cast<int64_t>(double(base.nc) * fn), base.nr);
                b = fit_blocking(b, g.m, g.n, g.k);
                const bool seen = std::any_of(out.begin(), out.end(), [&](const Blocking& o) {
                    return std::tie(o.kc, o.mc, o.nc) == std::tie(b.kc, b.mc, b.nc);
                });
                if (!seen) out.push_back(b);
            }
    return out;
}

CpuBlockingChoice search_blocking(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& base) {
    CpuBlockingChoice out;
    const std::vector<Blocking> space = blocking_mapspace(base, g);
    out.mapspace = static_cast<int64_t>(space.size());
    const BoundSearch s = search_in_bound_order(
        space.size(), [&](size_t i) { return blocking_bound_cycles(cfg, g, space[i]); },
        [&](size_t i) { return price_blocking(cfg, g, space[i]); }, out.cost);
    out.blocking = space[s.best];
    out.evaluated = s.evaluated;
    return out;
}

std::string describe(const GemmNest& nest) {
    return "mc " + std::to_string(nest.b.mc) + " kc " + std::to_string(nest.b.kc) + " nc " + std::to_string(nest.b.nc);
}

}  // namespace archsim
