#include "traces/reducer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/common/error.h"
#include "traces/trace_reader.h"

namespace archsim {

Metrics reduce_trace(const TraceReader& tr) {
    Metrics m;
    m.model = tr.attr_string("model");
    m.machine = tr.attr_string("machine");
    m.precision = tr.attr_string("precision");
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
        double pj = 0;
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
                pj = static_cast<double>(e.ops) * c.pj_per_op;
                break;
            case EventKind::DramRead:
            case EventKind::SramRead:
                o.traffic_bytes[c.level] += e.bytes;
                m.read_bytes[c.level] += e.bytes;
                pj = static_cast<double>(e.bytes) * c.pj_per_byte_read;
                break;
            case EventKind::DramWrite:
            case EventKind::SramWrite:
                o.traffic_bytes[c.level] += e.bytes;
                m.write_bytes[c.level] += e.bytes;
                pj = static_cast<double>(e.bytes) * c.pj_per_byte_write;
                break;
            case EventKind::Transfer:  // a mover: bytes priced per byte, a network per byte-hop
                o.traffic_bytes[c.level] += e.bytes;
                m.read_bytes[c.level] += e.bytes;
                pj = static_cast<double>(e.bytes) * c.pj_per_byte_read + static_cast<double>(e.ops) * c.pj_per_op;
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

ReportFormat parse_report_format(const std::string& s) {
    if (s == "table") return ReportFormat::Table;
    if (s == "json") return ReportFormat::Json;
    if (s == "csv") return ReportFormat::Csv;
    throw UserError("--format " + s, "must be table, json or csv");
}

std::string metrics_to_json(const Metrics& m) {
    nlohmann::ordered_json j;
    j["model"] = m.model;
    j["machine"] = m.machine;
    j["precision"] = m.precision;
    j["clock_hz"] = m.clock_hz;
    auto& t = j["total"];
    t["latency_s"] = m.latency_ps * 1e-12;
    t["latency_cycles"] = m.latency_cycles;
    t["energy_j"] = m.energy_pj * 1e-12;
    for (const auto& [part, pj] : m.energy_pj_by_part) t["energy_breakdown_j"][part] = pj * 1e-12;
    t["macs"] = m.macs;
    t["flops"] = 2 * m.macs;
    t["compute_cycles"] = m.compute_cycles;
    t["stall_cycles"] = m.stall_cycles;
    t["stall_cycles_by_cause"] = nlohmann::json::object();
    for (const auto& [c, v] : m.stall_cycles_by_cause) t["stall_cycles_by_cause"][c] = v;
    t["traffic_bytes"] = nlohmann::json::object();
    for (const auto& [l, b] : m.traffic_bytes) t["traffic_bytes"][l] = b;
    for (const auto& [l, b] : m.read_bytes) t["read_bytes"][l] = b;
    for (const auto& [l, b] : m.write_bytes) t["write_bytes"][l] = b;
    t["utilization"] = m.utilization;
    t["peak_macs_per_cycle"] = m.peak_macs_per_cycle;
    t["static_power_w"] = m.static_power_w;
    t["events"] = m.events;
    t["unmodeled_ops"] = m.unmodeled_ops;
    auto& ops = j["ops"];
    ops = nlohmann::json::array();
    for (const auto& o : m.ops) {
        nlohmann::ordered_json x;
        x["name"] = o.name;
        x["op_type"] = o.op_type;
        x["macs"] = o.macs;
        x["start_s"] = o.start_ps * 1e-12;
        x["latency_s"] = o.latency_ps * 1e-12;
        x["compute_cycles"] = o.compute_cycles;
        x["stall_cycles"] = o.stall_cycles;
        x["energy_j"] = o.energy_pj * 1e-12;
        x["traffic_bytes"] = nlohmann::json::object();
        for (const auto& [l, b] : o.traffic_bytes) x["traffic_bytes"][l] = b;
        x["utilization"] = o.utilization;
        x["bound"] = o.bound;
        x["stall_cycles_by_cause"] = nlohmann::json::object();
        for (const auto& [c, v] : o.stall_cycles_by_cause) x["stall_cycles_by_cause"][c] = v;
        if (!o.modeled) x["modeled"] = false;
        ops.push_back(std::move(x));
    }
    return j.dump(2) + "\n";
}

static std::string human_bytes(double b) {
    const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (b >= 1024 && k < 4) { b /= 1024; ++k; }
    return fmt::format("{:.2f} {}", b, u[k]);
}

std::string render_metrics(const Metrics& m, ReportFormat f) {
    if (f == ReportFormat::Json) return metrics_to_json(m);
    std::vector<std::string> levels;
    for (const auto& [l, b] : m.traffic_bytes) levels.push_back(l);
    std::string out;
    if (f == ReportFormat::Csv) {
        out += "name,op_type,macs,start_s,latency_s,compute_cycles,stall_cycles,energy_j,utilization,bound";
        for (const auto& l : levels) out += ",bytes_" + l;
        out += "\n";
        for (const auto& o : m.ops) {
            out += fmt::format("{},{},{},{:.9e},{:.9e},{},{},{:.9e},{:.6f},{}", o.name, o.op_type, o.macs, o.start_ps * 1e-12,
                               o.latency_ps * 1e-12, o.compute_cycles, o.stall_cycles, o.energy_pj * 1e-12, o.utilization,
                               o.bound);
            for (const auto& l : levels) {
                auto it = o.traffic_bytes.find(l);
                out += fmt::format(",{}", it == o.traffic_bytes.end() ? 0 : it->second);
            }
            out += "\n";
        }
        out += fmt::format("TOTAL,,{},0,{:.9e},{},{},{:.9e},{:.6f},", m.macs, m.latency_ps * 1e-12, m.compute_cycles,
                           m.stall_cycles, m.energy_pj * 1e-12, m.utilization);
        for (const auto& l : levels) out += fmt::format(",{}", m.traffic_bytes.at(l));
        return out + "\n";
    }
    out += fmt::format("{:<40} {:<14} {:>14} {:>12} {:>12} {:>10} {:>12} {:>6}  {}\n", "operator", "op_type", "MACs",
                       "latency_us", "cycles", "stall_cyc", "energy_uJ", "util", "bound");
    for (const auto& o : m.ops) {
        std::string name = o.name.size() > 40 ? o.name.substr(0, 37) + "..." : o.name;
        out += fmt::format("{:<40} {:<14} {:>14} {:>12.3f} {:>12} {:>10} {:>12.3f} {:>5.1f}%  {}\n", name, o.op_type, o.macs,
                           o.latency_ps * 1e-6, o.compute_cycles, o.stall_cycles, o.energy_pj * 1e-6, 100 * o.utilization,
                           o.bound);
    }
    out += fmt::format("\nmodel {} on {} ({}), {} events\n", m.model, m.machine, m.precision, m.events);
    out += fmt::format("latency      {:.6f} ms = {} cycles at {:.0f} MHz (compute {} + stall {} cycles)\n",
                       m.latency_ps * 1e-9, m.latency_cycles, m.clock_hz * 1e-6, m.compute_cycles, m.stall_cycles);
    out += fmt::format("MACs         {} ({:.3f} GMAC), utilization {:.2f}% of {} MACs/cycle\n", m.macs, m.macs * 1e-9,
                       100 * m.utilization, m.peak_macs_per_cycle);
    out += fmt::format("energy       {:.6f} mJ:", m.energy_pj * 1e-9);
    for (const auto& [part, pj] : m.energy_pj_by_part) {
        if (part == "static" && m.static_power_w == 0) out += "  static not modeled (energy.static_w = 0)";
        else out += fmt::format("  {} {:.4f} mJ", part, pj * 1e-9);
    }
    out += "\ntraffic     ";
    for (const auto& [l, b] : m.traffic_bytes) out += fmt::format("  {} {}", l, human_bytes(static_cast<double>(b)));
    if (!m.unmodeled_ops.empty()) {
        out += fmt::format("\nNOT MODELED  {} operator(s) imported with --allow-unsupported cost zero:", m.unmodeled_ops.size());
        for (const auto& n : m.unmodeled_ops) out += " " + n;
    }
    if (!m.stall_cycles_by_cause.empty()) {
        out += "\nstalls      ";
        for (const auto& [c, v] : m.stall_cycles_by_cause) out += fmt::format("  {} {} cycles", c, v);
    }
    return out + "\n";
}

}  // namespace archsim
