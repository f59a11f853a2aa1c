#include "arch/common/machine_base.h"

#include "arch/common/fusion.h"
#include "sim/base/error.h"
#include "traces/trace_writer.h"

namespace archsim {

Route route(const Operator& op, const OpGraph& graph, const RoutingRules& rules) {
    if (!op.cost.attention.empty()) return Route::Attention;
    switch (op.cost.cls) {
        case OpClass::ShapeOnly:
        case OpClass::Unsupported:
            return Route::Skip;
        case OpClass::Contraction: {
            if (rules.thin_grouped_conv_streams && is_thin_grouped_conv(op)) return Route::Streaming;
            if (rules.gemv_max_rows > 0 && !op.cost.gemms.empty()) {
                bool skinny = true;
                for (const auto& g : op.cost.gemms) skinny = skinny && g.m <= rules.gemv_max_rows;
                if (skinny) return Route::Streaming;
            }
            return Route::Contraction;
        }
        default:
            return rules.fuse_elementwise && graph.runtime().empty() && fuses_into_producer(op, graph) ? Route::FusedEpilogue
                                                                                                     : Route::Streaming;
    }
}

std::vector<int32_t> epilogue_side_inputs(const Operator& op) {
    std::vector<int32_t> out;
    for (size_t i = 1; i < op.inputs.size(); ++i) {
        const int32_t t = op.inputs[i];
        if (t >= 0) out.push_back(t);
    }
    return out;
}

Operator epilogue_of(const Operator& kernel) {
    Operator e;
    e.name = kernel.name;
    e.op_type = "epilogue";
    e.cost.cls = OpClass::Elementwise;
    e.cost.flops = kernel.cost.non_mac_flops();
    e.inputs = {-1};
    for (int32_t t : kernel.inputs)
        if (t >= 0 && !kernel.cost.is_gemm_operand(t)) e.inputs.push_back(t);
    return e;
}

void MachineBase::attention(const Operator& op, const OpGraph& graph) {
    // the engine checks MachineKind::fused_attention before simulating; reaching this is a bug
    throw std::logic_error("kernel '" + op.name + "': fused attention on a machine without its cost model");
}

void MachineBase::enable_power(const PowerSpec& spec) {
    m_power = std::make_unique<PowerController>(spec);
    if (spec.limit_w > 0) m_rec.trace().set_attr("power.limit_w", spec.limit_w);
    if (spec.limit_w > 0 && spec.fixed_clock) m_rec.trace().set_attr("power.fixed_clock", 1.0);
    if (m_power->clock_mhz() != spec.nominal_mhz) set_clock_mhz(m_power->clock_mhz());
}

void MachineBase::end_of_run() {
    if (!m_power) return;
    TraceWriter& trace = m_rec.trace();
    const double offchip = trace.offchip_energy_pj();
    m_power->finish(sim_now_ps(), trace.dynamic_energy_pj() - offchip, offchip);
    trace.set_attr("power.peak_w", m_power->peak_w());
    trace.set_attr("power.unthrottled_w", m_power->unthrottled_w());
    trace.set_power_timeline(m_power->timeline());
}

void MachineBase::execute(uint32_t op_index, const Operator& op, const OpGraph& graph) {
    m_rec.set_op(op_index);
    if (m_power) {
        TraceWriter& trace = m_rec.trace();
        const double offchip = trace.offchip_energy_pj();
        const double now = cycle_timed() ? static_cast<double>(m_clock.to_ps(m_clock.now_cycle())) : sim_now_ps();
        if (m_power->at_boundary(now, trace.dynamic_energy_pj() - offchip, offchip)) set_clock_mhz(m_power->clock_mhz());
        if (m_power->spec().limit_w > 0) trace.set_op_power(op_index, m_power->clock_mhz(), m_power->energy_scale());
    }
    const Route r = route(op, graph, m_rules);
    if (r == Route::Skip) return;
    if (std::optional<OpMapping> m = mapping_of(op, graph, r)) {
        m->op = op_index;
        m_rec.trace().set_op_mapping(std::move(*m));
    }
    // an operator fused into its producer depends on the graph around it: simulated, unless the
    // machine replays whole repeated instances (memo_epilogues())
    if (m_memoize && (r != Route::FusedEpilogue || memo_epilogues()) && run_memoized(op_index, op, graph, r)) return;
    run(op, graph, r);
}

bool MachineBase::run_memoized(uint32_t op_index, const Operator& op, const OpGraph& graph, Route r) {
    const std::vector<int32_t> slots = kernel_slots(op);
    MemoKey key;
    key.add(uint64_t(r));
    if (m_power) key.add(m_power->clock_mhz());  // a kernel's timing depends on the clock it runs at
    add_kernel_signature(key, op, graph, slots);
    if (!memo_state(op, graph, slots, key)) return false;
    TraceWriter& trace = m_rec.trace();
    const bool cycles = cycle_timed();
    const uint64_t start_cycle = cycles ? m_clock.now_cycle() : 0;
    const uint64_t origin_ps = cycles ? m_clock.to_ps(start_cycle) : static_cast<uint64_t>(sim_now_ps());
    // a candidate under the exact key, else (if the machine has one) under its looser key
    auto replayable = [&](uint64_t k, bool exact) -> const MemoEntry* {
        for (const auto& c : m_memo.find(k))
            if (memo_replayable(c->post_state, static_cast<double>(origin_ps), c->dur_ps, exact)) return c.get();
        return nullptr;
    };
    bool exact = true;
    const MemoEntry* e = replayable(key.value(), true);
    // the looser key only when the exact one found nothing (a miss is then recorded under both)
    MemoKey loose;
    const bool has_loose = !e && memo_loose_state(op, graph, slots, loose);
    if (has_loose) {
        loose.add(uint64_t(0x4C005E)).add(uint64_t(r));  // never equal to an exact key
        if (m_power) loose.add(m_power->clock_mhz());
        add_kernel_signature(loose, op, graph, slots);
        exact = false;
        e = replayable(loose.value(), false);
    }
    if (e) {
        ++m_memo.hits;
        trace.replay(e->events, e->sums, e->dynamic_pj, e->offchip_pj, op_index, origin_ps);
        const double end_ps = cycles ? static_cast<double>(m_clock.to_ps(start_cycle + e->dur_cycles)) : static_cast<double>(origin_ps + e->dur_ps);
        sim_wait_until_ps(end_ps);
        memo_restore(e->post_state, op, graph, slots, end_ps, exact);
        return true;
    }
    ++m_memo.misses;
    trace.begin_capture();
    run(op, graph, r);
    auto rec = std::make_shared<MemoEntry>();
    trace.end_capture(origin_ps, rec->events, rec->sums, rec->dynamic_pj, rec->offchip_pj);
    const double end_ps = sim_now_ps();
    rec->dur_ps = static_cast<uint64_t>(end_ps) - origin_ps;
    if (cycles) rec->dur_cycles = m_clock.cycle_at_or_after(end_ps) - start_cycle;
    rec->post_state = memo_save(op, graph, slots, end_ps);
    // keep at most kMaxMemoEvents recorded events (56 bytes each) in all; a kernel whose change
    // the machine cannot describe (no post state) is not kept
    constexpr uint64_t kMaxMemoEvents = uint64_t{4} << 20;
    const bool keep = rec->post_state.has_value() && m_memo_events + rec->events.size() <= kMaxMemoEvents;
    if (keep) {
        m_memo_events += rec->events.size();
        m_memo.insert(key.value(), rec);
        if (has_loose) m_memo.insert(loose.value(), rec);
    }
    memo_kept(keep);
    return true;
}

const KernelRepeats& MachineBase::kernel_repeats(const OpGraph& graph) {
    if (m_repeats_of == &graph) return m_repeats;
    const std::vector<int32_t>& order = graph.topo_order();
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    m_position.assign(graph.ops().size(), 0);
    for (size_t q = 0; q < order.size(); ++q) {
        const Operator& op = graph.ops()[static_cast<size_t>(order[q])];
        m_position[static_cast<size_t>(order[q])] = q;
        slots.push_back(kernel_slots(op));
        MemoKey key;
        key.add(uint64_t(route(op, graph, m_rules)));
        add_kernel_signature(key, op, graph, slots.back());
        sigs.push_back(key.value());
    }
    m_repeats = KernelRepeats::find(sigs, slots);
    m_repeats_of = &graph;
    return m_repeats;
}

void MachineBase::run(const Operator& op, const OpGraph& graph, Route r) {
    begin_op(op, graph, r);
    switch (r) {
        case Route::FusedEpilogue: fused_epilogue(op, graph); break;
        case Route::Attention: attention(op, graph); break;
        case Route::Contraction:
            contraction(op, graph);
            if (!graph.runtime().empty() && op.members.size() > 1) fused_epilogue(epilogue_of(op), graph);
            break;
        default: streaming(op, graph); break;
    }
    end_op(op, graph, r);
}

}  // namespace archsim
