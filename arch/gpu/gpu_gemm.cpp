// The GPU's GEMM kernels: CTAs in waves over the SMs, operand tiles through L2, split-K
// (GpuMachine::gemm_kernel; the tile choice in cta_mapper.h; a stream-K wave in gpu_stream_k.cpp).
#include "arch/gpu/gpu_machine_impl.h"

namespace archsim {

std::optional<OpMapping> GpuMachine::mapping_of(const Operator& op, const OpGraph&, Route r) {
    if (r != Route::Contraction) return std::nullopt;
    OpMapping out;
    for_each_gemm(op, [&](size_t, const GemmView& g) {
        const KernelChoice c = search_kernel(g, m_cfg, stream_k());
        out.add(describe(c.plan), c.mapspace, c.evaluated);
    });
    if (out.choice.empty()) return std::nullopt;
    return out;
}

std::pair<uint64_t, uint64_t> GpuMachine::operand_places(const GemmView& g, size_t gi, int64_t rep, int64_t inst, int64_t bi, int64_t bj,
                                                         int64_t sk) const {
    const uint64_t a_local = mix_key(mix_key(mix_key(1, rep * 1000003 + inst), bi), sk);
    const uint64_t b_local = g.b_is_weight ? mix_key(mix_key(mix_key(2, gi), mix_key(inst % g.groups, bj)), sk)
                                           : mix_key(mix_key(mix_key(2, rep * 1000003 + inst), bj), sk);
    return {a_local, b_local};
}

void GpuMachine::cta_events(size_t sm, double start_ps, double end_ps, int64_t m, int64_t n, int64_t k, uint64_t cycles, uint32_t seq) {
    // operands pass through shared memory into registers; accumulators stay in registers
    const uint64_t smem_bytes = static_cast<uint64_t>((m + n) * k * operand_bytes(m_cfg.precision));
    const Span span = ps_span(start_ps, end_ps - start_ps);
    m_rec.emit(EventKind::Fold, m_sm_comp[sm], span, {0, uint64_t(m * n * k), cycles}, seq);
    m_rec.emit(EventKind::SramRead, m_smem, span, {smem_bytes}, seq);
    m_rec.emit(EventKind::SramWrite, m_smem, span, {smem_bytes}, seq);
    m_rec.emit(EventKind::SramRead, m_rf, span, {2 * smem_bytes}, seq);
}

void GpuMachine::gemm_kernel(const GemmView& g, size_t gi, int64_t rep) {
    launch();
    const KernelPlan plan = choose_kernel(g, m_cfg, stream_k());
    const int64_t eb = operand_bytes(m_cfg.precision);
    const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor, c_tensor = g.c.tensor;
    const double a_ratio = g.a_unique_ratio();
    const int64_t col_tiles = (g.n + plan.tile.bn - 1) / plan.tile.bn, split = plan.split_k;
    const int64_t per_instance = (g.m + plan.tile.bm - 1) / plan.tile.bm * col_tiles * split;
    const int64_t slots = m_cfg.sms * plan.ctas_per_sm;
    // stream-K's wave first (split is 1 then), then the data-parallel CTAs, numbered by tile
    const int64_t dp_first = plan.sk_tiles, dp_ctas = plan.ctas - plan.sk_ctas, sk_waves = plan.sk_ctas > 0 ? 1 : 0;
    const int64_t grid = plan.sk_ctas > 0 ? stream_k_grid(g, plan) : 0;
    const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
    const double dram_latency_ps = m_cfg.dram.ideal ? 0.0 : m_cfg.dram.latency_ns * 1e3;
    const double kstep = kstep_cycles(plan.tile, plan.bk, m_cfg);
    const int64_t instances = g.batch * g.groups;
    m_l2->workspace_ready().clear();                    // this kernel's partial sums are its own
    std::unordered_map<int64_t, double> partial_stored;  // CTA -> when the previous split stored its partial, for a split in a later wave
    double kernel_end = sim_now_ps();
    if (sk_waves) stream_k_wave(g, gi, rep, plan, grid, kernel_end);
    for (int64_t w = 0; w < plan.waves - sk_waves; ++w) {
        const double start = sim_now_ps();
        // the SMs of a partial (tail) wave host fewer CTAs, which share the SM among fewer
        const int64_t in_wave = std::min(dp_ctas - w * slots, slots);
        const double per_sm = static_cast<double>(std::min(plan.ctas_per_sm, (in_wave + m_cfg.sms - 1) / m_cfg.sms));
        double wave_end = start, stores_done = start, cta_ps_max = 0;
        const int64_t first = dp_first + w * slots, last = std::min(dp_first + dp_ctas, first + slots);
        // Loads of every CTA of the wave first (all issued at the wave's start), then the
        // epilogue stores in completion order, so the shared L2 and DRAM servers see their
        // requests in time order.
        struct Cta {
            int64_t index, inst, bi, bj, m, n, k, sk;
            int64_t k_iters;            // main-loop iterations (BK each)
            uint64_t a_local, b_local;  // its whole-K A and B tiles' places (TileId::local)
            double loaded = 0, end = 0;
            bool missed = false;  // some operand came from DRAM
        };
        std::vector<Cta> ctas;
        ctas.reserve(static_cast<size_t>(last - first));
        for (int64_t c = first; c < last; ++c) {
            const int64_t inst = c / per_instance, r = c % per_instance, sk = r % split;
            const auto [bi, bj] = tile_coords(g, plan, r / split);
            const int64_t k = std::max<int64_t>(0, std::min(plan.k_per_split, g.k - sk * plan.k_per_split));
            const auto [a_local, b_local] = operand_places(g, gi, rep, inst, bi, bj, sk);
            ctas.push_back({c, inst, bi, bj, std::min(plan.tile.bm, g.m - bi * plan.tile.bm), std::min(plan.tile.bn, g.n - bj * plan.tile.bn),
                            k, sk, (k + plan.bk - 1) / plan.bk, a_local, b_local});
        }
        // The wave's operand loads, K chunk by K chunk across its CTAs (they advance through K
        // together), so the L2 holds one chunk's A rows and B columns at a time (operand_chunks).
        const int64_t chunks = grid > 0 ? grid : operand_chunks(g, plan, first, last, m_cfg);
        for (int64_t j = 0; j < chunks; ++j)
            for (Cta& cta : ctas) {
                // this chunk's K elements: whole main-loop iterations (BK) but the last chunk's tail
                const int64_t k0 = std::min(cta.k, cta.k_iters * j / chunks * plan.bk);
                const int64_t k1 = std::min(cta.k, cta.k_iters * (j + 1) / chunks * plan.bk);
                const int64_t kc = k1 - k0;
                SmPort& sm = *m_sms[static_cast<size_t>((cta.index - first) % m_cfg.sms)];
                // one chunk keeps the keys of a whole-K tile; more add the chunk to each key
                const TileId a_key{a_tensor, chunks > 1 ? mix_key(cta.a_local, 0xC0 + j) : cta.a_local};
                const TileId b_key{b_tensor, chunks > 1 ? mix_key(cta.b_local, 0xC0 + j) : cta.b_local};
                bool a_miss = false, b_miss = false;
                const TensorPart a_part = TensorPart::rows(a_tensor, cta.inst * g.m + cta.bi * plan.tile.bm, cta.m, instances * g.m);
                const TensorPart b_part = g.b_is_weight ? TensorPart{}
                                                        : TensorPart::rows(b_tensor, cta.inst * g.k + cta.sk * plan.k_per_split + k0, kc,
                                                                           instances * g.k);
                cta.loaded = std::max(cta.loaded, sm.access(a_key, static_cast<int64_t>(std::ceil(cta.m * kc * a_ratio)) * eb, a_part, false, 0, &a_miss));
                cta.loaded = std::max(cta.loaded, sm.access(b_key, kc * cta.n * eb, b_part, false, 0, &b_miss));
                cta.missed = cta.missed || a_miss || b_miss;
            }
        // cut into chunks, a wave's CTAs advance through K together and each takes its last
        // operands when the wave's last arrive; loaded whole, each tile is in when its load is
        double wave_loaded = start;
        for (const Cta& cta : ctas) wave_loaded = std::max(wave_loaded, cta.loaded);
        for (Cta& cta : ctas) {
            // the main loop (MMAs or shared-memory traffic) with the SM shared by the wave's CTAs on it
            const double mma_ps = static_cast<double>(cta.k_iters) * kstep * per_sm * m_cfg.cycle_ps();
            cta_ps_max = std::max(cta_ps_max, mma_ps);
            // Little's law on the multistage pipeline: with stages - 1 K-steps in flight, each
            // taking a load latency (L2, plus DRAM on a miss), a K-step takes at least
            // latency / (stages - 1); the main loop starts after its first stage arrives.
            const double stage_latency = l2_latency_ps + (cta.missed ? dram_latency_ps : 0.0);
            const double loop_ps = std::max(mma_ps, static_cast<double>(cta.k_iters) * stage_latency /
                                                        static_cast<double>(std::max<int64_t>(1, plan.tile.stages - 1)));
            cta.end = std::max(start + l2_latency_ps + loop_ps, chunks > 1 ? wave_loaded : cta.loaded);
        }
        // Epilogues, every transaction issued in time order (the L2 and DRAM serve requests
        // in the order they come). Serial split-K: a split's epilogue waits for the previous
        // split's partial-sum store (the semaphore), reads that partial (step 0), adds and
        // stores its own (step 1; the last split stores C); the first split stores at its
        // main loop's end.
        using Step = std::tuple<double, size_t, int>;  // when, which CTA, which step
        std::priority_queue<Step, std::vector<Step>, std::greater<>> steps;
        for (size_t i = 0; i < ctas.size(); ++i) {
            const Cta& cta = ctas[i];
            if (cta.sk == 0) steps.emplace(cta.end, i, 1);
            else if (auto it = partial_stored.find(cta.index); it != partial_stored.end()) {  // its predecessor ran in an earlier wave
                steps.emplace(std::max(cta.end, it->second), i, 0);
                partial_stored.erase(it);
            }
        }
        while (!steps.empty()) {
            const auto [at, i, step] = steps.top();
            steps.pop();
            const Cta& cta = ctas[i];
            const int64_t c = cta.index;
            SmPort& sm = *m_sms[static_cast<size_t>((c - first) % m_cfg.sms)];
            // the tile's partial sum, fp32, where every split of the tile adds into it
            const TileId partial{-1, mix_key(6, static_cast<uint64_t>(c - cta.sk))};
            if (step == 0) {
                steps.emplace(sm.workspace(partial, cta.m * cta.n * 4, false, at - sim_now_ps()), i, 1);
                continue;
            }
            wave_end = std::max({wave_end, cta.end, at});
            cta_events(static_cast<size_t>((c - first) % m_cfg.sms), start, cta.end, cta.m, cta.n, cta.k,
                       c == first ? m_clock.cycles_of(cta_ps_max) : 0, static_cast<uint32_t>(c));
            if (cta.sk == split - 1) {  // C goes back through L2 (written through to DRAM)
                stores_done = std::max(stores_done, sm.access(TileId{c_tensor, mix_key(3, static_cast<uint64_t>(c))}, cta.m * cta.n * eb, {},
                                                              true, at - sim_now_ps()));
                continue;
            }
            const double stored = sm.workspace(partial, cta.m * cta.n * 4, true, at - sim_now_ps());
            stores_done = std::max(stores_done, stored);
            if (c + 1 < last) steps.emplace(std::max(ctas[i + 1].end, stored), i + 1, 0);  // the next split, in this wave
            else partial_stored[c + 1] = stored;                                          // ... or in the next
        }
        if (wave_end > start + cta_ps_max)  // waiting for operands: the first stage, or loads slower than the MMAs
            stall(start + cta_ps_max, wave_end - (start + cta_ps_max), static_cast<uint32_t>(w + sk_waves), m_operand_load);
        sim_wait_until_ps(wave_end);
        kernel_end = std::max(kernel_end, stores_done);
    }
    if (kernel_end > sim_now_ps()) stall(sim_now_ps(), kernel_end - sim_now_ps(), 0, m_write_drain);
    sim_wait_until_ps(kernel_end);
    if (c_tensor >= 0) m_l2->retain(c_tensor, g.batch * g.groups * g.m * g.n * eb);
}

}  // namespace archsim
