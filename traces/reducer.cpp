#include "traces/reducer.h"

#include <algorithm>
#include <cmath>

#include "traces/trace_reader.h"

namespace archsim {

Metrics reduce_trace(const TraceReader& tr) {
    Metrics m;
    m.model = tr.attr_string("model");
    m.machine = tr.attr_string("machine");
    m.precision = tr.attr_string("precision");
    m.runtime = tr.attr_string("runtime");
    if (m.runtime.empty()) m.runtime = "none";  // traces of schema 2 and older ran the graph as imported
    m.clock_hz = tr.attr_double("clock_hz");
    m.static_power_w = tr.attr_double("static_power_w");
    m.events = tr.event_count();
    const auto& comps = tr.components();
    for (const auto& c : comps)
        if (c.level == "compute") m.peak_macs_per_cycle += c.peak_ops_per_cycle;
    m.components.resize(comps.size());
    for (size_t i = 0; i < comps.size(); ++i) m.components[i].name = comps[i].name, m.components[i].level = comps[i].level;
    m.ops.resize(tr.ops().size());
    for (size_t i = 0; i < m.ops.size(); ++i) {
        m.ops[i].name = tr.ops()[i].name;
        m.ops[i].op_type = tr.ops()[i].op_type;
        m.ops[i].op_class = tr.ops()[i].op_class;
        m.ops[i].modeled = tr.ops()[i].op_class != "unsupported";
        if (!m.ops[i].modeled) m.unmodeled_ops.push_back(m.ops[i].name);
    }
    std::vector<double> op_dynamic_pj(m.ops.size(), 0.0);
    uint64_t end_ps = 0;

    tr.visit_events([&](const TraceEvent& e, const ComponentInfo& c) {
        OpMetrics& o = m.ops[e.op];
        ComponentMetrics& cm = m.components[e.component];
        switch (static_cast<EventKind>(e.kind)) {
            case EventKind::Fold:
            case EventKind::Vector:
                cm.ops += e.ops;
                cm.busy_ps += static_cast<double>(e.dur_ps);
                break;
            case EventKind::Transfer:
                cm.busy_ps += static_cast<double>(e.dur_ps);
                [[fallthrough]];
            case EventKind::DramRead:
            case EventKind::DramWrite:
            case EventKind::SramRead:
            case EventKind::SramWrite:
                cm.bytes += e.bytes;
                break;
            default:
                break;
        }
        end_ps = std::max<uint64_t>(end_ps, e.t_ps + e.dur_ps);
        const double pj = event_energy_pj(e, c);
        switch (static_cast<EventKind>(e.kind)) {
            case EventKind::Op:
                o.start_ps = static_cast<double>(e.t_ps);
                o.latency_ps = static_cast<double>(e.dur_ps);
                break;
            case EventKind::Fold:
                o.macs += static_cast<int64_t>(e.ops);
                [[fallthrough]];
            case EventKind::Vector:
                o.compute_cycles += e.cycles;
                break;
            case EventKind::DramRead:
            case EventKind::SramRead:
            case EventKind::Transfer:  // a mover: bytes priced per byte, a network per byte-hop
                o.traffic_bytes[c.level] += e.bytes;
                m.read_bytes[c.level] += e.bytes;
                break;
            case EventKind::DramWrite:
            case EventKind::SramWrite:
                o.traffic_bytes[c.level] += e.bytes;
                m.write_bytes[c.level] += e.bytes;
                break;
            case EventKind::Stall:
                o.stall_cycles += e.cycles;
                o.stall_cycles_by_cause[tr.stall_cause_name(e.detail)] += e.cycles;
                m.stall_cycles_by_cause[tr.stall_cause_name(e.detail)] += e.cycles;
                break;
        }
        if (pj != 0) {
            m.energy_pj_by_part[c.level] += pj;
            op_dynamic_pj[e.op] += pj;
        }
    });

    m.latency_ps = static_cast<double>(end_ps);
    m.latency_cycles = static_cast<uint64_t>(std::llround(m.latency_ps * m.clock_hz * 1e-12));
    m.energy_pj_by_part["static"] = m.static_power_w * m.latency_ps;  // W x ps = pJ
    for (const auto& [part, pj] : m.energy_pj_by_part) m.energy_pj += pj;
    for (const auto& [level, b] : m.read_bytes) m.traffic_bytes[level] += b;
    for (const auto& [level, b] : m.write_bytes) m.traffic_bytes[level] += b;
    for (size_t i = 0; i < m.ops.size(); ++i) {
        OpMetrics& o = m.ops[i];
        o.energy_pj = op_dynamic_pj[i] + m.static_power_w * o.latency_ps;
        m.macs += o.macs;
        m.compute_cycles += o.compute_cycles;
        m.stall_cycles += o.stall_cycles;
        o.bound = o.compute_cycles > 0 ? "compute" : "none";
        uint64_t most = o.compute_cycles;
        for (const auto& [cause, c] : o.stall_cycles_by_cause)
            if (c > most) {
                most = c;
                o.bound = cause;
            }
        const double cycles = o.latency_ps * m.clock_hz * 1e-12;
        o.utilization = (cycles > 0 && m.peak_macs_per_cycle > 0) ? o.macs / (cycles * m.peak_macs_per_cycle) : 0;
    }
    for (size_t i = 0; i < comps.size(); ++i)
        if (comps[i].peak_ops_per_cycle > 0 && m.latency_cycles > 0)
            m.components[i].utilization = static_cast<double>(m.components[i].ops) /
                                          (static_cast<double>(m.latency_cycles) * comps[i].peak_ops_per_cycle);
    m.utilization = (m.latency_cycles > 0 && m.peak_macs_per_cycle > 0)
                        ? static_cast<double>(m.macs) / (static_cast<double>(m.latency_cycles) * m.peak_macs_per_cycle)
                        : 0;
    return m;
}

}  // namespace archsim
