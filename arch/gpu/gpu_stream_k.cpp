// The GPU's stream-K wave (GpuMachine::stream_k_wave): one wave of CTAs sharing the main-loop
// iterations of a GEMM's last tiles, with the partial-sum fixup (the plan: cta_mapper.h).
#include <unordered_set>

#include "arch/gpu/gpu_machine_impl.h"

namespace archsim {

int64_t GpuMachine::stream_k_grid(const GemmView& g, const KernelPlan& plan) const {
    const int64_t slots = m_cfg.sms * plan.ctas_per_sm, tiles = plan.ctas - plan.sk_ctas + plan.sk_tiles;
    int64_t grid = std::max(std::min<int64_t>(plan.k_iters, 8), operand_chunks(g, plan, 0, plan.sk_tiles, m_cfg));
    for (int64_t first = plan.sk_tiles; first < tiles; first += slots)  // every data-parallel wave
        grid = std::max(grid, operand_chunks(g, plan, first, std::min(tiles, first + slots), m_cfg));
    return std::clamp<int64_t>(grid, 1, std::max<int64_t>(1, std::min(plan.k_iters, kMaxOperandChunks)));
}

void GpuMachine::stream_k_wave(const GemmView& g, size_t gi, int64_t rep, const KernelPlan& plan, int64_t grid, double& kernel_end) {
    const double start = sim_now_ps();
    const int64_t eb = operand_bytes(m_cfg.precision), iters = plan.k_iters, instances = g.batch * g.groups;
    const int64_t per_instance = (g.m + plan.tile.bm - 1) / plan.tile.bm * ((g.n + plan.tile.bn - 1) / plan.tile.bn);
    const double a_ratio = g.a_unique_ratio();
    const double per_sm = static_cast<double>(std::min(plan.ctas_per_sm, (plan.sk_ctas + m_cfg.sms - 1) / m_cfg.sms));
    const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
    const double dram_latency_ps = m_cfg.dram.ideal ? 0.0 : m_cfg.dram.latency_ns * 1e3;
    const double iter_ps = kstep_cycles(plan.tile, plan.bk, m_cfg) * per_sm * m_cfg.cycle_ps();  // one iteration's MMAs, SM shared
    const double in_flight = static_cast<double>(std::max<int64_t>(1, plan.tile.stages - 1));
    // K elements before iteration i of a tile
    auto k_at = [&](int64_t i) { return std::min(g.k, i * plan.bk); };
    struct Seg {
        StreamKSegment s;
        int64_t inst, bi, bj, m, n;
        uint64_t a_local, b_local;
        double loaded, begin = 0, end = 0, mma_ps = 0;
        bool missed = false;
    };
    std::vector<Seg> segs;
    for (const StreamKSegment& s : stream_k_segments(plan)) {
        const int64_t inst = s.tile / per_instance;
        const auto [bi, bj] = tile_coords(g, plan, s.tile % per_instance);
        const auto [a_local, b_local] = operand_places(g, gi, rep, inst, bi, bj, 0);
        segs.push_back({s, inst, bi, bj, std::min(plan.tile.bm, g.m - bi * plan.tile.bm), std::min(plan.tile.bn, g.n - bj * plan.tile.bn),
                        a_local, b_local, start});
    }
    // Loads, all issued at the wave's start, in the order the CTAs reach them: by the iteration
    // (within its CTA's share) where each segment's piece of a K chunk begins, then by CTA.
    struct Piece {
        int64_t at, cta;
        size_t seg;
        int64_t chunk, i0, i1;
    };
    std::vector<Piece> pieces;
    std::vector<int64_t> done(static_cast<size_t>(plan.sk_ctas), 0);  // iterations of each CTA before the segment
    for (size_t i = 0; i < segs.size(); ++i) {
        const StreamKSegment& s = segs[i].s;
        const int64_t before = done[static_cast<size_t>(s.cta)];
        for (int64_t j = 0; j < grid; ++j) {
            const int64_t c0 = iters * j / grid, c1 = iters * (j + 1) / grid;
            const int64_t i0 = std::max(c0, s.iter_begin), i1 = std::min(c1, s.iter_end);
            if (i0 < i1) pieces.push_back({before + i0 - s.iter_begin, s.cta, i, j, i0, i1});
        }
        done[static_cast<size_t>(s.cta)] += s.iter_end - s.iter_begin;
    }
    std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.at != b.at ? a.at < b.at : a.cta < b.cta; });
    // A chunk's first piece in the wave loads the whole chunk: the tile it belongs to needs all
    // of it (its other segments, on other CTAs, read the rest), and they and the other tiles of
    // its row or column find it in the L2 (the L2 knows a tile by its key, not by the part of it
    // a load reads). Later pieces load their own part. So every chunk comes from DRAM once while
    // the L2 holds it; the first piece's port moves the whole chunk (an overcount of at most one
    // chunk per segment boundary).
    const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor, c_tensor = g.c.tensor;
    std::unordered_set<uint64_t> fetched;  // chunk keys loaded whole in this wave
    for (const Piece& p : pieces) {
        Seg& seg = segs[p.seg];
        SmPort& sm = *m_sms[static_cast<size_t>(seg.s.cta % m_cfg.sms)];
        const int64_t c0 = iters * p.chunk / grid, c1 = iters * (p.chunk + 1) / grid;
        const TileId a_key{a_tensor, grid > 1 ? mix_key(seg.a_local, 0xC0 + p.chunk) : seg.a_local};
        const TileId b_key{b_tensor, grid > 1 ? mix_key(seg.b_local, 0xC0 + p.chunk) : seg.b_local};
        const bool a_whole = fetched.insert(a_key.key()).second, b_whole = fetched.insert(b_key.key()).second;
        const int64_t a_kc = k_at(a_whole ? c1 : p.i1) - k_at(a_whole ? c0 : p.i0);
        const int64_t b_k0 = k_at(b_whole ? c0 : p.i0), b_kc = k_at(b_whole ? c1 : p.i1) - b_k0;
        const TensorPart a_part = TensorPart::rows(a_tensor, seg.inst * g.m + seg.bi * plan.tile.bm, seg.m, instances * g.m);
        const TensorPart b_part = g.b_is_weight ? TensorPart{} : TensorPart::rows(b_tensor, seg.inst * g.k + b_k0, b_kc, instances * g.k);
        bool a_miss = false, b_miss = false;
        seg.loaded = std::max(seg.loaded, sm.access(a_key, static_cast<int64_t>(std::ceil(seg.m * a_kc * a_ratio)) * eb, a_part, false, 0, &a_miss));
        seg.loaded = std::max(seg.loaded, sm.access(b_key, b_kc * seg.n * eb, b_part, false, 0, &b_miss));
        seg.missed = seg.missed || a_miss || b_miss;
    }
    // Main loops: a CTA's segments back to back, each as long as its MMAs or the multistage
    // pipeline's latency floor (as a data-parallel CTA's), and never before its operands land.
    // A CTA's first segment's span starts with the wave, its main loop after the first stage's
    // L2 latency; a later one's where the CTA's previous segment ended (segments come CTA by CTA).
    std::vector<double> cta_mma(static_cast<size_t>(plan.sk_ctas), 0.0);
    for (size_t i = 0; i < segs.size(); ++i) {
        Seg& seg = segs[i];
        const bool after = i > 0 && segs[i - 1].s.cta == seg.s.cta;
        const double n_iters = static_cast<double>(seg.s.iter_end - seg.s.iter_begin);
        const double stage_latency = l2_latency_ps + (seg.missed ? dram_latency_ps : 0.0);
        seg.mma_ps = n_iters * iter_ps;
        seg.begin = after ? segs[i - 1].end : start;
        seg.end = std::max((after ? seg.begin : start + l2_latency_ps) + std::max(seg.mma_ps, n_iters * stage_latency / in_flight), seg.loaded);
        cta_mma[static_cast<size_t>(seg.s.cta)] += seg.mma_ps;
    }
    const double cta_ps_max = *std::max_element(cta_mma.begin(), cta_mma.end());
    // Fixup, every transaction in time order: a peer stores its partial when its segment ends;
    // the owner, at its segment's end and once every peer's partial is stored, reads them in
    // turn and stores C.
    // per stream-K tile (0 .. sk_tiles - 1): its peer segments, its owner segment, how many
    // peers have not stored yet, when the last stored, when its owner's main loop ended while it
    // waits for them (-1: not waiting)
    const size_t n_tiles = static_cast<size_t>(plan.sk_tiles);
    std::vector<std::vector<size_t>> peers(n_tiles);
    std::vector<size_t> owner(n_tiles), waiting(n_tiles, 0);
    std::vector<double> stored(n_tiles, 0.0), owner_ready(n_tiles, -1.0);
    for (size_t i = 0; i < segs.size(); ++i) {
        const size_t t = static_cast<size_t>(segs[i].s.tile);
        if (segs[i].s.iter_begin > 0) peers[t].push_back(i), ++waiting[t];
        else owner[t] = i;
    }
    // Each step is taken at its time, in time order (the L2 and the ports serve requests in the
    // order they come): a segment's end; the owner's read of its k-th peer's partial; its C store.
    enum Step { End, Read, Store };
    using Item = std::tuple<double, size_t, int, size_t>;  // when, which segment, which step, which peer
    std::priority_queue<Item, std::vector<Item>, std::greater<>> steps;
    for (size_t i = 0; i < segs.size(); ++i) steps.emplace(segs[i].end, i, End, 0);
    double wave_end = start, stores_done = start;
    bool first = true;
    auto partial_key = [](size_t tile, int64_t cta) { return TileId{-1, mix_key(mix_key(7, tile), static_cast<uint64_t>(cta))}; };
    // the owner of tile t, every peer's partial stored by `ready`, goes on to read them (or store C)
    auto fixup = [&](size_t t, double ready) { steps.emplace(ready, owner[t], peers[t].empty() ? Store : Read, 0); };
    while (!steps.empty()) {
        const auto [at, i, step, k] = steps.top();
        steps.pop();
        const Seg& seg = segs[i];
        const size_t t = static_cast<size_t>(seg.s.tile);
        SmPort& sm = *m_sms[static_cast<size_t>(seg.s.cta % m_cfg.sms)];
        wave_end = std::max(wave_end, at);
        if (step == Read) {
            const double read = sm.workspace(partial_key(t, segs[peers[t][k]].s.cta), seg.m * seg.n * 4, false, at - sim_now_ps());
            steps.emplace(read, i, k + 1 < peers[t].size() ? Read : Store, k + 1);
        } else if (step == Store) {
            stores_done = std::max(stores_done, sm.access(TileId{c_tensor, mix_key(3, static_cast<uint64_t>(t))}, seg.m * seg.n * eb, {}, true,
                                                          at - sim_now_ps()));
        } else {
            cta_events(static_cast<size_t>(seg.s.cta % m_cfg.sms), seg.begin, seg.end, seg.m, seg.n, k_at(seg.s.iter_end) - k_at(seg.s.iter_begin),
                       first ? m_clock.cycles_of(cta_ps_max) : 0, static_cast<uint32_t>(seg.s.cta));
            first = false;
            if (seg.s.iter_begin > 0) {  // a peer: store the partial; the owner may now go on
                const double done_ps = sm.workspace(partial_key(t, seg.s.cta), seg.m * seg.n * 4, true, at - sim_now_ps());
                stores_done = std::max(stores_done, done_ps);
                stored[t] = std::max(stored[t], done_ps);
                if (--waiting[t] == 0 && owner_ready[t] >= 0) fixup(t, std::max(owner_ready[t], stored[t]));
            } else if (waiting[t] == 0) {
                fixup(t, std::max(at, stored[t]));
            } else {
                owner_ready[t] = at;
            }
        }
    }
    // waiting for operands or for peers' partials (operand_load, as a split-K chain's wait is)
    if (wave_end > start + cta_ps_max)
        stall(start + cta_ps_max, wave_end - (start + cta_ps_max), 0, m_operand_load);
    sim_wait_until_ps(wave_end);
    kernel_end = std::max(kernel_end, stores_done);
}

}  // namespace archsim
