#pragma once
// The archsim subcommands; each returns the process exit code. Thin: parse, call the library, print.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace archsim::cli {

/// Options shared by commands that load a workload.
struct WorkloadArgs {
    std::string model;
    std::vector<std::string> dims;
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

/// Where runtime profiles are looked up by name.
std::string runtimes_dir();

/// The reason a plan or run that needs more memory than its device holds is refused: "does not
/// fit in memory: needs N per device (CATEGORY N, ...) against the device's N (KEY);
/// --allow-over-capacity simulates it anyway". A sweep files a point failing with it as
/// infeasible (kDoesNotFit).
std::string over_capacity_reason(double needed_bytes, const std::vector<std::pair<std::string, double>>& categories,
                                 double capacity_bytes, const std::string& capacity_key);
inline constexpr const char* kDoesNotFit = "does not fit in memory";

/// `archsim graph`: per-operator table of the imported graph.
int cmd_graph(const WorkloadArgs& w, const std::string& format);

/// `archsim run`: simulate, write trace.h5 and metrics.json under `out_dir`, print the report.
/// `max_events` / `max_sim_time` (0 / "" = none) stop a run early: the trace is kept marked
/// incomplete, no metrics.json is written, and the exit code is 4. `detail` ("full" or
/// "kernel") is what the trace keeps; the metrics are the same at either. `reference` turns the
/// fast paths off: every kernel simulated (no memoization) and every DRAM burst its own
/// transaction (dram.per_burst = true where the machine has a DRAM). `quiet` turns off the
/// progress a run prints once it has taken 2 s (sim/base/progress.h).
int cmd_run(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
            const std::vector<std::string>& sets, const std::string& format, uint64_t max_events = 0,
            const std::string& max_sim_time = "", const std::string& detail = "full", bool reference = false, bool quiet = false);

/// `archsim compare STUDY`: the study as `archsim sweep` runs it (`jobs` child processes, 0 = one
/// per core; each point's metrics.json kept), resuming a folder that has a journal unless
/// `force`, then the table `archsim report` prints. Returns 1 if a point failed.
int cmd_compare(const std::string& study_file, const std::string& out_dir, int jobs, bool force);

/// `archsim params KIND`: every key of a machine kind (or `cluster`: a cluster description; `runtime`: a
/// runtime profile) with type, unit, default and doc, as a table, JSON, CSV or `md` (a Markdown table).
int cmd_params(const std::string& kind, const std::string& format);
/// `archsim metrics`: prints the declared metrics (traces/metric_catalog.h) as a table, JSON or CSV.
int cmd_metrics(const std::string& format);

}  // namespace archsim::cli
