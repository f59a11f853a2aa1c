#include "sim/engine/simulate.h"

#include <systemc>

#include <chrono>
#include <cstdlib>

#include "sim/base/error.h"
#include "sim/base/progress.h"
#include "sim/base/version.h"
#include "arch/common/machine.h"
#include "traces/trace_writer.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {

/// The scheduler: one SC_THREAD that walks the operator graph in dependency order and
/// dispatches each operator to the machine, recording its span as an Op event.
class Scheduler : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(Scheduler);
    Scheduler(sc_core::sc_module_name name, const OpGraph& graph, Machine& machine, TraceWriter& trace, const SimulationLimits& limits,
              bool progress)
        : sc_core::sc_module(name), m_graph(graph), m_machine(machine), m_trace(trace), m_limits(limits), m_progress(progress) {
        SC_THREAD(run);
    }
    /// The limit that stopped the run ("" if none).
    const std::string& stopped_by() const { return m_stopped_by; }

private:
    void run() {
        Progress progress("operators", m_graph.ops().size(), m_progress);
        size_t done = 0;
        for (int32_t idx : m_graph.topo_order()) {
            progress.update(done++, m_graph.ops()[static_cast<size_t>(idx)].name);
            const auto t0 = sc_core::sc_time_stamp().value();
            const std::string& next = m_graph.ops()[static_cast<size_t>(idx)].name;
            if (m_limits.max_events && m_trace.event_count() >= m_limits.max_events) {
                m_stopped_by = "--max-events " + std::to_string(m_limits.max_events) + " reached (" +
                               std::to_string(m_trace.event_count()) + " events) before operator '" + next + "'";
                return;
            }
            if (m_limits.max_sim_time_ps > 0 && static_cast<double>(t0) >= m_limits.max_sim_time_ps) {
                m_stopped_by = "--max-sim-time reached (" + std::to_string(static_cast<double>(t0) * 1e-6) +
                               " us simulated) before operator '" + next + "'";
                return;
            }
            m_machine.execute(static_cast<uint32_t>(idx), m_graph.ops()[idx], m_graph);
            const auto t1 = sc_core::sc_time_stamp().value();
            TraceEvent e;
            e.t_ps = t0;
            e.dur_ps = t1 - t0;
            e.op = static_cast<uint32_t>(idx);
            e.component = m_machine.op_component();
            e.kind = static_cast<uint8_t>(EventKind::Op);
            m_trace.emit(e);
        }
    }
    const OpGraph& m_graph;
    Machine& m_machine;
    TraceWriter& m_trace;
    SimulationLimits m_limits;
    bool m_progress;
    std::string m_stopped_by;
};

std::string join_shapes(const OpGraph& g, const std::vector<int32_t>& ids) {
    std::string s;
    for (auto t : ids) {
        if (t < 0) continue;
        s += (s.empty() ? "" : ";") + shape_string(g.tensors()[t].shape);
    }
    return s;
}

bool g_simulated = false;  // guards the one-simulation-per-process rule of the SystemC kernel

}  // namespace

SimulationResult simulate(const OpGraph& graph, const MachineKind& kind, const ParamSet& params,
                          const std::string& trace_path, const std::map<std::string, std::string>& attrs,
                          const SimulationLimits& limits, const SimulationOptions& options) {
    if (g_simulated) throw UserError("simulate", "one SystemC simulation per process; run another process");
    g_simulated = true;
    setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    const auto wall0 = std::chrono::steady_clock::now();

    TraceWriter trace(trace_path, options.detail);
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    std::unique_ptr<Machine> machine;
    try {
        machine = kind.create(params, trace);
    } catch (const UserError& e) {  // a cross-key check of the machine's config: name the file
        const auto path = attrs.find("config_path");
        if (path == attrs.end()) throw;
        throw UserError(path->second, e.what());
    }
    machine->set_memoize(options.memoize);
    machine->set_mapper(options.mapper);
    trace.set_attr("mapper", std::string(to_string(options.mapper)));
    Scheduler scheduler("scheduler", graph, *machine, trace, limits, options.progress);

    std::vector<OpInfo> ops;
    ops.reserve(graph.ops().size());
    for (const auto& o : graph.ops()) {
        std::string members;
        for (const auto& m : o.members) members += (members.empty() ? "" : "\n") + m;
        ops.push_back({o.name, o.op_type, to_string(o.cost.cls), o.cost.macs, o.cost.flops, join_shapes(graph, o.inputs),
                       join_shapes(graph, o.outputs), members});
    }
    trace.set_ops(std::move(ops));
    trace.set_attr("archsim_version", std::string(version()));
    trace.set_attr("model", graph.model_name());
    trace.set_attr("model_path", graph.source());
    trace.set_attr("machine", kind.kind);
    trace.set_attr("runtime", graph.runtime().empty() ? std::string("none") : graph.runtime());
    trace.set_attr("precision", machine->precision());
    trace.set_attr("clock_hz", machine->clock_hz());
    trace.set_attr("static_power_w", machine->static_power_w());
    trace.set_attr("time_unit", std::string("ps"));
    for (const auto& [k, v] : attrs) trace.set_attr(k, v);

    sc_core::sc_start();
    if (scheduler.stopped_by().empty()) machine->end_of_run();
    if (const std::string a = machine->approximations(); !a.empty()) trace.set_attr("approximations", a);
    if (const std::string n = machine->not_modeled(); !n.empty()) trace.set_attr("not_modeled", n);
    SimulationResult r;
    r.simulated_ps = static_cast<double>(sc_core::sc_time_stamp().value());
    r.events = trace.event_count();
    r.stopped_by = scheduler.stopped_by();
    r.kernels_replayed = machine->memo_hits();
    r.kernels_recorded = machine->memo_misses();
    r.units_replayed = machine->units_replayed();
    if (!r.stopped_by.empty()) trace.set_attr("stopped_by", r.stopped_by);
    else r.metrics = reduce_sums(trace.tables(), trace_path);
    trace.finish(r.stopped_by.empty());
    r.trace_path = trace_path;
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return r;
}

}  // namespace archsim
