#pragma once
// `archsim run WORKLOADS.yaml#NAME --target TARGETS.yaml#NAME`: a parallel LLM job (a training
// step or an inference request) on a cluster, its distinct devices simulated once each in child
// processes (sim/api/process_pool.h) and the whole job in one SystemC simulation.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace archsim {

/// What `run` was given for a job.
struct JobRunArgs {
    std::string workload;    ///< FILE.yaml#NAME, or FILE.toml#NAME of an llm entry with `parallelism`
    std::string target;      ///< TARGETS.yaml#NAME, or a cluster file (configs/clusters/*.toml)
    std::string out_dir;
    std::vector<std::string> cluster_sets;  ///< cluster keys overridden: KEY=VALUE
    std::vector<std::string> device_sets;   ///< device machine keys overridden (run --set)
    // CLI flags over the job's runtime_tuning ("" / 0: the job's)
    int64_t microbatch = 0;
    std::string cuda_graphs, gpudirect_rdma, fabric, virt;  ///< "on"/"off", "IB"/"RoCE"/"Vendor", "bare"/"sriov"
    int64_t global_batch = 0;   ///< overrides the job's global_batch (0: the job's)
    std::string detail = "full";  ///< what OUT/trace.h5 keeps (run --detail)
    /// One phase of the job's schedule ("" = all of them when it has phases, each simulated in
    /// its own process under OUT/phases/<name>, and the results weighted by duration).
    std::string phase;
    /// Where the device runs go ("" = OUT/devices): a job's schedule phases share their parent's,
    /// so a phase finds the device runs an earlier phase made from the same inputs.
    std::string devices_dir;
    std::string runtime;        ///< device runtime profile; "" = the framework's profile if one is bundled, else the device's
    std::string precision;      ///< run --precision over the workload's precision ("" = the workload's)
    std::string mapper = "auto";  ///< the device runs' --mapper (auto, search, fixed: arch/common/machine.h's Mapper)
    /// Simulate a plan whose memory per device exceeds the device's capacity (reported with
    /// memory_fits = false) instead of refusing it (exit 2).
    bool allow_over_capacity = false;
    bool quiet = false;         ///< no progress of the device runs (run --quiet)
    /// Plan fields set over the job's (run --parallel KEY=VALUE: set_parallel_field), applied after
    /// --microbatch and --global-batch.
    std::vector<std::string> parallel_sets;
    /// Engine settings of a serving job set over its serving block (run --serving KEY=VALUE:
    /// set_serving_field).
    std::vector<std::string> serving_sets;
    /// The parallel-plan search: "on" (run --search on), "off", or "" = the job's `track` (best
    /// searches, parity runs the plan as written). Training jobs only: another job with it on
    /// runs its own plan and says so.
    std::string search;
    int64_t search_min_plans = 20;  ///< the search evaluates at least this many plans (all, if fewer fit)
    /// Once this many seconds have passed and search_min_plans are evaluated, the search starts
    /// no more plans and reports the gap between its best and the lowest bound left (0: no limit).
    double search_budget_s = 600;
    /// Hears each warning (settings read but not modeled, the job file's) and each line on what
    /// is about to run (a schedule phase); none given: warnings are only kept in last_run.json's
    /// not_modeled where they belong there.
    std::function<void(const std::string&)> warn, note;
};

/// Runs the job: reads it and the target, checks the plan against model and cluster (one-line
/// errors before anything is simulated), simulates each distinct model chunk's training step (or
/// prefill and sampled decode steps) on one device in a child process (OUT/devices/..., resumable:
/// a run whose metrics.json exists and whose signature.txt matches its command and inputs is not
/// simulated again), simulates the iteration over every pipeline stage, its links and collectives
/// (OUT/trace.h5), and returns what it writes to OUT/last_run.json: the job metrics of
/// traces/metric_catalog.h (step time, tokens/s, MFU, HFU, the split of the step, collectives,
/// memory, energy and power; for an inference TTFT, time per output token, tokens/s). A job with
/// schedule phases runs each phase as a child `archsim run --phase` and returns their figures
/// and duration-weighted means. Throws UserError (a plan that does not fit its devices' memory
/// names the stage and the categories, unless allow_over_capacity).
nlohmann::json run_job(const JobRunArgs& args);

}  // namespace archsim
