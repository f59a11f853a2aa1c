#include "tools/archsim/trace_cmds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>

#include "sim/base/error.h"
#include "traces/metrics_report.h"
#include "sim/base/units.h"
#include "sim/base/toml_load.h"
#include "traces/display_units.h"
#include "traces/perfetto_export.h"
#include "traces/reducer.h"
#include "traces/trace_reader.h"

namespace archsim::cli {

namespace {

double us(double ps) { return ps * 1e-6; }

/// The machine's own one-line description of stall cause `name` (from the trace's /stall_causes).
std::string cause_doc(const TraceReader& tr, const std::string& name) {
    for (const auto& c : tr.stall_causes())
        if (c.name == name) return c.doc;
    return name;
}

double op_dram_bytes(const OpMetrics& o) {
    auto it = o.traffic_bytes.find("dram");
    return it == o.traffic_bytes.end() ? 0.0 : double(it->second);
}

/// Which run a trace holds, for a header: "MODEL on NAME (KIND, CONFIG FILE)", NAME the config's
/// `name` key, so two traces of one kind on different machines read apart.
std::string run_label(const TraceReader& tr, const Metrics& m) {
    std::string name;
    try {  // the resolved config the trace keeps; a trace without one falls back to the kind
        name = detail::parse_toml_string(tr.attr_string("config"), "config")["name"].value_or(std::string());
    } catch (const UserError&) {
    }
    const std::string file = std::filesystem::path(tr.attr_string("config_path")).filename().string();
    return fmt::format("{} on {} ({}{}{}, {})", m.model, name.empty() ? m.machine : name, m.machine, file.empty() ? "" : ", ", file,
                       m.precision);
}

}  // namespace

std::string resolve_trace_path(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) return path;
    const std::string inside = (std::filesystem::path(path) / "trace.h5").string();
    if (std::filesystem::is_regular_file(inside, ec)) return inside;
    throw UserError(path, "is a folder with no trace.h5 in it (give a trace file, or a run's --out folder)");
}

int cmd_trace_summary(const std::string& path) {
    TraceReader tr(path);
    const Metrics m = reduce_trace(tr);
    const double lat = m.latency_ps;
    std::string out = fmt::format("trace    {}\nmodel    {} ({})\nmachine  {}, {} at {:.0f} MHz, archsim {}\nevents   {}\n\n", path, m.model,
                                  tr.attr_string("model_path"), m.machine, m.precision, m.clock_hz * 1e-6,
                                  tr.attr_string("archsim_version"), grouped(static_cast<int64_t>(m.events)));
    if (m.approximations != "none") out += fmt::format("approximate  {} (bounded, not exact)\n\n", m.approximations);
    if (m.not_modeled != "none") out += fmt::format("not modeled  {}\n\n", m.not_modeled);
    // the unit policy (docs/units.md): engineering units with three significant digits, counts grouped
    out += fmt::format("latency      {} ({} cycles)\nenergy       {}\nMACs         {} ({})\nutilization  {} of {} MACs/cycle\n",
                       with_unit(lat * 1e-12, "s"), grouped(static_cast<int64_t>(m.latency_cycles)), with_unit(m.energy_pj * 1e-12, "J"),
                       grouped(m.macs), with_unit(double(m.macs), "MAC"), percent(m.utilization, 2),
                       grouped(std::llround(m.peak_macs_per_cycle)));
    out += fmt::format("power        {} average ({} static), {} peak over one controller window{}\n", with_unit(m.power_avg_w, "W"),
                       with_unit(m.static_power_w, "W"), with_unit(m.power_peak_w, "W"),
                       m.power_limit_w > 0 ? "; limit " + with_unit(m.power_limit_w, "W") : std::string());
    {
        std::string parts;
        for (const auto& [part, w] : m.power_w_by_part) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", part, with_unit(w, "W"));
        out += fmt::format("power parts  {}\n", parts);
    }
    if (m.power_limit_w > 0 && m.power_clock_fixed)
        out += fmt::format("clock        {:.0f} MHz throughout: this model cannot lower it, the limit is checked, not enforced\n",
                           m.clock_hz * 1e-6);
    else if (m.power_limit_w > 0)
        out += fmt::format("clock        {:.0f} MHz mean, {:.0f} MHz lowest, {} of the time below {:.0f} MHz; at {:.0f} MHz throughout "
                           "it would draw about {}\n",
                           m.clock_mean_mhz, m.clock_min_mhz, percent(m.throttled_fraction), m.clock_hz * 1e-6, m.clock_hz * 1e-6,
                           with_unit(m.power_unthrottled_w, "W"));
    if (m.power_limit_w > 0 && m.power_avg_w > m.power_limit_w) out += over_limit_line(m) + "\n";
    // the ten largest operators by `value` (in base unit `unit`: "s" or "J"), the column in the
    // unit the policy picks for it (column_in_unit, as every table's), five significant digits
    auto top = [&](const char* what, const char* unit, auto value, double total) {
        std::vector<const OpMetrics*> v;
        for (const auto& o : m.ops) v.push_back(&o);
        std::stable_sort(v.begin(), v.end(), [&](const OpMetrics* a, const OpMetrics* b) { return value(*a) > value(*b); });
        v.resize(std::min<size_t>(10, v.size()));
        std::vector<double> values;
        for (const OpMetrics* o : v) values.push_back(value(*o));
        const TableColumn col = column_in_unit(TableColumn{std::string(what) + "_" + unit, 10, 1, -2, ""}, unit, values);
        std::string s = fmt::format("\ntop {} operators by {}\n  {:<44} {:<18} {} {:>6}  {}\n", v.size(), what, "operator", "op_type",
                                    table_cell(col.header, col), "share", "bound");
        for (const OpMetrics* o : v)
            s += fmt::format("  {:<44} {:<18} {} {:>6}  {}\n", cut_middle(o->name, 44), cut_middle(o->op_type, 18), table_cell(value(*o), col),
                             percent(total > 0 ? value(*o) / total : 0.0), o->bound);
        return s;
    };
    out += top("time", "s", [](const OpMetrics& o) { return o.latency_ps * 1e-12; }, lat * 1e-12);
    out += top("energy", "J", [](const OpMetrics& o) { return o.energy_pj * 1e-12; }, m.energy_pj * 1e-12);
    const std::string job = tr.attr_string("job_summary");  // a parallel job's trace (sim/cluster): its split
    const bool is_job = !job.empty();
    out += is_job ? "\nstall time by cause (summed over one device per pipeline stage)\n" : "\nstall time by cause\n";
    if (m.stall_cycles_by_cause.empty()) out += "  none\n";
    for (const auto& [cause, c] : m.stall_cycles_by_cause)
        out += fmt::format("  {:<28} {:>14} cycles {:>10}  {:>6} of the run ({})\n", cause, grouped(static_cast<int64_t>(c)),
                           with_unit(c / m.clock_hz, "s"), percent(m.latency_cycles ? double(c) / m.latency_cycles : 0.0), cause_doc(tr, cause));
    out += "\ntraffic by memory level\n";
    for (const auto& [level, b] : m.traffic_bytes)
        out += fmt::format("  {:<28} {:>20} bytes {:>10}  (read {}, write {})\n", level, grouped(static_cast<int64_t>(b)), with_unit(double(b), "B"),
                           with_unit(m.read_bytes.count(level) ? double(m.read_bytes.at(level)) : 0.0, "B"),
                           with_unit(m.write_bytes.count(level) ? double(m.write_bytes.at(level)) : 0.0, "B"));
    out += "\nutilization per compute component\n";
    std::vector<const ComponentMetrics*> compute;
    for (const auto& c : m.components)
        if (c.level == "compute" || c.level == "vector") compute.push_back(&c);
    if (compute.size() <= 16) {
        for (const auto* c : compute) {
            // busy_ps adds up the component's spans, which overlap where its tiles or lanes work
            // at once: say so, and how many were at work on average, instead of a busy time
            // longer than the run
            const double overlap = lat > 0 ? c->busy_ps / lat : 0.0;
            const std::string busy = overlap > 1.0 + 1e-9
                                         ? fmt::format("its spans add up to {} over the {} run: {:.1f} at work at once on average",
                                                       with_unit(c->busy_ps * 1e-12, "s"), with_unit(lat * 1e-12, "s"), overlap)
                                         : fmt::format("busy {} of the {} run", with_unit(c->busy_ps * 1e-12, "s"), with_unit(lat * 1e-12, "s"));
            out += fmt::format("  {:<28} {:>7}  ({} ops; {})\n", c->name, percent(c->utilization, 2), grouped(static_cast<int64_t>(c->ops)), busy);
        }
    } else {  // many SMs or tiles: the spread
        double lo = 1e300, hi = 0, sum = 0;
        size_t n = 0;
        for (const auto* c : compute)
            if (c->level == "compute") lo = std::min(lo, c->utilization), hi = std::max(hi, c->utilization), sum += c->utilization, ++n;
        out += fmt::format("  {} compute components: min {}, mean {}, max {}\n", n, percent(lo, 2), percent(n ? sum / n : 0.0, 2), percent(hi, 2));
        for (const auto* c : compute)
            if (c->level != "compute")
                out += fmt::format("  {:<28} {:>7}  ({} ops)\n", c->name, percent(c->utilization, 2), grouped(static_cast<int64_t>(c->ops)));
    }
    if (is_job) out += "\njob: where the step went (compute, exposed communication, bubble) and the overlap\n" + job;
    out += "\nresolved config\n" + tr.attr_string("config");
    std::fputs(out.c_str(), stdout);
    return 0;
}

int cmd_trace_ops(const std::string& path, const std::string& sort, const std::vector<std::string>& where, bool by_operator) {
    static const std::vector<std::string> sorts = {"latency", "energy", "macs", "stall"};
    if (std::find(sorts.begin(), sorts.end(), sort) == sorts.end())
        throw UserError("--sort " + sort, "must be latency, energy, macs or stall");
    std::vector<std::pair<std::string, std::string>> filters;
    for (const auto& w : where) {
        const size_t eq = w.find('=');
        const std::string key = eq == std::string::npos ? "" : w.substr(0, eq);
        if (key != "name" && key != "op_type" && key != "op_class" && key != "bound")
            throw UserError("--where " + w, "expected name=, op_type=, op_class= or bound= followed by a value");
        filters.emplace_back(key, w.substr(eq + 1));
    }
    TraceReader tr(path);
    const Metrics m = reduce_trace(tr);
    std::vector<const OpMetrics*> rows;
    for (const auto& o : m.ops) {
        bool ok = true;
        for (const auto& [k, v] : filters) {
            const std::string& field = k == "name" ? o.name : k == "op_type" ? o.op_type : k == "op_class" ? o.op_class : o.bound;
            ok = ok && field == v;
        }
        if (ok) rows.push_back(&o);
    }
    auto key = [&](const OpMetrics& o) -> double {
        if (sort == "energy") return o.energy_pj;
        if (sort == "macs") return double(o.macs);
        if (sort == "stall") return double(o.stall_cycles);
        return o.latency_ps;
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const OpMetrics* a, const OpMetrics* b) { return key(*a) > key(*b); });
    if (by_operator) {  // each source operator against the kernel it ran in: the time is the kernel's, shared by its operators
        std::string out = fmt::format("{:<44} {:<40} {:<22} {:>11} {:>11} {:>8}\n", "operator", "kernel", "pattern", "start_us",
                                      "kernel_us", "sharing");
        size_t n = 0;
        for (const OpMetrics* o : rows) {
            const std::string& members = tr.ops()[static_cast<size_t>(o - m.ops.data())].members;
            std::vector<std::string> names;
            for (size_t at = 0; at < members.size();) {
                size_t nl = members.find('\n', at);
                if (nl == std::string::npos) nl = members.size();
                if (nl > at) names.push_back(members.substr(at, nl - at));
                at = nl + 1;
            }
            if (names.empty()) names.push_back(o->name);  // an operator run as its own kernel (or a conversion the runtime added)
            for (const auto& name : names)
                out += fmt::format("{:<44} {:<40} {:<22} {:>11.3f} {:>11.3f} {:>8}\n", name.substr(0, 44), o->name.substr(0, 40),
                                   o->op_type.substr(0, 22), us(o->start_ps), us(o->latency_ps), names.size());
            n += names.size();
        }
        out += fmt::format("{} operators in {} of {} kernels\n", n, rows.size(), m.ops.size());
        std::fputs(out.c_str(), stdout);
        return 0;
    }
    const double peak_macs_s = m.peak_macs_per_cycle * m.clock_hz;
    std::string out = fmt::format("{:<40} {:<16} {:>11} {:>11} {:>8} {:>7} {:>12} {:>11} {:>7} {:>9}  {}\n", "operator", "op_type", "start_us",
                                  "dur_us", "compute%", "stall%", "MACs", "TMAC/s", "of_peak", "FLOP/B", "bound");
    for (const OpMetrics* o : rows) {
        const double cycles = o->latency_ps * m.clock_hz * 1e-12;
        const double comp = cycles > 0 ? std::min(1.0, o->compute_cycles / cycles) : 0;
        const double stall = cycles > 0 ? std::min(1.0, o->stall_cycles / cycles) : 0;
        const double achieved = o->latency_ps > 0 ? o->macs / (o->latency_ps * 1e-12) : 0;
        const double dram = op_dram_bytes(*o);
        out += fmt::format("{:<40} {:<16} {:>11.3f} {:>11.3f} {:>7.1f}% {:>6.1f}% {:>12} {:>11.4f} {:>6.1f}% {:>9}  {}\n",
                           o->name.substr(0, 40), o->op_type.substr(0, 16), us(o->start_ps), us(o->latency_ps), 100 * comp, 100 * stall,
                           o->macs, achieved * 1e-12, peak_macs_s > 0 ? 100 * achieved / peak_macs_s : 0.0,
                           dram > 0 ? fmt::format("{:.2f}", 2.0 * o->macs / dram) : std::string("-"), o->bound);
    }
    out += fmt::format("{} of {} operators\n", rows.size(), m.ops.size());
    // what the shares are shares of (issue 39, item 7): both of the operator's span, and they overlap
    out += "compute% and stall%: the operator's compute cycles and its stall cycles, each over its span (dur_us);\n"
           "  a unit can stall while another computes, so the two can add to more than 100%.\n"
           "bound: what its time went to most: compute (its MACs at the arrays' peak rate, and vector work),\n"
           "  array_underused (the rest of its fold cycles: fill, drain, weight preload, PEs a small fold leaves idle)\n"
           "  or a stall cause; of_peak: its MACs over the peak for its span.\n";
    std::fputs(out.c_str(), stdout);
    if (rows.empty() && !where.empty() && !m.ops.empty()) {
        std::string w;
        for (const auto& x : where) w += (w.empty() ? "" : " ") + std::string("--where ") + x;
        std::fprintf(stderr, "archsim: warning: %s: %s matches none of the %zu operators\n", path.c_str(), w.c_str(), m.ops.size());
        return 1;
    }
    return 0;
}

int cmd_trace_timeline(const std::string& path, const std::string& from, const std::string& to, const std::string& component,
                       uint64_t limit) {
    const double t0 = from.empty() ? 0 : parse_time_ps(from, "--from");
    const double t1 = to.empty() ? INFINITY : parse_time_ps(to, "--to");
    if (t1 <= t0) throw UserError("--to " + to, "must be later than --from");
    TraceReader tr(path);
    const auto& comps = tr.components();
    const auto& ops = tr.ops();
    std::vector<bool> want(comps.size(), component.empty());
    bool any = component.empty();
    for (size_t i = 0; i < comps.size(); ++i)
        if (!component.empty() && comps[i].name.rfind(component, 0) == 0) want[i] = true, any = true;
    if (!any) {
        std::string names;
        for (size_t i = 0; i < comps.size() && i < 12; ++i) names += (i ? ", " : "") + comps[i].name;
        throw UserError("--component " + component, "no component's name starts with it (components: " + names +
                                                        (comps.size() > 12 ? ", ..." : "") + ")");
    }
    uint64_t shown = 0, more = 0;
    double last_ps = 0;  // the end of the trace's last event
    std::string out = fmt::format("{:>14} {:>12} {:<12} {:<18} {:<36} {:>12} {:>12} {:>10}  {}\n", "start_us", "dur_us", "kind", "component",
                                  "operator", "bytes", "ops", "cycles", "cause");
    tr.visit_events([&](const TraceEvent& e, const ComponentInfo& comp) {
        if (!want[e.component]) return;
        const double s = double(e.t_ps), f = double(e.t_ps + e.dur_ps);
        last_ps = std::max(last_ps, f);
        if (!(f > t0 || (e.dur_ps == 0 && s >= t0)) || s >= t1) return;
        if (shown >= limit) {
            ++more;
            return;
        }
        ++shown;
        const EventKind k = static_cast<EventKind>(e.kind);
        out += fmt::format("{:>14.4f} {:>12.4f} {:<12} {:<18} {:<36} {:>12} {:>12} {:>10}  {}\n", us(s), us(double(e.dur_ps)),
                           to_string(k), comp.name.substr(0, 18), ops[e.op].name.substr(0, 36), e.bytes, e.ops, e.cycles,
                           k == EventKind::Stall ? tr.stall_cause_name(e.detail) : std::string());
    });
    out += fmt::format("{} events shown (in file order){}\n", shown,
                       more ? fmt::format("; {} more in the window (raise --limit or narrow --from/--to/--component)", more) : "");
    std::fputs(out.c_str(), stdout);
    if (shown == 0) {
        std::fprintf(stderr, "archsim: warning: %s: no event in the window %s to %s%s; the trace's events end at %.4f us\n", path.c_str(),
                     from.empty() ? "0us" : from.c_str(), to.empty() ? "the end" : to.c_str(),
                     component.empty() ? "" : (" on components " + component + "*").c_str(), us(last_ps));
        return 1;
    }
    return 0;
}

int cmd_trace_export(const std::string& path, const std::string& out, uint64_t max_events) {
    TraceReader tr(path);
    const PerfettoStats st = export_perfetto(tr, out, max_events);
    std::string dropped;
    uint64_t total = 0;
    for (const auto& [k, v] : st.dropped_by_kind) dropped += fmt::format(" {} {}", k, v), total += v;
    std::fprintf(stderr, "archsim trace export: %llu events -> %llu slices on %llu tracks, %llu counter samples; wrote %s%s\n",
                 static_cast<unsigned long long>(st.events_in), static_cast<unsigned long long>(st.slices_out),
                 static_cast<unsigned long long>(st.tracks), static_cast<unsigned long long>(st.counters_out), out.c_str(),
                 total ? fmt::format(" (--max-events dropped {} events:{}; counters include them)", total, dropped).c_str() : "");
    return 0;
}

int cmd_trace_diff(const std::string& a_path, const std::string& b_path, uint64_t top) {
    TraceReader ta(a_path), tb(b_path);
    const Metrics a = reduce_trace(ta), b = reduce_trace(tb);
    std::map<std::string, const OpMetrics*> in_b;
    for (const auto& o : b.ops) in_b[o.name] = &o;
    struct Row {
        const OpMetrics* a;
        const OpMetrics* b;
        double delta;
    };
    std::vector<Row> rows;
    std::vector<std::string> only_a, only_b;
    for (const auto& o : a.ops) {
        auto it = in_b.find(o.name);
        if (it == in_b.end()) { only_a.push_back(o.name); continue; }
        const OpMetrics& p = *it->second;
        const bool same = o.latency_ps == p.latency_ps && o.bound == p.bound && o.stall_cycles_by_cause == p.stall_cycles_by_cause &&
                          o.energy_pj == p.energy_pj;
        if (!same) rows.push_back({&o, &p, p.latency_ps - o.latency_ps});
        in_b.erase(it);
    }
    for (const auto& [n, o] : in_b) only_b.push_back(n);
    std::string out = fmt::format("A {}: {}\nB {}: {}\n", a_path, run_label(ta, a), b_path, run_label(tb, b));
    if (a.model != b.model)
        std::fprintf(stderr, "archsim: warning: A runs %s and B runs %s: different models, so only operators of the same name "
                             "are compared and the rest are listed as only in A or B\n", a.model.c_str(), b.model.c_str());
    if (rows.empty() && only_a.empty() && only_b.empty() && a.latency_ps == b.latency_ps && a.energy_pj == b.energy_pj) {
        out += "no differences\n";
        std::fputs(out.c_str(), stdout);
        return 0;
    }
    out += fmt::format("latency {:.6f} -> {:.6f} ms ({:+.2f}%), energy {:.6f} -> {:.6f} mJ ({:+.2f}%)\n", a.latency_ps * 1e-9, b.latency_ps * 1e-9,
                       a.latency_ps > 0 ? 100 * (b.latency_ps - a.latency_ps) / a.latency_ps : 0.0, a.energy_pj * 1e-9, b.energy_pj * 1e-9,
                       a.energy_pj > 0 ? 100 * (b.energy_pj - a.energy_pj) / a.energy_pj : 0.0);
    std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return std::fabs(x.delta) > std::fabs(y.delta); });
    out += fmt::format("\n{} operators changed; the {} that moved the most time:\n", rows.size(), std::min<uint64_t>(top, rows.size()));
    out += fmt::format("{:<40} {:>12} {:>12} {:>12} {:>8}  {}\n", "operator", "A_us", "B_us", "change_us", "change", "why");
    for (size_t i = 0; i < std::min<size_t>(top, rows.size()); ++i) {
        const Row& r = rows[i];
        std::string why;
        if (r.a->bound != r.b->bound) why = "bound " + r.a->bound + " -> " + r.b->bound;
        std::set<std::string> causes;
        for (const auto& [c, v] : r.a->stall_cycles_by_cause) causes.insert(c);
        for (const auto& [c, v] : r.b->stall_cycles_by_cause) causes.insert(c);
        for (const auto& c : causes) {
            const double ca = r.a->stall_cycles_by_cause.count(c) ? r.a->stall_cycles_by_cause.at(c) / a.clock_hz * 1e6 : 0;
            const double cb = r.b->stall_cycles_by_cause.count(c) ? r.b->stall_cycles_by_cause.at(c) / b.clock_hz * 1e6 : 0;
            if (std::fabs(cb - ca) > 1e-9 * std::max(1.0, std::fabs(ca)))
                why += fmt::format("{}{} stall {:+.3f} us", why.empty() ? "" : "; ", c, cb - ca);
        }
        const double ca = r.a->compute_cycles / a.clock_hz * 1e6, cb = r.b->compute_cycles / b.clock_hz * 1e6;
        if (std::fabs(cb - ca) > 1e-9 * std::max(1.0, std::fabs(ca))) why += fmt::format("{}compute {:+.3f} us", why.empty() ? "" : "; ", cb - ca);
        out += fmt::format("{:<40} {:>12.3f} {:>12.3f} {:>+12.3f} {:>+7.1f}%  {}\n", r.a->name.substr(0, 40), us(r.a->latency_ps),
                           us(r.b->latency_ps), us(r.delta), r.a->latency_ps > 0 ? 100 * r.delta / r.a->latency_ps : 0.0,
                           why.empty() ? "energy only" : why);
    }
    if (!only_a.empty()) out += fmt::format("{} operators only in A (first: {})\n", only_a.size(), only_a[0]);
    if (!only_b.empty()) out += fmt::format("{} operators only in B (first: {})\n", only_b.size(), only_b[0]);
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace archsim::cli
