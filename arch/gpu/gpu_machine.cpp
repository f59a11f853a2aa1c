#include "arch/gpu/gpu_machine.h"

#include "arch/gpu/gpu_machine_impl.h"

namespace archsim {

GpuMachine::GpuMachine(const GpuConfig& cfg, TraceWriter& trace)
    : MachineBase(trace, cfg.clock_mhz, cfg.static_w, cfg.precision_name,
                  RoutingRules{cfg.fuse_elementwise, /*thin_grouped_conv_streams=*/true, cfg.gemv_max_rows}),
      m_cfg(cfg) {
    m_gpu = m_op_component = m_rec.lane("gpu");
    for (int64_t s = 0; s < cfg.sms; ++s)
        m_sm_comp.push_back(m_rec.compute("sm" + std::to_string(s), "compute", cfg.contraction_fma_pj(), cfg.contraction_rate()));
    m_cuda = m_rec.compute("cuda_cores", "cuda_cores", cfg.cuda_mac_pj / 2, 0);
    const uint16_t l2 = m_rec.memory("l2", cfg.l2_pj_per_byte);
    m_smem = m_rec.memory("smem", cfg.smem_pj_per_byte);
    m_rf = m_rec.memory("registers", cfg.rf_pj_per_byte);
    m_launch = m_rec.stall_cause("launch", "the gap before a kernel's first CTA (launch overhead)");
    m_operand_load = m_rec.stall_cause("operand_load", "CTAs waiting for operand tiles from L2/DRAM beyond their MMA time");
    m_write_drain = m_rec.stall_cause("write_drain", "a kernel's output stores still in flight after its last wave");
    m_dram = std::make_unique<DramPort>(m_rec, cfg.sustained_dram(), "l2_dram_port");
    m_l2 = std::make_unique<L2Cache>("l2", cfg.l2_mib * 1024 * 1024, cfg.l2_bytes_per_cycle / cfg.cycle_ps(),
                                     cfg.l2_latency_cycles * cfg.cycle_ps(), trace, l2, m_rec.op_ref(), m_dram->dma());
    for (int64_t s = 0; s < cfg.sms; ++s) {
        m_sms.push_back(std::make_unique<SmPort>(("sm" + std::to_string(s)).c_str(), cfg.sm_l2_bytes_per_cycle / cfg.cycle_ps()));
        m_sms.back()->socket.bind(m_l2->socket);
    }
    enable_power(cfg.power_spec());
}

bool GpuMachine::memo_state(const Operator&, const OpGraph&, const std::vector<int32_t>& slots, MemoKey& key) {
    // the clock, the L2's and SM ports' busy times and the DRAM's state: both keys hold them
    const double t0 = sim_now_ps();
    MemoKey common;
    common.add(m_cfg.clock_mhz).add(std::max(0.0, m_l2->free_ps() - t0));
    for (const auto& sm : m_sms) common.add(std::max(0.0, sm->free_ps() - t0));
    m_dram->memo_key(common, t0);
    m_memo_common = common.value();
    key.add(m_memo_common);
    m_l2_memo.begin(m_l2->lines(), slots, key);
    m_memo_l2_hits = m_l2->hits(), m_memo_l2_misses = m_l2->misses();
    return true;
}

bool GpuMachine::memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) {
    key.add(m_memo_common);
    m_l2_memo.add_loose(key);
    return true;
}

std::any GpuMachine::memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) {
    auto l2 = m_l2_memo.save(m_l2->lines());
    if (!l2) return {};
    MemoChange c{std::move(*l2), m_l2->free_ps() - end_ps, {}, m_l2->hits() - m_memo_l2_hits, m_l2->misses() - m_memo_l2_misses,
                 m_dram->memo_save(end_ps)};
    for (const auto& sm : m_sms) c.port_busy_after_ps.push_back(sm->free_ps() - end_ps);
    return c;
}

void GpuMachine::memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                              bool exact) {
    const auto& c = std::any_cast<const MemoChange&>(change);
    m_l2_memo.restore(c.l2, exact, m_l2->lines());
    // a server idle at the end keeps its own (earlier) free time, as simulating would
    m_l2->restore(c.l2_busy_after_ps > 0 ? end_ps + c.l2_busy_after_ps : m_l2->free_ps(), c.l2_hits, c.l2_misses);
    for (size_t s = 0; s < m_sms.size(); ++s)
        if (c.port_busy_after_ps[s] > 0) m_sms[s]->set_free_ps(end_ps + c.port_busy_after_ps[s]);
    m_dram->memo_restore(c.dram, end_ps);
}

bool GpuMachine::memo_replayable(const std::any& change, double, uint64_t, bool exact) {
    return exact || m_l2_memo.check(std::any_cast<const MemoChange&>(change).l2, m_l2->lines());
}

void GpuMachine::fused_epilogue(const Operator& op, const OpGraph& graph) {
    const double start = sim_now_ps();
    const double lanes = static_cast<double>(m_cfg.sms) * m_cfg.cuda_fp32_fma;
    const double compute_ps = std::ceil(static_cast<double>(op.cost.flops) / lanes) * m_cfg.cycle_ps();
    if (op.cost.flops > 0)
        m_rec.emit(EventKind::Vector, m_cuda, ps_span(start, compute_ps), {0, uint64_t(op.cost.flops), m_clock.cycles_of(compute_ps)});
    double done = start;
    for (int32_t t : epilogue_side_inputs(op))
        if (graph.tensors()[static_cast<size_t>(t)].elems() > 1)
            done = std::max(done, spread(TileId{t, 7}, t, bytes_of(graph, t), false, 0));
    if (done > start + compute_ps) stall(start + compute_ps, done - (start + compute_ps), 0, m_operand_load);
    sim_wait_until_ps(std::max(done, start + compute_ps));
}

double GpuMachine::read_whole(const Operator& op, const OpGraph& graph, int32_t t) {
    return spread(TileId{t, 4}, t, read_bytes(op, t, graph.tensors()[static_cast<size_t>(t)], m_cfg.precision), false, 0);
}

double GpuMachine::stream_loads(const Operator& op, const OpGraph& graph) {
    double done = sim_now_ps();
    for (int32_t t : op.inputs)
        if (t >= 0) done = std::max(done, read_whole(op, graph, t));
    return done;
}

void GpuMachine::streaming(const Operator& op, const OpGraph& graph) {
    launch();
    const double start = sim_now_ps();
    const int64_t row = layer_norm_row(op, graph);
    const double loads_done = row > 0 ? layer_norm_loads(op, graph, row) : stream_loads(op, graph);
    const bool direct_conv = op.cost.cls == OpClass::Contraction;  // a thin convolution on the CUDA cores
    const int64_t ops = direct_conv ? 2 * op.cost.macs : op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
    const double lanes = static_cast<double>(m_cfg.sms) * m_cfg.cuda_fp32_fma;
    const double compute_ps = std::ceil(static_cast<double>(ops) / lanes) * m_cfg.cycle_ps();
    const double end = std::max(start + compute_ps, loads_done);
    m_rec.emit(EventKind::Vector, m_cuda, ps_span(start, compute_ps), {0, uint64_t(ops), m_clock.cycles_of(compute_ps)});
    if (direct_conv) m_rec.emit(EventKind::Fold, m_sm_comp[0], ps_span(start, compute_ps), {0, uint64_t(op.cost.macs), 0});
    if (loads_done > start + compute_ps) stall(start + compute_ps, loads_done - (start + compute_ps), 0, m_operand_load);
    double stores = end;
    for (int32_t t : op.outputs) {
        stores = std::max(stores, spread(TileId{t, 5}, t, bytes_of(graph, t), true, end - sim_now_ps()));
        m_l2->retain(t, bytes_of(graph, t));  // the consumer finds it in L2 if it fits
    }
    sim_wait_until_ps(end);
    if (stores > end) stall(end, stores - end, 0, m_write_drain);
    sim_wait_until_ps(stores);
}

void GpuMachine::launch() {
    const double gap = m_cfg.kernel_gap_us() * 1e6;
    if (gap <= 0) return;
    const double t = sim_now_ps();
    stall(t, gap, 0, m_launch);
    sim_wait_until_ps(t + gap);
}

void GpuMachine::cta_waves(int64_t ctas, int64_t ctas_per_sm, const std::function<double(int64_t, int64_t)>& cycles,
                           const std::function<double(int64_t, SmPort&, double)>& load,
                           const std::function<double(int64_t, SmPort&, size_t, const Span&, double, uint64_t)>& finish) {
    if (ctas <= 0) return;
    const int64_t n_sms = m_cfg.sms, slots = std::min(n_sms * ctas_per_sm, ctas);
    const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
    const double t0 = sim_now_ps();
    // CTAs sharing an SM while every slot is busy; a kernel of fewer CTAs than slots spreads them
    const int64_t sharing = std::min(ctas_per_sm, (ctas + n_sms - 1) / n_sms);
    using Slot = std::pair<double, int64_t>;  // free at, slot (slot s is on SM s mod SMs)
    // the schedule without operand waits: each CTA's time alone, for the compute span and the stall
    std::vector<double> cta_ps(static_cast<size_t>(ctas));
    for (int64_t c = 0; c < ctas; ++c) cta_ps[static_cast<size_t>(c)] = cycles(c, sharing) * m_cfg.cycle_ps();
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> ideal;
    for (int64_t s = 0; s < slots; ++s) ideal.emplace(t0, s);
    double ideal_end = t0;
    for (int64_t c = 0; c < ctas; ++c) {
        auto [at, s] = ideal.top();
        ideal.pop();
        const double end = at + l2_latency_ps + cta_ps[static_cast<size_t>(c)];
        ideal_end = std::max(ideal_end, end);
        ideal.emplace(end, s);
    }
    // The timed schedule, in time order: a CTA starts on the slot that frees first (the block
    // scheduler hands out CTAs as resources free, with no barrier between waves), issues its
    // loads then, and ends at the later of its loads and the L2 latency plus its time; its
    // stores go out at its end. Events are taken in time order so each SM port and the L2 see
    // their requests in time order.
    struct Event {
        double at;
        int64_t slot, cta;  // cta >= 0: CTA `cta` ends; -1: slot `slot` is free
        bool operator>(const Event& o) const { return at != o.at ? at > o.at : (cta < 0) < (o.cta < 0); }
    };
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    for (int64_t s = 0; s < slots; ++s) events.push({t0, s, -1});
    std::vector<double> started(static_cast<size_t>(ctas), t0);
    int64_t next = 0;
    double end_all = t0, stores_done = t0;
    while (!events.empty()) {
        const Event e = events.top();
        events.pop();
        const size_t sm = static_cast<size_t>(e.slot % n_sms);
        if (e.cta < 0) {
            if (next >= ctas) continue;
            const int64_t c = next++;
            started[static_cast<size_t>(c)] = e.at;
            const double loaded = load(c, *m_sms[sm], e.at - t0);
            const double end = std::max(e.at + l2_latency_ps + cta_ps[static_cast<size_t>(c)], loaded);
            events.push({end, e.slot, c});
            continue;
        }
        const double begin = started[static_cast<size_t>(e.cta)];
        end_all = std::max(end_all, e.at);
        stores_done = std::max(stores_done, finish(e.cta, *m_sms[sm], sm, ps_span(begin, e.at - begin), e.at,
                                                   e.cta == 0 ? m_clock.cycles_of(ideal_end - t0) : 0));
        events.push({e.at, e.slot, -1});
    }
    if (end_all > ideal_end) stall(ideal_end, end_all - ideal_end, 0, m_operand_load);
    sim_wait_until_ps(end_all);
    if (stores_done > sim_now_ps()) stall(sim_now_ps(), stores_done - sim_now_ps(), 0, m_write_drain);
    sim_wait_until_ps(std::max(end_all, stores_done));
}

double GpuMachine::spread(TileId tile, int32_t t, int64_t bytes, bool store, double issue_ps, double lo, double hi) {
    double done = sim_now_ps();
    const int64_t n = static_cast<int64_t>(m_sms.size());
    const auto at = [&](int64_t i) { return i == n ? hi : lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n); };
    for (int64_t sm = 0; sm < n; ++sm) {
        const TensorPart part{t, at(sm), at(sm + 1)};
        done = std::max(done, m_sms[static_cast<size_t>(sm)]->access(TileId{tile.owner, mix_key(tile.local, uint64_t(sm))},
                                                                      bytes / n + (sm < bytes % n ? 1 : 0), part, store, issue_ps));
    }
    return done;
}

std::unique_ptr<Machine> create_gpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<GpuMachine>(make_gpu_config(params), trace);
}

}  // namespace archsim
