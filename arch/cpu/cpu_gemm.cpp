// The CPU's contractions: BLIS-style blocked GEMMs split over the cores (CpuMachine::gemm;
// the blocking in blocking.h, the cores' schedule in core_schedule.h).
#include "arch/cpu/cpu_machine_impl.h"
#include "arch/cpu/gemm_nest.h"
#include "sim/base/hash.h"

namespace archsim {

CpuGemmShape CpuMachine::gemm_shape(const GemmView& g, int64_t cores, bool blas) const {
    CpuGemmShape s;
    s.m = g.m, s.n = g.n, s.k = g.k, s.cores = cores;
    const int64_t a_unique = g.a_unique_elems > 0 ? std::min(g.a_unique_elems, g.m * g.k) : g.m * g.k;
    s.a_cols = std::max<int64_t>(1, std::min<int64_t>(g.k, (a_unique + g.m - 1) / std::max<int64_t>(1, g.m)));
    s.packing = {blas, g.b_is_weight, m_cfg.prepacked_weights, g.a.in_place};
    return s;
}

uint64_t CpuMachine::shape_key(const GemmView& g, int64_t cores, bool blas) const {
    const CpuGemmShape s = gemm_shape(g, cores, blas);
    uint64_t key = 0x6370;
    for (int64_t v : {s.m, s.n, s.k, s.a_cols, s.cores, int64_t(blas), int64_t(g.b_is_weight), int64_t(g.a.in_place)})
        key = mix_key(key, uint64_t(v));
    return key;
}

const CpuBlockingChoice& CpuMachine::searched(const Operator& op, const OpGraph& graph, const GemmView& g, int64_t cores, bool blas) {
    const uint64_t key = shape_key(g, cores, blas);
    auto it = m_searched.find(key);
    if (it != m_searched.end()) return it->second;
    CpuBlockingChoice c = search_blocking(m_cfg, gemm_shape(g, cores, blas), m_block);
    const Blocking base = fit_blocking(m_block, g.m, g.n, g.k);
    if (std::tie(c.blocking.kc, c.blocking.mc, c.blocking.nc) != std::tie(base.kc, base.mc, base.nc)) {
        // the block-level model's pick against the analytical blocking, on the machine's own model
        const Trial own = trial(op, graph, g, cores, blas, base), other = trial(op, graph, g, cores, blas, c.blocking);
        c.simulated = 2;
        if (!(other.ps < own.ps && other.dram_bytes <= own.dram_bytes)) c.blocking = base;
    }
    return m_searched.emplace(key, c).first->second;
}

Blocking CpuMachine::blocking_for(const GemmView& g, int64_t cores, bool blas) {
    if (m_trial_blocking) return *m_trial_blocking;
    if (!searching()) return fit_blocking(m_block, g.m, g.n, g.k);
    const auto it = m_searched.find(shape_key(g, cores, blas));
    if (it == m_searched.end()) throw std::logic_error("CPU model: a GEMM ran before its blocking was searched");
    return it->second.blocking;
}

std::optional<OpMapping> CpuMachine::mapping_of(const Operator& op, const OpGraph& graph, Route r) {
    if (r != Route::Contraction) return std::nullopt;
    const int64_t cores = op_cores(op);
    const bool blas = op.path == KernelPath::Blas;
    OpMapping out;
    for_each_gemm(op, [&](size_t, const GemmView& g) {
        const CpuGemmShape s = gemm_shape(g, cores, blas);
        const CpuBlockingChoice* c = searching() ? &searched(op, graph, g, cores, blas) : nullptr;
        const Blocking b = c ? c->blocking : fit_blocking(m_block, g.m, g.n, g.k);
        out.add(describe(plan_gemm_nest(b, g.m, g.n, g.k, cores, s.packing)), c ? c->mapspace : 1, c ? c->evaluated : 0);
    });
    if (out.choice.empty()) return std::nullopt;
    return out;
}

void CpuMachine::gemm(const OpGraph& graph, const GemmView& g, int64_t inst, int64_t cores, bool blas) {
    // the loop nest (gemm_nest.h): blocking, what is packed, who packs and computes what
    const CpuGemmShape shape = gemm_shape(g, cores, blas);
    const GemmNest nest = plan_gemm_nest(blocking_for(g, cores, blas), g.m, g.n, g.k, cores, shape.packing);
    const Blocking& b = nest.b;
    const bool pack_a = nest.pack_a, pack_b = nest.pack_b, prepacked = nest.prepacked;
    const uint64_t e = static_cast<uint64_t>(operand_bytes(m_cfg.precision));
    const int32_t a_t = g.a.tensor, b_t = g.b.tensor, c_t = g.c.tensor;
    // A: row-major with `a_cols` distinct columns per row (implicit im2col folds the taps)
    const int64_t a_unique = g.a_unique_elems > 0 ? std::min(g.a_unique_elems, g.m * g.k) : g.m * g.k;
    const int64_t a_cols = shape.a_cols;
    const uint64_t a_base = base(a_t, graph) + static_cast<uint64_t>(inst * a_unique) * e;
    const int64_t group = inst % g.groups;
    const uint64_t b_base = base(b_t, graph) + static_cast<uint64_t>((g.b_is_weight ? group : inst) * g.k * g.n) * e;
    const uint64_t c_base = base(c_t, graph) + static_cast<uint64_t>(inst * g.m * g.n) * e;
    const double rate = m_cfg.mac_rate() * m_cfg.eff_gemm;
    const double pack_cycles_per_byte = m_cfg.pack_cycles_per_byte(blas);
    for (int64_t jc = 0; jc < g.n; jc += b.nc) {
        const int64_t ncb = std::min(b.nc, g.n - jc);
        for (int64_t pc = 0; pc < g.k; pc += b.kc) {
            const int64_t kcb = std::min(b.kc, g.k - pc);
            // the cores pack the kc x nc B panel together, kc rows split among them
            const std::vector<PackRows> slices = pack_b ? pack_rows(kcb, cores) : std::vector<PackRows>{};
            for (int64_t c = 0; c < static_cast<int64_t>(slices.size()); ++c) {
                const int64_t r0 = slices[static_cast<size_t>(c)].row0, rows = slices[static_cast<size_t>(c)].rows;
                if (rows <= 0) break;
                CpuCore& cc = *m_cores[static_cast<size_t>(c)];
                if (!m_units->block(c)) {
                    cc.touch_rows(b_base + static_cast<uint64_t>((pc + r0) * g.n + jc) * e, rows, static_cast<uint64_t>(ncb) * e,
                                  static_cast<uint64_t>(g.n) * e, false);
                    cc.touch(packed_b(b) + static_cast<uint64_t>(r0 * ncb) * e, static_cast<uint64_t>(rows * ncb) * e, true, Fill::Claim);
                    m_units->block_done(c);
                }
                const uint64_t bytes = static_cast<uint64_t>(rows * ncb) * e;
                m_sched->finish_block(c, static_cast<double>(bytes) * pack_cycles_per_byte * m_cfg.cycle_ps(), 0, 0, 0, bytes);
            }
            if (pack_b) m_sched->barrier();
            // macro-kernel work: mc-row blocks; with fewer blocks than cores, the nr panels split too
            const MacroQueues work = macro_queues(nest, ncb, kcb);
            const std::vector<std::vector<int64_t>>& queue = work.queue;
            std::vector<size_t> next(static_cast<size_t>(cores), 0);
            // a core's mc-row blocks are units of one loop (unit_replay.h): A's rows and C's move
            // down by `cores` blocks from one to the next, the packed operands stay
            const bool block_loop = replay_units() && even_rows(g) && !m_units->in_loop() && work.jsplit == 1 && work.ic_blocks >= 4 * cores;
            if (block_loop) {
                const uint64_t rows = static_cast<uint64_t>(cores * b.mc);
                const uint64_t a0 = a_base, c0 = c_base;
                std::vector<int64_t> full(static_cast<size_t>(m_cfg.cores), 0);
                for (int64_t c = 0; c < cores; ++c)
                    for (const int64_t w : queue[static_cast<size_t>(c)]) full[static_cast<size_t>(c)] += work.work(w).mcb == b.mc;
                m_units->begin_loop({{a0, a0 + static_cast<uint64_t>(g.m * a_cols) * e, rows * static_cast<uint64_t>(a_cols) * e},
                                     {c0, c0 + static_cast<uint64_t>(g.m * g.n) * e, rows * static_cast<uint64_t>(g.n) * e}},
                                    std::move(full), sample_in_force());
            }
            for (int64_t c; (c = m_sched->next_core(next, queue)) >= 0;) {
                const MacroWork wk = work.work(queue[static_cast<size_t>(c)][next[static_cast<size_t>(c)]++]);
                const int64_t ic = wk.ic, mcb = wk.mcb, p0 = wk.p0, p1 = wk.p1;
                CpuCore& cc = *m_cores[static_cast<size_t>(c)];
                if (block_loop) m_units->unit_start(c, static_cast<int64_t>(next[static_cast<size_t>(c)]) - 1);
                const bool replayed = m_units->block(c);
                const uint64_t ap = packed_a(c, b);
                // pack the A block: its rows' source bytes, into this core's buffer
                const std::pair<int64_t, int64_t> src = a_source_cols(pc, kcb, a_cols);
                const int64_t src_col0 = src.first, src_cols = src.second;
                if (pack_a && !replayed) {
                    cc.touch_rows(a_base + static_cast<uint64_t>(ic * a_cols + src_col0) * e, mcb,
                                  static_cast<uint64_t>(src_cols) * e, static_cast<uint64_t>(a_cols) * e, false);
                    cc.touch(ap, static_cast<uint64_t>(mcb * kcb) * e, true, Fill::NoFetch);
                }
                const uint64_t packed = pack_a ? static_cast<uint64_t>(mcb * kcb) * e : 0;
                const uint64_t a_row = static_cast<uint64_t>(a_cols) * e, c_row = static_cast<uint64_t>(g.n) * e;
                const uint64_t a_src = a_base + static_cast<uint64_t>(ic * a_cols + src_col0) * e;
                const uint64_t c_blk = c_base + static_cast<uint64_t>(ic * g.n + jc) * e;
                // B micro-panel jr (kcb x cols): where the micro-kernel reads it
                auto b_panel = [&](int64_t jr, int64_t cols) {
                    if (pack_b) return MovingBox::contiguous(packed_b(b) + static_cast<uint64_t>(jr * b.nr * kcb) * e, static_cast<uint64_t>(kcb * cols) * e, 0);
                    if (prepacked)  // panel (jc / nr + jr) of K x nr, rows pc.. contiguous
                        return MovingBox::contiguous(b_base + static_cast<uint64_t>(((jc / b.nr + jr) * g.k + pc) * b.nr) * e,
                                                     static_cast<uint64_t>(kcb * cols) * e, 0);
                    return MovingBox::down(b_base + static_cast<uint64_t>(pc * g.n + jc + jr * b.nr) * e, kcb,
                                           static_cast<uint64_t>(cols) * e, c_row, 0);
                };
                // one mr x cols micro-kernel call: its A micro-panel, B micro-panel and C tile
                auto micro = [&](int64_t jr, int64_t ir, int64_t rows, int64_t cols) {
                    if (pack_a) cc.touch(ap + static_cast<uint64_t>(ir * kcb) * e, static_cast<uint64_t>(rows * kcb) * e, false);
                    else cc.touch_rows(a_src + static_cast<uint64_t>(ir) * a_row, rows, static_cast<uint64_t>(src_cols) * e, a_row, false);
                    const MovingBox bp = b_panel(jr, cols);
                    cc.touch_rows(bp.base, bp.rows, bp.row_bytes, bp.stride, false);
                    cc.touch_rows(c_blk + static_cast<uint64_t>(ir) * c_row + static_cast<uint64_t>(jr * b.nr) * e, rows,
                                  static_cast<uint64_t>(cols) * e, c_row, true);
                };
                const MovingBox a_fixed = pack_a ? MovingBox::contiguous(ap, static_cast<uint64_t>(mcb * kcb) * e, 0)
                                                 : MovingBox::down(a_src, mcb, static_cast<uint64_t>(src_cols) * e, a_row, 0);
                // a column of micro-kernels (micro-panel jr of B down the block's rows), its
                // mr-row calls fast-forwarded once they repeat (A and C move down, B stays)
                auto column = [&](int64_t jr, int64_t cols) {
                    const int64_t full = mcb / b.mr;
                    std::vector<MovingBox> boxes{
                        pack_a ? MovingBox::contiguous(ap, static_cast<uint64_t>(b.mr * kcb) * e, static_cast<uint64_t>(b.mr * kcb) * e)
                               : MovingBox::down(a_src, b.mr, static_cast<uint64_t>(src_cols) * e, a_row, b.mr),
                        b_panel(jr, cols), MovingBox::down(c_blk - static_cast<uint64_t>(jc) * e, b.mr, c_row, c_row, b.mr)};
                    SteadyLoop rows_loop(cc, std::move(boxes), full, fast_forward(), &m_ff);
                    rows_loop.run([&](int64_t q) { micro(jr, q * b.mr, b.mr, cols); });
                    if (mcb % b.mr) micro(jr, full * b.mr, mcb % b.mr, cols);
                };
                if (!replayed) {
                    // the block's columns, fast-forwarded once they repeat (B and C move right, A stays;
                    // C's box spans every row of C, as older rows' tiles leave the L2 in step)
                    const int64_t full_cols = std::min(p1, ncb / b.nr) - p0;
                    {
                        MovingBox b_move = b_panel(p0, b.nr);
                        if (pack_b) b_move = MovingBox::contiguous(b_move.base, b_move.row_bytes, static_cast<uint64_t>(kcb * b.nr) * e);
                        else if (prepacked) b_move = MovingBox::contiguous(b_move.base, b_move.row_bytes, static_cast<uint64_t>(g.k * b.nr) * e);
                        else b_move.col_step = static_cast<uint64_t>(b.nr) * e;
                        const MovingBox c_move = MovingBox::right(c_base + static_cast<uint64_t>(jc + p0 * b.nr) * e, g.m,
                                                                  static_cast<uint64_t>(b.nr) * e, c_row, static_cast<uint64_t>(b.nr) * e);
                        SteadyLoop cols_loop(cc, {a_fixed, b_move, c_move}, std::max<int64_t>(0, full_cols), fast_forward(), &m_ff);
                        cols_loop.run([&](int64_t j) { column(p0 + j, b.nr); });
                    }
                    for (int64_t jr = p0 + std::max<int64_t>(0, full_cols); jr < p1; ++jr) column(jr, std::min(b.nr, ncb - jr * b.nr));
                    m_units->block_done(c);
                }
                m_sched->finish_block(c, static_cast<double>(packed) * pack_cycles_per_byte * m_cfg.cycle_ps(),
                                      static_cast<double>(wk.macs) / rate * m_cfg.cycle_ps(), wk.macs, 0, packed);
            }
            if (block_loop) m_units->end_loop();
            m_sched->barrier();
        }
    }
}

}  // namespace archsim
