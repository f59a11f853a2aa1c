#include "arch/tpu/systolic_mapper.h"

#include "sim/base/hash.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace archsim {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

FoldGeometry fold_geometry(Dataflow df, int64_t rows, int64_t cols, int64_t m, int64_t n, int64_t k) {
    if (m < 1 || n < 1 || k < 1 || rows < 1 || cols < 1) throw std::invalid_argument("fold_geometry: empty GEMM or array");
    FoldGeometry g;
    switch (df) {
        case Dataflow::OS: g.sr = m; g.sc = n; g.t = k; break;
        case Dataflow::WS: g.sr = k; g.sc = n; g.t = m; break;
        case Dataflow::IS: g.sr = k; g.sc = m; g.t = n; break;
    }
    g.row_folds = ceil_div(g.sr, rows);
    g.col_folds = ceil_div(g.sc, cols);
    g.cycles_per_fold = df == Dataflow::OS ? g.t + rows + cols - 2 : 2 * rows + cols + g.t - 2;
    return g;
}


void for_each_fold(const GemmView& gemm, int gemm_index, const TpuConfig& cfg,
                   const std::function<void(const FoldWork&)>& visit, const FoldNest& nest) {
    if (nest.chunks < 1 || (cfg.dataflow == Dataflow::OS && nest.chunks != 1))
        throw std::invalid_argument("for_each_fold: a nest of " + std::to_string(nest.chunks) + " chunks under this dataflow");
    const int64_t eb = operand_bytes(cfg.precision), ab = accumulator_bytes(cfg.precision);
    const int64_t R = cfg.rows, C = cfg.cols, M = gemm.m, N = gemm.n, K = gemm.k;
    const FoldGeometry geo = fold_geometry(cfg.dataflow, R, C, M, N, K);
    const double a_ratio = gemm.a_unique_ratio();
    auto a_bytes = [&](int64_t elems) { return static_cast<int64_t>(std::ceil(elems * a_ratio)) * eb; };
    const int64_t ofmap_half = cfg.ofmap_kib * 1024 / 2;
    // the streamed dimension's chunks (WS: M, IS: N); one chunk keeps SCALE-Sim's keys
    const int64_t chunks = std::min(nest.chunks, geo.t), chunk_len = ceil_div(geo.t, chunks);
    auto in_chunk = [&](uint64_t key, int64_t t) { return chunks == 1 ? key : mix_key(key, 0x7c000000u + static_cast<uint64_t>(t)); };

    for (int64_t rep = 0; rep < gemm.repeat; ++rep)
        for (int64_t bat = 0; bat < gemm.batch; ++bat)
            for (int64_t grp = 0; grp < gemm.groups; ++grp) {
                const uint64_t a_base = mix_key(mix_key(mix_key(mix_key(1, gemm_index), rep), bat), grp);
                // A weight B is the same data for every repeat step and batch entry.
                const uint64_t b_base = gemm.b_is_weight ? mix_key(mix_key(2, gemm_index), grp)
                                                         : mix_key(mix_key(mix_key(mix_key(2, gemm_index), rep), bat), grp);
                const uint64_t p_base = mix_key(a_base, 3);
                if (cfg.dataflow == Dataflow::OS) {
                    auto fold = [&](int64_t i, int64_t j) {
                        const int64_t r = std::min(R, M - i * R), c = std::min(C, N - j * C);
                        FoldWork w;
                        w.cycles = geo.cycles_per_fold;
                        w.macs = r * c * K;
                        w.loads[0] = {mix_key(a_base, i), a_bytes(r * K), Buffer::Ifmap, true};
                        w.loads[1] = {mix_key(b_base, j), K * c * eb, Buffer::Filter, true};
                        w.n_loads = 2;
                        w.sram_read_bytes[0] = r * K * eb;
                        w.sram_read_bytes[1] = K * c * eb;
                        w.sram_write_bytes[2] = r * c * eb;
                        w.dram_write_bytes = r * c * eb;
                        visit(w);
                    };
                    for (int64_t o = 0; o < (nest.swapped ? geo.col_folds : geo.row_folds); ++o)
                        for (int64_t q = 0; q < (nest.swapped ? geo.row_folds : geo.col_folds); ++q)
                            nest.swapped ? fold(q, o) : fold(o, q);
                    continue;
                }
                const bool ws = cfg.dataflow == Dataflow::WS;
                for (int64_t t = 0; t < chunks; ++t) {
                    const int64_t t0 = t * chunk_len, tl = std::min(chunk_len, geo.t - t0);
                    if (tl <= 0) break;
                    auto fold = [&](int64_t i, int64_t j) {
                        const int64_t c = std::min(C, geo.sc - j * C);
                        const int64_t kr = std::min(R, K - i * R);
                        const int64_t psum_elems = tl * c;  // WS: tl x c, IS: c x tl accumulators
                        // the partial sums that live at once stay in the ofmap buffer if they fit:
                        // this column fold's (reduction innermost) or every column fold's (outermost)
                        const bool psum_resident = (nest.swapped ? tl * geo.sc : psum_elems) * ab <= ofmap_half;
                        const bool first = i == 0, last = i == geo.row_folds - 1;
                        FoldWork w;
                        w.cycles = 2 * R + C + tl - 2;
                        if (ws) {
                            w.macs = kr * c * tl;
                            w.loads[0] = {in_chunk(mix_key(a_base, i), t), a_bytes(tl * kr), Buffer::Ifmap, true};
                            w.loads[1] = {mix_key(mix_key(b_base, i), j), kr * c * eb, Buffer::Filter, true};
                            w.sram_read_bytes[0] = tl * kr * eb;
                            w.sram_read_bytes[1] = kr * c * eb;
                        } else {
                            w.macs = kr * c * tl;
                            w.loads[0] = {mix_key(mix_key(a_base, i), j), a_bytes(kr * c), Buffer::Ifmap, true};
                            w.loads[1] = {in_chunk(mix_key(b_base, i), t), kr * tl * eb, Buffer::Filter, true};
                            w.sram_read_bytes[0] = kr * c * eb;
                            w.sram_read_bytes[1] = kr * tl * eb;
                        }
                        w.n_loads = 2;
                        w.sram_write_bytes[2] = psum_elems * ab;
                        if (!first) w.sram_read_bytes[2] = psum_elems * ab;
                        const uint64_t p_col = in_chunk(mix_key(p_base, j), t);
                        if (!psum_resident && !first)
                            w.loads[w.n_loads++] = {mix_key(p_col, i), psum_elems * ab, Buffer::Ofmap, false, mix_key(p_col, i)};
                        if (last) w.dram_write_bytes = psum_elems * eb;
                        else if (!psum_resident) w.dram_write_bytes = psum_elems * ab, w.write_id = mix_key(p_col, i + 1);
                        visit(w);
                    };
                    for (int64_t o = 0; o < (nest.swapped ? geo.row_folds : geo.col_folds); ++o)
                        for (int64_t q = 0; q < (nest.swapped ? geo.col_folds : geo.row_folds); ++q)
                            nest.swapped ? fold(o, q) : fold(q, o);
                }
            }
}

}  // namespace archsim
