#pragma once
// The parts of run_job (sim/api/job_run.h) that its files share: the job as resolved, the device
// runs, and the pieces of last_run.json a training step and an inference request have in common.
// Internal to sim/api.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "arch/cluster/cluster_config.h"
#include "arch/cluster/targets.h"
#include "sim/api/job_run.h"
#include "sim/api/process_pool.h"
#include "sim/cluster/job_builder.h"
#include "sim/cluster/job_model.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "workloads/jobs/llm_job.h"
#include "workloads/lowering/runtime_profile.h"
#include "workloads/parallel/parallel_plan.h"

namespace archsim {

class LatencyHistogram;
struct LatencyStats;

/// A job as run_job resolved it: the job with the command line's tuning applied, its target and
/// cluster, the plan, the device (its machine file with the device --sets), the precision and
/// device runtime it runs at, and where its device runs go.
struct JobContext {
    const LlmJob& job;
    const Target& target;
    const ClusterConfig& cl;
    const ParallelPlan& plan;
    const JobRunArgs& args;
    const MachineSetup& device;
    RunChoice precision;
    std::string runtime;   ///< device runtime profile ("" = the device config's)
    std::string dev_dir;   ///< OUT/devices
    std::chrono::steady_clock::time_point t0;

    /// The training half of run_job: one training step per chunk kind on a device, the plan's
    /// memory per stage checked, the iteration simulated over every stage; last_run.json's figures.
    nlohmann::json run_training() const;
    /// The parallel-plan search of a training job (`track: best` or run --search on): every plan
    /// of enumerate_plans on the target's devices, pruned by memory_lower_bound_bytes and
    /// step_lower_bound_ps, the rest evaluated best first (device runs shared by the plans that
    /// give a device the same work, each plan's step simulated in a child `archsim run
    /// --parallel ...`), until no unevaluated plan's bound is below the best step found (or
    /// the budget is spent with at least the minimum of plans evaluated); then the best plan is
    /// run here as run_training runs one, its last_run.json with a `search` object. Throws
    /// UserError when no plan fits the devices' memory.
    nlohmann::json search_training() const;
    /// The plan search of a serving job (`track: best` or run --search on): every split of its
    /// devices into tensor-parallel replicas (pp 1, dp the rest), each served over time in a
    /// child `archsim run --parallel ...` (device runs shared through dev_dir), the best by
    /// goodput within the job's latency objectives, then output tokens/s, then p99 end-to-end
    /// latency; the best run here as run_serving runs one, with a `search` object. Of the
    /// engine's settings it searches max_batch (serving_batch_candidates), then climbs from the
    /// best plans through the other settings (serving_setting_variants). Throws UserError when
    /// no split can be served.
    nlohmann::json search_serving() const;
    /// The inference half of run_job: prefill and decode device runs per chunk kind, the request
    /// simulated over every stage; last_run.json with TTFT, time per output token and tokens/s.
    nlohmann::json run_inference() const;
    /// A serving job (a serving block): requests arriving over time on each replica, batched by
    /// the engine profile's policy, every iteration costed from device runs (sim/serving);
    /// last_run.json with its `serving` object.
    nlohmann::json run_serving() const;
    /// What an inference or serving job's last_run.json says of itself: workload, target, cluster,
    /// device, framework, device runtime, `mode`, devices and the model with its precision.
    nlohmann::json identity_json(const std::string& mode) const;
};

/// The engine of a serving job: its profile's serving section (`runtime`, "" = tensorrt-llm) with
/// the job's serving block over it.
ServingEngine job_engine(const std::string& runtime, const ServingSpec& spec);

/// An engine's token budget, chunked prefill, scheduler and batching policy, and the replicas'
/// roles, as a serving search tries them.
struct ServingSetting {
    int64_t max_num_tokens = 0;  ///< 0: no budget
    bool chunked_prefill = false;
    std::string scheduler;  ///< guaranteed_no_evict | max_utilization
    std::string policy = "continuous";  ///< continuous (iteration-level) | static
    int64_t prefill_replicas = 0;  ///< of the dp replicas, those that run prompts only (0: every replica runs both)
    bool operator==(const ServingSetting& o) const {
        return max_num_tokens == o.max_num_tokens && chunked_prefill == o.chunked_prefill && scheduler == o.scheduler && policy == o.policy &&
               prefill_replicas == o.prefill_replicas;
    }
    bool operator!=(const ServingSetting& o) const { return !(*this == o); }
};
/// What a served plan's run says of its settings (last_run.json's serving object).
struct ServingRunSignals {
    int64_t peak_iteration_tokens = 0;      ///< the largest iteration, tokens
    int64_t budget_limited_iterations = 0;  ///< iterations in which the token budget held work back
    int64_t kv_limited_iterations = 0;      ///< iterations at whose start the KV cache held the queue's head back
    int64_t preemptions = 0;
    double slo_attainment = 1;  ///< share of the requests that met every objective (1 without objectives)
};
/// What a serving search knows of a plan beside its run: its dp replicas and the job's latency
/// objectives.
struct ServingScope {
    int64_t dp = 1;
    bool ttft_slo = false, tpot_slo = false;  ///< the job states a time-to-first-token / per-output-token objective
};
/// The settings a serving search tries beside a plan run with `own`, whose run reported `run`,
/// each departing from `own` in one setting, only where that can change the run:
/// - half the token budget where that is below the largest iteration or the budget held work
///   back; twice it and chunked prefill switched only where it held work back (no budget: none);
/// - the other scheduler only where the KV cache held a request back or a request was preempted
///   (else both block policies run alike);
/// - where the job states a TTFT or TPOT objective that some request missed, and dp >= 2:
///   prefill/decode disaggregation with dp/4 and dp/2 prefill replicas (at least 1), or none,
///   those that differ from own's (DistServe, Zhong et al., OSDI 2024, which searches this split
///   for goodput under both objectives: a prompt no longer stretches the decodes' iterations);
/// - static batching where a TPOT objective was missed under continuous batching (no prompt
///   joins a running batch, Orca's trade-off, Yu et al., OSDI 2022), continuous batching where
///   own is static.
std::vector<ServingSetting> serving_setting_variants(const ServingSetting& own, const ServingRunSignals& run, const ServingScope& scope);
/// How many settings serving_setting_variants() considers beside `own` on `scope` before its
/// run's signals prune any: 4 engine settings, the policy, and each distinct prefill-replica
/// count it could try.
int64_t serving_setting_candidates(const ServingSetting& own, const ServingScope& scope);

/// The max_batch values a serving search tries for a replica split whose run at the engine's
/// own limit `own` held at most `peak_running` requests in a batch (0: unknown): `own` first,
/// then the four largest powers of two below the smaller of the two, largest first (a limit at
/// or above the peak never binds: it runs as `own` did).
std::vector<int64_t> serving_batch_candidates(int64_t own, int64_t peak_running);

/// One device simulation: a `run` of the job's workload phase into `dir`.
struct DeviceTask {
    std::string phase;  ///< "train", "prefill", "decode=L"
    size_t kind = 0;    ///< the chunk kind
    std::string dir;
    int64_t batch = 0;  ///< sequences; 0 = the plan's microbatch over the split
    std::vector<std::string> workload_sets{};  ///< fields of the job's entry set for this run ("sequence.prompt=64")
    /// The plan whose chunk kind this is (its tp, ep, microbatch, recomputation); null: the job's.
    const ParallelPlan* plan = nullptr;
};

/// Where a training step's device run of chunk `kind` of `plan` goes under `dev_dir`: a folder
/// named by what the run depends on ("train_tp8_ep1_mb1_selective_l4_first"; "..._selective_sp_l4_first"
/// under sequence parallelism), so the plans of a search, and runs of the same job, that give a
/// device the same work share it.
std::string train_run_dir(const std::string& dev_dir, const ParallelPlan& plan, size_t kind);

/// The arguments a child `archsim run` of this job (a schedule phase, a searched plan) repeats
/// from the command line: the target, the cluster and device --set lists, the tuning flags, the
/// global batch, the device runtime, precision and mapper.
std::vector<std::string> child_job_args(const JobRunArgs& args);

/// A child `archsim run` of the job with one plan of a search, into `out` (created): its plan
/// fields set by `parallel` ("tp=4", as run --parallel takes them) and its engine settings by
/// `serving` ("max_batch=64", as run --serving takes them, over the command line's), `--search off`, the device
/// runs in c.dev_dir (shared with the search's), the command line's settings (child_job_args),
/// the phase and --allow-over-capacity as given; at kernel detail, quiet, JSON; its stdout and
/// stderr in `out`/report.json and `out`/stderr.log.
ChildTask plan_run_task(const JobContext& c, const std::string& out, const std::vector<std::string>& parallel,
                        const std::vector<std::string>& serving = {});

/// Whether the device model prices CUDA-graph launches (a GPU: kernel.cuda_graphs).
bool device_launches_graphs(const MachineSetup& device);

/// Runs every task whose metrics.json is not there yet, or was made by another command or from
/// other inputs (the job's workload text, the device config and the command line are kept in
/// signature.txt beside it), up to one process per core: an interrupted job resumes where it
/// stopped, and an edited one reruns what changed. A device that prices CUDA-graph launches gets
/// the job's cuda_graphs. `split`: the microbatch is split into this many pipelined ones.
/// Throws UserError naming the first device run that failed and its log.
void run_devices(const JobContext& c, const std::vector<DeviceTask>& tasks, int64_t split = 1);

/// A finished training-step device run's figures (its metrics.json's `training` and `total`).
ChunkRun read_chunk_run(const std::string& metrics_path);

/// A finished device run's total latency (ps) and energy (J); its MACs, the device's peak MACs/s
/// and its static power (W) into `macs`, `peak` and `static_w` when given.
std::pair<double, double> run_total(const std::string& dir, double* macs = nullptr, double* peak = nullptr, double* static_w = nullptr);

/// The static energy one device per stage draws while it does not compute, J: `static_w` over the
/// part of `span_ps` (a training step, a serving request) outside the stage's compute. Its device
/// runs charge static power only while they compute; the device draws it through the whole span.
double waiting_static_j(const JobResult& res, double static_w, double span_ps);

/// Power drawn outside the devices by the nodes a job of `devices` devices occupies
/// (ClusterConfig::node_overhead_w: host CPUs and NICs, as the cluster file cites them), beside
/// `devices_w` (the devices' power, W): {"nodes", "per_node_w", "host_w", "nics_w", "total_w",
/// "job_with_nodes_w", "not_modeled"}.
nlohmann::json node_power_json(const ClusterConfig& cl, int64_t devices, double devices_w);

/// The job's collectives, one row per scope, collective, algorithm and protocol.
nlohmann::json comm_json(const JobResult& res);

/// A latency's figures as a serving run's JSON gives them: {"mean", "p50", "p90", "p99"}, s.
nlohmann::json stats_json(const LatencyStats& s);

/// A latency histogram as a serving run's JSON keeps it: {"sum_s", "bins": [[index, count], ...]}
/// (sim/serving/latency_histogram.h).
nlohmann::json histogram_json(const LatencyHistogram& h);

/// A serving schedule's figures from its phases' last_run.json objects and their durations
/// (minutes): the rates weighted by duration, every phase's requests pooled (each phase's
/// replicas alike) for the latencies' means and percentiles (from the histograms each phase
/// keeps), the preemptions summed, the peaks' maximum.
nlohmann::json schedule_serving(const std::vector<std::pair<nlohmann::json, double>>& phases);

/// What the job's runtime_tuning asks of the cluster model: GPUDirect RDMA, and SR-IOV for
/// virt: sriov (sim/cluster/job_builder.h).
JobOptions job_options(const LlmJob& job);

/// What the entry's duration_minutes holds of a job that repeats one iteration (a training step,
/// or a request batch end to end) of `iteration_s` seconds, `tokens` tokens and `energy_j`
/// joules (the whole job's): {"minutes", "iterations" (whole ones that fit), "tokens",
/// "energy_j"}, the iterations back to back.
nlohmann::json over_duration_json(double minutes, double iteration_s, double tokens, double energy_j);

/// The job's custom keys, as given.
nlohmann::json custom_json(const LlmJob& job);

/// Adds to `not_modeled` (a JSON array) the settings of a job and its cluster that are read but
/// change nothing simulated, one line each (the cluster's, ClusterConfig::unmodeled_settings, and
/// a vendor fabric), and warns of each (args.warn): once the job has run, so that a plan refused
/// before that stays one line.
void add_unmodeled_settings(const LlmJob& job, const ClusterConfig& cl, nlohmann::json& not_modeled, const JobRunArgs& args);

}  // namespace archsim
