#pragma once
// One run of a workload on one machine, as `archsim run` does it and any program can: load the
// workload (or its training step), choose precision and runtime by the one rule, lower, simulate,
// reduce, and write OUT/config.toml, OUT/trace.h5 and OUT/metrics.json. SystemC elaborates once
// per process: a program calls run_model() once, or runs `archsim run` in child processes
// (sim/api/process_pool.h) as sweeps and jobs do.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/simulate.h"
#include "workloads/onnx/importer.h"

namespace archsim {

struct TrainingStep;

/// What a run is given about its workload (the CLI's workload options).
struct WorkloadArgs {
    std::string model;               ///< .onnx, SCALE-Sim .csv, or FILE.toml#NAME[@PHASE]
    std::vector<std::string> dims;   ///< symbolic input dims bound: "NAME=VALUE"
    /// Sample inputs: a directory of input_<i>.pb (an ONNX test data set) or one .pb file
    /// (ImportOptions::input_files); "" for none.
    std::string inputs;
    int64_t batch = 0;  ///< 0 = as in the model
    bool allow_unsupported = false;
    /// Runtime profile to lower the graph with (configs/runtimes/<name>.toml or a .toml path):
    /// for `run` it overrides the machine's `runtime` key; for `graph` "" lists the operators.
    std::string runtime;
    /// A training step instead of an inference (workloads/training/training_step.h): forward,
    /// loss, backward and the optimizer's update.
    bool train = false;
    /// With train, each of these unset ("" / 0 / false) takes the workload entry's field of the
    /// same name (WorkloadRunFields), else its default (sgd, auto, none, 1, false).
    std::string optimizer;          ///< sgd, momentum, adam, adamw
    std::string loss;               ///< auto, cross_entropy, mse
    std::string recompute;          ///< activation recomputation none, selective, full
    int64_t microbatches = 0;       ///< gradient accumulation over this many microbatches of --batch
    bool setup = false;             ///< the one-time setup runs first (TrainingOptions::setup)
    /// Simulate a training step whose memory peak exceeds the machine's dram.capacity_gib
    /// (flagged training.memory.fits = false) instead of refusing it (exit 2).
    bool allow_over_capacity = false;
    /// Fields of a generated workload entry (FILE.toml#NAME) set to other values: "KEY=VALUE",
    /// KEY dotted into sub-tables ("sequence.prompt=512"), VALUE read as TOML (else a string).
    std::vector<std::string> workload_sets;
};

/// Where runtime profiles are looked up by name (configs/runtimes of the source tree).
std::string runtimes_dir();

/// The reason a plan or run that needs more memory than its device holds is refused: "does not
/// fit in memory: needs N per device (CATEGORY N, ...) against the device's N (KEY);
/// --allow-over-capacity simulates it anyway". A sweep files a point failing with it as
/// infeasible (kDoesNotFit).
std::string over_capacity_reason(double needed_bytes, const std::vector<std::pair<std::string, double>>& categories,
                                 double capacity_bytes, const std::string& capacity_key);
inline constexpr const char* kDoesNotFit = "does not fit in memory";

/// The import options `w` asks for. Throws UserError for a malformed dim binding or sample inputs
/// that cannot be found.
ImportOptions import_options(const WorkloadArgs& w);

/// The workload of `w`: its graph as imported, or with `w.train` (or an entry whose mode is
/// "train") its training step, whose composition goes to `step` and whose graph is moved into the
/// result; operators without a gradient rule are added to the result's warnings.
/// `mixed_precision`: the step keeps fp32 master weights (a run below fp32). Throws UserError.
ImportResult load_run_workload(const WorkloadArgs& w, std::optional<TrainingStep>* step = nullptr, bool mixed_precision = false);

/// One `archsim run`: the workload, the machine file and what overrides them.
struct RunRequest {
    WorkloadArgs workload;
    std::string arch;                ///< machine file (configs/<kind>/*.toml)
    std::string out_dir;             ///< where config.toml, trace.h5 and metrics.json go
    std::string precision;           ///< --precision ("" = by the one rule: workload, machine)
    std::vector<std::string> sets;   ///< machine keys overridden: "KEY=VALUE"
    uint64_t max_events = 0;         ///< stop after this many trace events (0 = none)
    std::string max_sim_time;        ///< stop at this simulated time ("12.5us"; "" = none)
    std::string detail = "full";     ///< what the trace keeps: "full" or "kernel" (the metrics are the same)
    bool reference = false;          ///< fast paths off: no kernel memoization, one DRAM transaction per burst
    bool quiet = false;              ///< no progress lines during a long simulation
    /// Called with each warning as it arises (a config for another CPU, import warnings, a
    /// training step over capacity); none given: they are only returned.
    std::function<void(const std::string&)> warn;
    /// --mapper: "auto" (each kernel's mapping chosen by the machine's search where the config
    /// leaves it open), "search" (also where the config names one) or "fixed" (every machine's one
    /// fixed schedule); anything else is a UserError.
    std::string mapper = "auto";
};

/// What a run produced.
struct RunOutcome {
    SimulationResult sim;                ///< events, wall time, stop reason, the reduced metrics
    std::string metrics_json;            ///< metrics.json as written ("" when a limit stopped the run)
    nlohmann::ordered_json training;     ///< metrics.json's `training` object (null for an inference)
    std::string trace_path, metrics_path;
    std::vector<std::string> warnings;   ///< every warning, in order
};

/// Runs `r`: reads the machine first (a bad key fails before a long import), chooses precision
/// and runtime by the one rule (sim/engine/run_choice.h), applies the runtime's device keys under
/// the request's, loads and lowers the workload, refuses a training step over the machine's
/// capacity (unless allowed), simulates and reduces. An earlier metrics.json in `out_dir` is
/// removed first; a run stopped by a limit keeps its trace (marked incomplete) and writes no
/// metrics.json (RunOutcome::sim.stopped_by says why). Throws UserError.
RunOutcome run_model(const RunRequest& r);

}  // namespace archsim
