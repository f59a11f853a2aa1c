#include "arch/kpu/wavefront.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace archsim {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t wavefront_cycles(int64_t k_steps, int64_t rows, int64_t cols) { return k_steps + (rows - 1) + (cols - 1); }

int64_t pipelined_cycles(int64_t blocks, int64_t k_steps, int64_t rows, int64_t cols) {
    return blocks <= 0 ? 0 : blocks * k_steps + (rows - 1) + (cols - 1);
}

int64_t k_steps(int64_t k, double macs_per_pe) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(k) / macs_per_pe - 1e-9));
}

FabricPlan plan_gemm(const GemmView& g, const KpuConfig& cfg) {
    FabricPlan p;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return p;
    p.row_blocks = ceil_div(g.m, cfg.pe_rows);
    p.col_blocks = ceil_div(g.n, cfg.pe_cols);
    p.instances = g.batch * g.groups;
    p.blocks = p.instances * p.row_blocks * p.col_blocks;
    p.tiles_used = std::min(p.blocks, cfg.compute_tiles());
    p.waves = ceil_div(p.blocks, cfg.compute_tiles());
    p.k_cycles = k_steps(g.k, cfg.macs_per_pe());
    p.ideal_cycles = g.repeat * (pipelined_cycles(p.waves, p.k_cycles, cfg.pe_rows, cfg.pe_cols) + cfg.fill_cycles +
                                 cfg.drain_cycles);
    return p;
}

std::pair<int64_t, int64_t> block_at(int64_t index, int64_t rows, int64_t cols, const BlockOrder& order) {
    // rows outer: bands across the columns; columns outer: the same on the transposed grid
    const int64_t outer = order.rows_outer ? rows : cols, inner = order.rows_outer ? cols : rows;
    const int64_t band = order.band > 0 ? std::min(order.band, inner) : inner;
    const int64_t first = index / (outer * band) * band;   // first inner block of the index's band
    const int64_t width = std::min(band, inner - first);   // the last band may be narrower
    const int64_t within = index - first * outer;
    const int64_t o = within / width, i = first + within % width;
    return order.rows_outer ? std::pair{o, i} : std::pair{i, o};
}

FabricBlock block_of(const GemmView& g, const KpuConfig& cfg, const FabricPlan& p, int64_t index, const BlockOrder& order) {
    const int64_t per_instance = p.row_blocks * p.col_blocks;
    FabricBlock blk;
    blk.instance = index / per_instance;
    std::tie(blk.bi, blk.bj) = block_at(index % per_instance, p.row_blocks, p.col_blocks, order);
    blk.m = std::min(cfg.pe_rows, g.m - blk.bi * cfg.pe_rows);
    blk.n = std::min(cfg.pe_cols, g.n - blk.bj * cfg.pe_cols);
    return blk;
}

int64_t wave_compute_cycles(const FabricPlan& p, const KpuConfig& cfg, int64_t wi) {
    int64_t c = p.k_cycles;
    if (wi == 0) c += (cfg.pe_rows - 1) + (cfg.pe_cols - 1) + cfg.fill_cycles;
    if (wi == p.waves - 1) c += cfg.drain_cycles;
    return c;
}

void for_each_wave(const GemmView& g, const KpuConfig& cfg, const BlockOrder& order,
                   const std::function<void(int64_t, const std::vector<FabricBlock>&)>& visit) {
    const FabricPlan p = plan_gemm(g, cfg);
    const int64_t tiles = cfg.compute_tiles();
    std::vector<FabricBlock> wave;
    wave.reserve(static_cast<size_t>(std::min(tiles, p.blocks)));
    for (int64_t w = 0; w < p.waves; ++w) {
        wave.clear();
        for (int64_t b = w * tiles; b < std::min(p.blocks, (w + 1) * tiles); ++b) wave.push_back(block_of(g, cfg, p, b, order));
        visit(w, wave);
    }
}

double mean_mesh_hops(int64_t rows, int64_t cols) {
    auto axis = [](int64_t n) { return (static_cast<double>(n) * n - 1.0) / (3.0 * n); };
    return axis(rows) + axis(cols);
}

}  // namespace archsim
