#include "traces/reducer.h"

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"
#include "traces/trace_reader.h"

namespace archsim {

/// The power figures of `m` (its energies and operator spans already reduced).
static void reduce_power(const TraceTables& t, Metrics& m) {
    if (m.latency_ps <= 0) return;
    m.power_avg_w = m.energy_pj / m.latency_ps;  // pJ per ps = W
    for (const auto& [part, pj] : m.energy_pj_by_part) m.power_w_by_part[part] = pj / m.latency_ps;
    m.power_limit_w = t.power_limit_w;
    m.power_clock_fixed = t.power_clock_fixed;
    m.power_timeline = t.power_timeline;
    m.power_peak_w = t.power_peak_w > 0 ? t.power_peak_w : m.power_avg_w;
    m.power_unthrottled_w = t.power_unthrottled_w > 0 ? t.power_unthrottled_w : m.power_avg_w;
    const double nominal_mhz = t.clock_hz * 1e-6;
    double weighted = 0, time = 0, below = 0;
    m.clock_min_mhz = nominal_mhz;
    for (size_t i = 0; i < m.ops.size(); ++i) {
        const double mhz = i < t.op_clock_mhz.size() ? t.op_clock_mhz[i] : nominal_mhz;
        const double lat = m.ops[i].latency_ps;
        m.ops[i].clock_mhz = mhz;
        if (lat <= 0) continue;
        weighted += mhz * lat, time += lat;
        m.clock_min_mhz = std::min(m.clock_min_mhz, mhz);
        if (mhz < nominal_mhz * (1 - 1e-9)) below += lat;
    }
    m.clock_mean_mhz = time > 0 ? weighted / time : nominal_mhz;
    m.throttled_fraction = time > 0 ? below / time : 0;
}

Metrics reduce_sums(const TraceTables& t, const std::string& where) {
    Metrics m;
    m.model = t.model;
    m.machine = t.machine;
    m.precision = t.precision;
    m.runtime = t.runtime.empty() ? "none" : t.runtime;  // traces of schema 2 and older ran the graph as imported
    m.precision_from = t.precision_from, m.runtime_from = t.runtime_from;
    m.mapper = t.mapper.empty() ? "fixed" : t.mapper;  // traces before the search ran the fixed schedules
    m.approximations = t.approximations.empty() ? "none" : t.approximations;  // traces before it: none used
    m.not_modeled = t.not_modeled.empty() ? "none" : t.not_modeled;
    m.clock_hz = t.clock_hz;
    m.static_power_w = t.static_power_w;
    m.events = t.events;
    const auto& comps = t.components;
    for (const auto& c : comps)
        if (c.level == "compute") m.peak_macs_per_cycle += c.peak_ops_per_cycle;
    m.components.resize(comps.size());
    for (size_t i = 0; i < comps.size(); ++i) m.components[i].name = comps[i].name, m.components[i].level = comps[i].level;
    m.ops.resize(t.ops.size());
    for (size_t i = 0; i < m.ops.size(); ++i) {
        m.ops[i].name = t.ops[i].name;
        m.ops[i].op_type = t.ops[i].op_type;
        m.ops[i].op_class = t.ops[i].op_class;
        m.ops[i].modeled = t.ops[i].op_class != "unsupported";
        if (!m.ops[i].modeled) m.unmodeled_ops.push_back(m.ops[i].name);
    }
    static const std::string unknown = "unknown";
    auto cause_name = [&](uint8_t id) -> const std::string& { return id < t.stall_causes.size() ? t.stall_causes[id].name : unknown; };
    std::vector<double> op_dynamic_pj(m.ops.size(), 0.0);
    // per operator: its fold cycles, and the cycles its MACs would take at the arrays' peak rate
    std::vector<double> fold_cycles(m.ops.size(), 0.0), full_use_cycles(m.ops.size(), 0.0);
    uint64_t end_ps = 0;

    for (const EventSum& r : t.sums) {
        if (r.component >= comps.size() || r.op >= m.ops.size() || r.kind > static_cast<uint8_t>(EventKind::Transfer))
            throw UserError(where, "corrupt trace: an event names component " + std::to_string(r.component) + ", operator " +
                                       std::to_string(r.op) + ", kind " + std::to_string(r.kind) + " (the tables hold " +
                                       std::to_string(comps.size()) + " components and " + std::to_string(m.ops.size()) +
                                       " operators)");
        const ComponentInfo& c = comps[r.component];
        OpMetrics& o = m.ops[r.op];
        ComponentMetrics& cm = m.components[r.component];
        switch (static_cast<EventKind>(r.kind)) {
            case EventKind::Fold:
            case EventKind::Vector:
                cm.ops += r.ops;
                cm.busy_ps += static_cast<double>(r.dur_sum_ps);
                break;
            case EventKind::Transfer:
                cm.busy_ps += static_cast<double>(r.dur_sum_ps);
                [[fallthrough]];
            case EventKind::DramRead:
            case EventKind::DramWrite:
            case EventKind::SramRead:
            case EventKind::SramWrite:
                cm.bytes += r.bytes;
                break;
            default:
                break;
        }
        end_ps = std::max<uint64_t>(end_ps, r.end_ps);
        const double scale = r.op < t.op_energy_scale.size() && !off_chip(c) ? t.op_energy_scale[r.op] : 1.0;
        const double pj = event_sum_energy_pj(r, c) * scale;
        switch (static_cast<EventKind>(r.kind)) {
            case EventKind::Op:
                o.start_ps = static_cast<double>(r.first_ps);
                o.latency_ps = static_cast<double>(r.end_ps - r.first_ps);
                break;
            case EventKind::Fold:
                o.macs += static_cast<int64_t>(r.ops);
                fold_cycles[r.op] += static_cast<double>(r.cycles);
                full_use_cycles[r.op] += c.peak_ops_per_cycle > 0 ? static_cast<double>(r.ops) / c.peak_ops_per_cycle : static_cast<double>(r.cycles);
                [[fallthrough]];
            case EventKind::Vector:
                o.compute_cycles += r.cycles;
                break;
            case EventKind::DramRead:
            case EventKind::SramRead:
            case EventKind::Transfer:  // a mover: bytes priced per byte, a network per byte-hop
                o.traffic_bytes[c.level] += r.bytes;
                m.read_bytes[c.level] += r.bytes;
                break;
            case EventKind::DramWrite:
            case EventKind::SramWrite:
                o.traffic_bytes[c.level] += r.bytes;
                m.write_bytes[c.level] += r.bytes;
                break;
            case EventKind::Stall:
                o.stall_cycles += r.cycles;
                o.stall_cycles_by_cause[cause_name(r.detail)] += r.cycles;
                m.stall_cycles_by_cause[cause_name(r.detail)] += r.cycles;
                break;
        }
        if (pj != 0) {
            m.energy_pj_by_part[c.level] += pj;
            op_dynamic_pj[r.op] += pj;
        }
    }

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
        o.bound = bound_of(o, fold_cycles[i], full_use_cycles[i]);
        const double cycles = o.latency_ps * m.clock_hz * 1e-12;
        o.utilization = (cycles > 0 && m.peak_macs_per_cycle > 0) ? o.macs / (cycles * m.peak_macs_per_cycle) : 0;
    }
    for (const OpMapping& mp : t.op_mappings) {
        if (mp.op >= m.ops.size()) throw UserError(where, "corrupt trace: a mapping of operator " + std::to_string(mp.op) + " of " + std::to_string(m.ops.size()));
        OpMetrics& o = m.ops[mp.op];
        o.mapping = mp.choice, o.mapspace = mp.mapspace, o.mappings_evaluated = mp.evaluated;
    }
    reduce_power(t, m);
    for (size_t i = 0; i < comps.size(); ++i)
        if (comps[i].peak_ops_per_cycle > 0 && m.latency_cycles > 0)
            m.components[i].utilization = static_cast<double>(m.components[i].ops) /
                                          (static_cast<double>(m.latency_cycles) * comps[i].peak_ops_per_cycle);
    m.utilization = (m.latency_cycles > 0 && m.peak_macs_per_cycle > 0)
                        ? static_cast<double>(m.macs) / (static_cast<double>(m.latency_cycles) * m.peak_macs_per_cycle)
                        : 0;
    return m;
}

std::string bound_of(const OpMetrics& o, double fold_cycles, double full_use_cycles) {
    const double underused = std::max(0.0, fold_cycles - full_use_cycles);
    const double computing = static_cast<double>(o.compute_cycles) - underused;
    std::string bound = o.compute_cycles > 0 ? "compute" : "none";
    double most = computing;
    if (underused > most) most = underused, bound = "array_underused";
    for (const auto& [cause, c] : o.stall_cycles_by_cause)
        if (static_cast<double>(c) > most) most = static_cast<double>(c), bound = cause;
    return bound;
}

Metrics reduce_trace(const TraceReader& tr) { return reduce_sums(tr.tables(), tr.path()); }

}  // namespace archsim
