#pragma once
// `archsim run WORKLOADS.yaml#NAME --target TARGETS.yaml#NAME`: a parallel LLM training job on a
// cluster, its distinct devices simulated once each and the whole job in one SystemC simulation.
#include <string>
#include <vector>

namespace archsim::cli {

/// What `run` was given for a job.
struct JobRunArgs {
    std::string workload;    ///< FILE.yaml#NAME, or FILE.toml#NAME of an llm entry with `parallelism`
    std::string target;      ///< TARGETS.yaml#NAME, or a cluster file (configs/clusters/*.toml)
    std::string out_dir;
    std::string format = "table";
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
    std::string runtime;        ///< device runtime profile; "" = the framework's profile if one is bundled, else the device's
    std::string precision;      ///< run --precision over the workload's precision ("" = the workload's)
    /// Simulate a plan whose memory per device exceeds the device's capacity (reported with
    /// memory_fits = false) instead of refusing it (exit 2).
    bool allow_over_capacity = false;
    bool quiet = false;         ///< no progress of the device runs (run --quiet)
};

/// Runs the job: reads it and the target, checks the plan against model and cluster (one-line
/// errors, exit 2, before anything is simulated), simulates each distinct model chunk's
/// training step on one device in its own process (OUT/devices/chunk<k>/, resumable: a chunk
/// whose metrics.json exists is not simulated again), simulates the iteration over every
/// pipeline stage, its links and collectives, prints the report and writes OUT/last_run.json.
/// Returns 0, or throws UserError.
int cmd_run_job(const JobRunArgs& args);

}  // namespace archsim::cli
