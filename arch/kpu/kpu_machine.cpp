#include "arch/kpu/kpu_machine.h"

#include "arch/kpu/kpu_machine_impl.h"

namespace archsim {

KpuMachine::KpuMachine(const KpuConfig& cfg, TraceWriter& trace)
    : MachineBase(trace, cfg.clock_mhz(), cfg.static_w, cfg.precision_name, RoutingRules{}), m_cfg(cfg),
      m_l3(cfg.tiles() * cfg.l3_kib_per_tile * 1024),
      m_l2(static_cast<size_t>(cfg.compute_tiles()), TileBuffer(cfg.l2_kib_per_tile * 512)),
      m_hops(mean_mesh_hops(cfg.tile_rows, cfg.tile_cols)), m_pipe(*this, m_clock, m_rec) {
    m_fabric = m_op_component = m_rec.compute("fabric", "compute", cfg.mac_pj_now(), cfg.peak_macs_per_cycle());
    m_dram = std::make_unique<DramPort>(m_rec, cfg.dram);
    m_dma = m_rec.memory("dma", cfg.dma_pj_per_byte);
    m_l3c = m_rec.memory("l3", cfg.l3_pj_per_byte);
    m_mover = m_rec.memory("block_mover", cfg.block_mover_pj_per_byte);
    m_l2c = m_rec.memory("l2", cfg.l2_pj_per_byte);
    m_streamer = m_rec.memory("streamer", cfg.streamer_pj_per_byte);
    m_l1c = m_rec.memory("l1", cfg.l1_pj_per_byte);
    // L3 slices are spread over the mesh: a block's operands cross mean_mesh_hops() on average
    m_noc = m_rec.compute("noc", "noc", cfg.noc_pj_per_byte_hop(), 0);
    m_mover_late = m_rec.stall_cause("block_mover", "the L3 -> L2 block movers could not deliver a wave's operands in time");
    m_streamer_late = m_rec.stall_cause("streamer", "the L2 -> L1 streamers could not feed the wavefront at its rate");
    enable_power(cfg.power_spec());
}

bool KpuMachine::memo_state(const Operator&, const OpGraph& graph, const std::vector<int32_t>& slots, MemoKey& key) {
    next_ops(graph);
    m_memo_slots = slots;
    MemoKey common;  // what the loose key holds too (it extends the slots by the next weights)
    add_memo_common(graph, common);
    m_memo_common = common.value();
    key.add(m_memo_common);
    m_l3_memo.begin(m_l3, m_memo_slots, key);
    return true;
}

bool KpuMachine::memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) {
    key.add(m_memo_common);
    m_l3_memo.add_loose(key);
    return true;
}

std::any KpuMachine::memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) {
    auto l3 = m_l3_memo.save(m_l3);
    if (!l3) return {};  // a tile of a tensor the kernel does not name: not replayable
    MemoChange c{std::move(*l3), {}, m_dram->memo_save(end_ps)};
    for (size_t s = 0; s < m_memo_slots.size(); ++s)
        if (auto it = m_ready_ps.find(m_memo_slots[s]); it != m_ready_ps.end()) c.ready.emplace_back(int32_t(s), it->second - end_ps);
    return c;
}

bool KpuMachine::memo_replayable(const std::any& change, double, uint64_t, bool exact) {
    return exact || m_l3_memo.check(std::any_cast<const MemoChange&>(change).l3, m_l3);
}

void KpuMachine::memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                              bool exact) {
    const auto& c = std::any_cast<const MemoChange&>(change);
    m_l3_memo.restore(c.l3, exact, m_l3);
    for (const auto& [s, rel] : c.ready) m_ready_ps[m_memo_slots[static_cast<size_t>(s)]] = end_ps + rel;
    m_dram->memo_restore(c.dram, end_ps);
}

void KpuMachine::begin_op(const Operator&, const OpGraph& graph, Route) {
    next_ops(graph);
    m_graph = &graph;
    m_prefetch_for = m_next_op[m_rec.op()];
    for (auto& l2 : m_l2) l2.clear();
    m_pipe.begin();
}

void KpuMachine::fused_epilogue(const Operator& op, const OpGraph& graph) {
    Wave w;
    int64_t in_bytes = 0;
    for (int32_t t : epilogue_side_inputs(op)) {
        if (graph.tensors()[static_cast<size_t>(t)].elems() <= 1) continue;
        const int64_t b = bytes_of(t);
        in_bytes += b;
        if (!has_whole(t)) {
            w.dram_read_bytes += b;
            insert_whole(t, b);
        }
    }
    if (in_bytes == 0 && op.cost.flops == 0) return;
    shape_pe_wave(w, op.cost.flops, op.cost.flops, in_bytes, 0, /*own_pass=*/false);
    m_pipe.push(std::move(w));
    m_pipe.flush();
}

void KpuMachine::streaming(const Operator& op, const OpGraph& graph) {
    Wave w;
    int64_t in_bytes = 0, out_bytes = 0, out_elems = 0;
    for (int32_t t : op.inputs) {
        if (t < 0) continue;
        const int64_t b = read_bytes(op, t, graph.tensors()[static_cast<size_t>(t)], m_cfg.precision);
        in_bytes += b;
        if (!has_whole(t)) {
            w.dram_read_bytes += b;
            insert_whole(t, b);
        }
    }
    for (int32_t t : op.outputs) {
        out_bytes += bytes_of(t);
        out_elems += graph.tensors()[t].elems();
    }
    const bool copy = op.cost.cls == OpClass::DataMovement;
    shape_pe_wave(w, copy ? 0 : op.cost.flops, copy ? out_elems : op.cost.flops, in_bytes, out_bytes, /*own_pass=*/true);
    m_pipe.push(std::move(w));
    m_pipe.flush();
}

void KpuMachine::end_op(const Operator& op, const OpGraph& graph, Route) {
    int64_t to_dram = 0;
    for (int32_t t : op.outputs) {
        const int64_t b = bytes_of(t);
        if (b <= m_l3.capacity_bytes()) insert_whole(t, b);
        if (b > m_l3.capacity_bytes() || graph.consumer_count(t) == 0) to_dram += b;
    }
    if (to_dram > 0) m_pipe.note_write(dma(to_dram, /*write=*/true, m_l3c));
    m_pipe.drain(m_fabric);
}

void KpuMachine::add_memo_common(const OpGraph& graph, MemoKey& key) {
    const double t0 = static_cast<double>(m_clock.to_ps(m_clock.now_cycle()));
    const int32_t next = m_next_op[m_rec.op()];
    key.add(next >= 0);
    if (next >= 0)
        for (int32_t t : graph.ops()[static_cast<size_t>(next)].inputs) {
            if (t < 0 || graph.tensors()[static_cast<size_t>(t)].role != TensorRole::Weight) continue;
            key.add(memo_slot(t)).add(run_bytes(graph.tensors()[static_cast<size_t>(t)], m_cfg.precision));
        }
    for (size_t s = 0; s < m_memo_slots.size(); ++s) {
        auto it = m_ready_ps.find(m_memo_slots[s]);
        key.add(it == m_ready_ps.end() ? 0.0 : std::max(0.0, it->second - t0));
    }
    m_dram->memo_key(key, t0);
}

void KpuMachine::next_ops(const OpGraph& graph) {
    if (!m_next_op.empty()) return;
    const auto& order = graph.topo_order();
    m_next_op.assign(graph.ops().size(), -1);
    for (size_t i = 0; i + 1 < order.size(); ++i) m_next_op[static_cast<size_t>(order[i])] = order[i + 1];
}

std::unique_ptr<Machine> create_kpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<KpuMachine>(make_kpu_config(params), trace);
}

}  // namespace archsim
