#pragma once
// The archsim subcommands; each returns the process exit code. Thin: parse, call the library, print.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/api/calibrate.h"
#include "sim/api/job_run.h"
#include "sim/api/run_model.h"

namespace archsim::cli {

/// `archsim graph`: per-operator table of the imported graph.
int cmd_graph(const WorkloadArgs& w, const std::string& format);

/// `archsim run`: simulate, write trace.h5 and metrics.json under `out_dir`, print the report.
/// `max_events` / `max_sim_time` (0 / "" = none) stop a run early: the trace is kept marked
/// incomplete, no metrics.json is written, and the exit code is 4. `detail` ("full" or
/// "kernel") is what the trace keeps; the metrics are the same at either. `reference` turns the
/// fast paths off: every kernel simulated (no memoization) and every DRAM burst its own
/// transaction (dram.per_burst = true where the machine has a DRAM). `quiet` turns off the
/// progress a run prints once it has taken 2 s (sim/base/progress.h). `mapper` ("auto", "search"
/// or "fixed", RunRequest::mapper) is how kernels are mapped.
int cmd_run(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
            const std::vector<std::string>& sets, const std::string& format, uint64_t max_events = 0,
            const std::string& max_sim_time = "", const std::string& detail = "full", bool reference = false, bool quiet = false,
            const std::string& mapper = "auto");

/// `archsim run WORKLOADS.yaml#NAME --target ...`: a parallel job (sim/api/job_run.h), its report
/// printed as `format` ("table" or "json"); warnings and what runs next go to stderr. Throws
/// UserError for another format.
int cmd_run_job(JobRunArgs args, const std::string& format);

/// The workload format's command form (`--targets F --target T --workloads F --workload N`, the
/// document's own test command) turned into archsim's (`F#N --target F#T`): sets `model` and
/// `target`. Throws UserError when only half of a pair is given, or MODEL or a `#` target is given
/// beside it.
void apply_format_command(const std::string& targets_file, const std::string& workloads_file, const std::string& workload_name,
                          std::string& model, std::string& target);

/// `archsim calibrate`: run_calibration (sim/api/calibrate.h) with its progress and warnings on
/// stderr and calibration.md on stdout. Throws UserError when --apply was refused.
int cmd_calibrate(CalibrateArgs a);

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
