#include "arch/cpu/gemm_nest.h"

#include <algorithm>

namespace archsim {

GemmNest plan_gemm_nest(const Blocking& fitted, int64_t m, int64_t n, int64_t k, int64_t cores, const GemmPacking& p) {
    GemmNest g;
    g.m = m, g.n = n, g.k = k, g.cores = std::max<int64_t>(1, cores), g.b = fitted;
    // the cache sizes only cap a block: a larger L2 (a larger mc) once left M = 784 in one block
    // of 784 rows on 4 of 96 cores
    if (m > g.b.mc || g.cores > 1) g.b.mc = split_rows(m, g.b.mc, g.b.mr, g.cores);
    g.prepacked = p.b_is_weight && p.prepacked_weights && !p.blas;
    g.pack_b = p.blas || (m > g.b.mr && !g.prepacked);
    g.pack_a = p.blas || (n > g.b.nr && !p.a_in_place);
    return g;
}

std::vector<PackRows> pack_rows(int64_t kcb, int64_t cores) {
    std::vector<PackRows> out(static_cast<size_t>(std::max<int64_t>(1, cores)));
    const int64_t per = (kcb + static_cast<int64_t>(out.size()) - 1) / static_cast<int64_t>(out.size());
    for (size_t c = 0; c < out.size(); ++c) {
        const int64_t r0 = static_cast<int64_t>(c) * per;
        out[c] = {std::min(r0, kcb), std::max<int64_t>(0, std::min(per, kcb - r0))};
    }
    return out;
}

MacroWork MacroQueues::work(int64_t w) const {
    const int64_t ib = w / jsplit, js = w % jsplit;
    MacroWork x;
    x.ic = ib * mc, x.mcb = std::min(mc, m - x.ic);
    x.p0 = js * panels / jsplit, x.p1 = (js + 1) * panels / jsplit;
    x.cols = std::min(x.p1 * nr, ncb) - x.p0 * nr;
    x.macs = static_cast<uint64_t>(x.mcb * x.cols * kcb);
    return x;
}

MacroQueues macro_queues(const GemmNest& nest, int64_t ncb, int64_t kcb) {
    MacroQueues q;
    q.m = nest.m, q.mc = nest.b.mc, q.nr = nest.b.nr, q.ncb = ncb, q.kcb = kcb;
    q.ic_blocks = (nest.m + nest.b.mc - 1) / nest.b.mc;
    q.panels = (ncb + nest.b.nr - 1) / nest.b.nr;
    q.jsplit = q.ic_blocks >= nest.cores ? 1 : std::min(q.panels, (nest.cores + q.ic_blocks - 1) / q.ic_blocks);
    q.queue.assign(static_cast<size_t>(nest.cores), {});
    for (int64_t w = 0; w < q.ic_blocks * q.jsplit; ++w) q.queue[static_cast<size_t>(w % nest.cores)].push_back(w);
    return q;
}

std::pair<int64_t, int64_t> a_source_cols(int64_t pc, int64_t kcb, int64_t a_cols) {
    const int64_t count = std::min(kcb, a_cols);
    const int64_t first = (pc % a_cols + count <= a_cols) ? pc % a_cols : a_cols - count;
    return {first, count};
}

}  // namespace archsim
