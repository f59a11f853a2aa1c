#pragma once
// Runs one SystemC simulation of an operator graph on a machine, writing an HDF5 trace.
#include <cstdint>
#include <map>
#include <string>

#include "arch/common/machine.h"
#include "traces/event_sums.h"
#include "traces/reducer.h"

namespace archsim {

class OpGraph;
class ParamSet;
struct MachineKind;

/// What one simulation produced.
struct SimulationResult {
    std::string trace_path;
    uint64_t events = 0;
    double simulated_ps = 0;
    double wall_s = 0;
    std::string stopped_by;   ///< "" for a complete run, else the limit that ended it (trace incomplete)
    Metrics metrics;          ///< the run reduced in memory (reduce_sums of the writer's tables); empty if stopped
    uint64_t kernels_replayed = 0, kernels_recorded = 0;  ///< kernel memoization
    uint64_t units_replayed = 0;  ///< loop units inside kernels replayed (Machine::units_replayed())
};

/// Guards a run: 0 = no limit. Checked before each operator starts, so the operator running when
/// a limit is crossed finishes first.
struct SimulationLimits {
    uint64_t max_events = 0;        ///< trace events
    double max_sim_time_ps = 0;     ///< simulated time, ps
};

/// How a run is simulated, beyond the machine: what the trace keeps, and whether kernels that
/// repeat are replayed from a recorded one (kernel memoization, arch/common/kernel_memo.h).
struct SimulationOptions {
    TraceDetail detail = TraceDetail::Full;
    bool memoize = true;
    /// Progress on stderr once a run has taken 2 s (sim/base/progress.h): operators done of
    /// the total and the one being simulated; false (--quiet) prints none.
    bool progress = true;
    /// How kernels are mapped (arch/common/machine.h): each model's mapping search where its config
    /// leaves the mapping open, everywhere, or nowhere; recorded as the trace attribute `mapper`.
    Mapper mapper = Mapper::Auto;
};

/// Elaborates `kind` with `params`, walks `graph` in topological order dispatching each operator
/// to the machine, and writes the trace to `trace_path` at `detail` (every event, or per-operator
/// sums; atomically: a temporary name renamed when complete), and reduces the run to its metrics
/// from the sums in memory. `attrs` are extra string attributes for the trace root (model path, resolved
/// config). SystemC's kernel cannot be reset: call this at most once per process.
/// Throws UserError if the trace cannot be written or the process already simulated.
/// With `limits`, a run that crosses one stops before its next operator: the trace is written
/// with complete = 0 (readers refuse it) and `stopped_by` says which limit and where.
SimulationResult simulate(const OpGraph& graph, const MachineKind& kind, const ParamSet& params,
                          const std::string& trace_path, const std::map<std::string, std::string>& attrs,
                          const SimulationLimits& limits = {}, const SimulationOptions& options = {});

}  // namespace archsim
