// The KPU's contractions as pipelined wavefronts: the operand pipeline's waves (issue, run),
// GEMMs and fused attention on the fabric (KpuMachine; the schedule in wavefront.h, a wave in
// kpu_wave.h).
#include "arch/kpu/kpu_machine_impl.h"

namespace archsim {

uint64_t KpuMachine::issue(Wave& w) {
    const uint64_t prefetched = m_clock.cycle_at_or_after(w.prefetch_ready_ps);
    if (w.dram_read_bytes <= 0) return std::max(m_clock.now_cycle(), prefetched);
    const uint64_t landed = dma(w.dram_read_bytes, /*write=*/false, {});
    return std::max(landed, prefetched);
}

void KpuMachine::first_issued() {
    if (m_prefetch_for < 0) return;
    const Operator& next = m_graph->ops()[static_cast<size_t>(m_prefetch_for)];
    m_prefetch_for = -1;
    for (int32_t t : next.inputs) {
        if (t < 0 || m_graph->tensors()[static_cast<size_t>(t)].role != TensorRole::Weight) continue;
        const int64_t b = bytes_of(t);
        if (has_whole(t) || !m_l3.has_room(b)) continue;
        const uint64_t start = m_clock.now_cycle();
        m_ready_ps[t] = m_dram->transfer(b, /*write=*/false);
        insert_whole(t, b);
        const uint64_t end = m_clock.cycle_at_or_after(m_ready_ps[t]);
        emit(EventKind::Transfer, m_dma, start, end > start ? end - start : 0, {uint64_t(b)});
        emit(EventKind::SramWrite, m_l3c, start, end > start ? end - start : 0, {uint64_t(b)});
    }
}

uint64_t KpuMachine::run(Wave& w, uint64_t start, uint32_t seq, bool) {
    const int64_t mover = static_cast<int64_t>(std::ceil(w.mover_bytes_max_tile / m_cfg.block_mover_bytes_per_cycle));
    const int64_t streamer = static_cast<int64_t>(std::ceil(w.streamer_bytes_max_tile / m_cfg.streamer_bytes_per_cycle));
    const uint64_t compute = static_cast<uint64_t>(w.compute_cycles);
    const uint64_t d = static_cast<uint64_t>(std::max({w.compute_cycles, mover, streamer}));
    if (w.contraction) {
        // one event per tile of work; the tiles of a wave run side by side, so only the first
        // carries the wave's cycles (the fabric's busy time), every one carries its MACs
        for (size_t i = 0; i < w.blocks.size(); ++i)
            emit(EventKind::Fold, m_fabric, start, compute, {0, uint64_t(w.blocks[i].m * w.blocks[i].n * w.k), i == 0 ? compute : 0});
    } else {
        emit(EventKind::Vector, m_fabric, start, compute, {0, uint64_t(w.pe_ops), compute});
    }
    if (d > compute)
        emit(EventKind::Stall, m_fabric, start + compute, d - compute, {0, 0, d - compute},
             mover >= streamer ? m_mover_late : m_streamer_late);
    emit(EventKind::Transfer, m_mover, start, d, {uint64_t(w.mover_bytes)});
    emit(EventKind::Transfer, m_streamer, start, d, {uint64_t(w.streamer_bytes)});
    emit(EventKind::Transfer, m_noc, start, d, {uint64_t(w.mover_bytes), uint64_t(std::llround(w.mover_bytes * m_hops))});
    const std::pair<uint16_t, std::pair<int64_t, int64_t>> levels[] = {
        {m_l3c, {w.l3_read, w.l3_write}}, {m_l2c, {w.l2_read, w.l2_write}}, {m_l1c, {w.l1_read, w.l1_write}}};
    for (const auto& [comp, rw] : levels) {
        if (rw.first > 0) emit(EventKind::SramRead, comp, start, d, {uint64_t(rw.first)});
        if (rw.second > 0) emit(EventKind::SramWrite, comp, start, d, {uint64_t(rw.second)});
    }
    (void)seq;
    return d;
}

void KpuMachine::contraction(const Operator& op, const OpGraph&) {
    for_each_gemm(op, [&](size_t gi, const GemmView& g) { gemm_waves(gi, g, 0); });
    m_pipe.flush();
}

void KpuMachine::attention(const Operator& op, const OpGraph&) {
    const AttentionView& a = op.cost.attention.at(0);
    const int64_t scores = a.batch * a.q_len * a.kv_len * operand_bytes(m_cfg.precision);
    const bool on_chip = scores <= m_l3.capacity_bytes();
    // the PEs' vector work on the scores, each in from L3 and back (spilled: DRAM both ways)
    auto vector_pass = [&](int64_t ops) {
        m_pipe.flush();
        Wave w;
        w.dram_read_bytes = on_chip ? 0 : scores;
        shape_pe_wave(w, ops, ops, scores, scores, /*own_pass=*/false);
        m_pipe.push(std::move(w));
        m_pipe.flush();
        if (!on_chip) m_pipe.note_write(dma(scores, /*write=*/true, m_l3c));  // its result spilled
    };
    // forward: S, softmax, P V; backward (AttentionView::backward): S, softmax recomputed,
    // dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q. A product reading a score matrix
    // (its A operand not in memory) reads it from L3, or from DRAM when spilled.
    const int64_t ops = op.cost.non_mac_flops();
    const std::vector<GemmView>& gemms = op.cost.gemms;
    for (size_t gi = 0; gi < gemms.size(); ++gi) {
        gemm_waves(gi, gemms[gi], !on_chip && gemms[gi].a.tensor < 0 ? scores : 0);
        if (!on_chip && gemms[gi].c.tensor < 0) {  // scores made: spilled
            m_pipe.flush();
            m_pipe.note_write(dma(scores, /*write=*/true, m_l3c));
        }
        if (gi == 0) vector_pass(a.backward ? ops / 2 : ops);
        if (gi == 2 && a.backward) vector_pass(ops - ops / 2);
    }
    m_pipe.flush();
}

void KpuMachine::gemm_waves(size_t gi, const GemmView& g, int64_t extra_dram_bytes) {
    const int64_t eb = operand_bytes(m_cfg.precision);
    const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor;  // -1: on chip (a recurrent state)
    const double a_ratio = g.a_unique_ratio();
    const FabricPlan plan = plan_gemm(g, m_cfg);
    const BlockOrder order = gi < m_orders.size() ? m_orders[gi] : BlockOrder{};
    for (int64_t rep = 0; rep < g.repeat; ++rep) {
        for_each_wave(g, m_cfg, order, [&](int64_t wi, const std::vector<FabricBlock>& blocks) {
            Wave w;
            w.blocks = blocks;
            w.k = g.k;
            w.compute_cycles = wave_compute_cycles(plan, m_cfg, wi);
            std::unordered_set<uint64_t>& seen = m_seen;  // panels this wave already asked for
            seen.clear();
            size_t tile = 0;
            for (const auto& b : blocks) {
                TileBuffer& l2 = m_l2[tile++];
                const BlockBytes bytes = block_bytes(g, b, eb, a_ratio);
                const int64_t a_bytes = bytes.a, b_bytes = bytes.b;
                // a panel's place in its tensor (the key adds the tensor)
                const uint64_t a_local = mix_key(mix_key(mix_key(1, gi), rep * 1000003 + b.instance), b.bi);
                const uint64_t b_local = g.b_is_weight ? mix_key(mix_key(mix_key(2, gi), b.instance % g.groups), b.bj)
                                                       : mix_key(mix_key(mix_key(2, gi), rep * 1000003 + b.instance), b.bj);
                const uint64_t a_key = tile_key(a_tensor, a_local), b_key = tile_key(b_tensor, b_local);
                if (seen.insert(a_key).second && a_tensor >= 0) w.dram_read_bytes += fetch_panel(a_key, a_local, a_bytes, a_tensor, w.prefetch_ready_ps);
                if (seen.insert(b_key).second) w.dram_read_bytes += fetch_panel(b_key, b_local, b_bytes, b_tensor, w.prefetch_ready_ps);
                w.add_block(move_into_l2(l2, a_key, a_bytes, b_key, b_bytes), bytes.out, bytes.streamed);
            }
            if (wi == 0 && rep == 0) w.dram_read_bytes += extra_dram_bytes;
            w.l3_write += w.dram_read_bytes;  // DMA fills
            m_pipe.push(std::move(w));
        });
    }
}

const KpuMapping& KpuMachine::mapping_for(const GemmView& g, ResidentOperands resident) {
    uint64_t key = 0x6D6170;
    for (int64_t v : {g.m, g.n, g.k, g.batch, g.groups, g.a_unique_elems, int64_t(g.b_is_weight), int64_t(g.a.tensor >= 0),
                      int64_t(resident.a), int64_t(resident.b), int64_t(std::llround(resident.clock_mhz * 1e3))})
        key = mix_key(key, uint64_t(v));
    auto it = m_mappings.find(key);
    if (it != m_mappings.end()) return it->second;
    return m_mappings.emplace(key, mapper() == Mapper::Fixed ? KpuMapping{} : search_mapping(g, m_cfg, resident)).first->second;
}

std::optional<OpMapping> KpuMachine::mapping_of(const Operator& op, const OpGraph&, Route r) {
    m_orders.assign(op.cost.gemms.size(), BlockOrder{});
    if (r != Route::Contraction && r != Route::Attention) return std::nullopt;
    OpMapping out;
    for_each_gemm(op, [&](size_t gi, const GemmView& g) {
        const KpuMapping& m = mapping_for(g, {holds_whole(g.a.tensor), holds_whole(g.b.tensor), m_clock.hz() * 1e-6});
        m_orders[gi] = m.order;
        out.add(describe(m.order), m.mapspace, m.evaluated);
    });
    if (out.choice.empty()) return std::nullopt;
    return out;
}

void KpuMachine::shape_pe_wave(Wave& w, int64_t ops, int64_t work, int64_t in_bytes, int64_t out_bytes, bool own_pass) const {
    const int64_t pes = m_cfg.compute_tiles() * m_cfg.pes_per_tile();
    w.contraction = false;
    w.pe_ops = ops;
    w.compute_cycles = (work + pes - 1) / pes + (own_pass ? m_cfg.fill_cycles + m_cfg.drain_cycles : 0);
    const int64_t moved = in_bytes + out_bytes;
    w.mover_bytes = w.streamer_bytes = moved;
    w.mover_bytes_max_tile = w.streamer_bytes_max_tile = (moved + m_cfg.compute_tiles() - 1) / m_cfg.compute_tiles();
    w.l3_read = in_bytes;
    w.l3_write = out_bytes + w.dram_read_bytes;
    w.l2_read = w.l2_write = w.l1_read = w.l1_write = moved;
}

int64_t KpuMachine::fetch_panel(uint64_t key, uint64_t local, int64_t bytes, int32_t tensor, double& ready_ps) {
    if (tensor >= 0 && has_whole(tensor)) {
        auto it = m_ready_ps.find(tensor);
        if (it != m_ready_ps.end()) ready_ps = std::max(ready_ps, it->second);
        return 0;
    }
    if (m_l3.hit(key, tensor, local)) return 0;
    m_l3.insert(key, bytes, tensor, local);
    return bytes;
}

}  // namespace archsim
