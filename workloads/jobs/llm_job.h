#pragma once
// An LLM job: a model, its parallelism and its runtime settings, from the workloads.yaml
// format (name, framework, model_family, params, parallelism, sequence, precision, dataloader,
// duration_minutes, track, runtime_tuning, schedule.phases, notes, custom keys) or from an llm
// entry of archsim's own TOML workload files with a `parallelism` table.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/generators/llm.h"
#include "workloads/parallel/parallel_plan.h"

namespace archsim {

/// The format's optional runtime_tuning block; CLI flags override it.
struct RuntimeTuning {
    int64_t microbatch = 0;        ///< sequences per microbatch; 0 = not given (1)
    bool cuda_graphs = false;      ///< kernels launched as CUDA graphs (not modeled yet: reported)
    bool gpudirect_rdma = true;    ///< NICs read and write device memory directly
    std::string virt = "bare";     ///< bare | sriov (SR-IOV overhead not modeled: reported)
    std::string fabric;            ///< IB | RoCE | Vendor; "" = the target's
};

/// One phase of the format's optional schedule (a load profile over the job's duration).
struct JobPhase {
    std::string name;
    double duration_minutes = 0;
    double tokens_scale = 1.0;     ///< tokens_scale or autoscale_factor
    std::string request_profile;   ///< steady_state | peak | spike | low
    std::map<std::string, std::string> overrides;  ///< as given (scalars as text)
    /// The phase's keys the format does not define: JSON text of each value, its YAML type kept.
    std::map<std::string, std::string> custom;
};

/// The entry's optional `serving` block (archsim's own, beside the format's keys): the load an
/// inference job serves over time, and engine settings over its engine profile's (the runtime
/// profile its framework names: configs/runtimes/, docs/serving.md). Without it an inference job
/// runs one batch end to end.
struct ServingSpec {
    bool given = false;
    /// Mean arrival rate, requests/s; infinity (`inf`): every request at time 0.
    double arrival_rate_per_s = 0;
    int64_t requests = 0;             ///< requests; 0 = the rate x duration_minutes
    std::string arrival = "poisson";  ///< poisson (exponential gaps), uniform (even gaps), bursty (gaps of a gamma with CV 4)
    int64_t seed = 1;                 ///< of the arrival process (and the lengths' draws)
    /// How synthetic and streaming requests' lengths vary around sequence.prompt and .generate:
    /// fixed, uniform, exponential or lognormal (sim/serving/arrivals.h: LengthDistribution).
    std::string lengths = "fixed";
    double length_cv = 1.0;  ///< lognormal's coefficient of variation
    // engine settings; unset: the engine profile's
    std::optional<std::string> policy;     ///< continuous | static
    std::optional<std::string> scheduler;  ///< guaranteed_no_evict | max_utilization
    std::optional<int64_t> max_batch, max_num_tokens, kv_block_tokens;
    std::optional<bool> chunked_prefill;
    std::optional<double> kv_cache_fraction;  ///< of the device memory left after the weights
    std::optional<std::string> preemption;    ///< recompute | swap
    /// Prefill/decode disaggregation: this many of the dp replicas run prompts only, the rest
    /// decodes only (sim/serving/disaggregated.h); 0 = every replica runs both.
    int64_t prefill_replicas = 0;
    /// Latency objectives for goodput (0 = none): TTFT, TPOT and end to end, ms.
    double slo_ttft_ms = 0, slo_tpot_ms = 0, slo_e2e_ms = 0;
    std::optional<double> swap_space_gib;     ///< host memory for swapped KV per device
    std::string profile = "steady_state";     ///< the request_profile of the phase it runs (steady_state without phases)
    /// The CSV of requests a `dataloader: replay` job serves (serving.replay_file, relative to the
    /// workloads file; sim/serving/arrivals.h: read_replay_csv); "" otherwise.
    std::string replay_file;
};

/// A serving job's rate multiplier for a phase's `request_profile`, archsim's own reading (the
/// format names the four profiles and defines none): steady_state 1, peak 2, spike 1 with bursty
/// arrivals (gamma gaps with a coefficient of variation of 4), low 0.25 (docs/serving.md).
double request_profile_rate(const std::string& profile);

/// One job.
struct LlmJob {
    std::string file, name;
    std::string framework, track, dataloader, notes;
    double duration_minutes = 0;
    LlmShape model;                ///< sequence and precision included
    ParallelismSpec parallel;      ///< tp, pp, dp (+ optional ep, virtual_stages, schedule, ...)
    RuntimeTuning tuning;
    std::vector<JobPhase> phases;
    ServingSpec serving;
    /// Keys the format does not define (and archsim's own global_batch and training): JSON text of
    /// each value, with the type YAML's core schema gives it (4711 a number, "4711" a string).
    std::map<std::string, std::string> custom;
    /// Likely misspellings kept as custom keys (one or two edits from a key of the format), one
    /// line each, for the caller to print.
    std::vector<std::string> warnings;
    /// "FILE#NAME", how errors name the job.
    std::string where() const { return file + "#" + name; }
    /// True for a training-only entry (sequence.generate = 0).
    bool training() const { return model.generate == 0; }
};

/// Reads job `name` of a workloads.yaml file: a top-level `workloads` list (or a plain list) of
/// entries with `name`. Required: name, framework, model_family (gpt, llama, moe), params
/// (hidden_size, n_layers, vocab_size, n_heads; optional ffn_hidden_size (default 4 x hidden for
/// gpt, Llama's 2/3 x 4 x hidden rounded up to 256 otherwise), n_kv_heads, n_experts and top_k
/// for moe), parallelism (tp, pp, dp; optional ep, virtual_stages, schedule, sequence_parallel,
/// zero_stage, dp_overlap), sequence (prompt, generate), precision (weights, activations: fp8,
/// bf16, fp16, fp32), dataloader (streaming, synthetic, replay), duration_minutes, track (parity,
/// best). Optional: runtime_tuning, schedule.phases, notes, `global_batch` and a `training`
/// block (optimizer, recompute); any other key of the entry (or of a phase) is kept in `custom`
/// with its YAML type. The blocks params, parallelism, sequence, precision, runtime_tuning,
/// training and schedule take only their own keys: another is refused with the nearest one
/// named ("did you mean"), as is a phase override into one of them. Throws UserError
/// "FILE#NAME: KEY: reason" for a missing required field, a wrong type or value, an unknown job
/// (listing the known ones), or a file that is not YAML ("FILE:LINE:COL: reason").
/// With `phase`, the job as that phase of its schedule runs it: the phase's `overrides` (keys of
/// the entry, dotted into its blocks: "runtime_tuning.microbatch", "sequence.prompt",
/// "global_batch", ...) replace the entry's values before it is read, and its tokens_scale
/// multiplies the batch (the global batch of a training entry, rounded to a multiple of dp x
/// microbatch; the sequences per replica of an inference entry), at least one. A serving entry's
/// phase instead serves requests over the phase's duration_minutes at the entry's rate times its
/// request_profile's multiplier (request_profile_rate) and its tokens_scale, on dp x
/// autoscale_factor replicas. An unknown phase is a UserError listing the phases.
LlmJob read_llm_job_yaml(const std::string& file, const std::string& name, const std::string& phase = "");

/// Reads llm entry `name` of an archsim workload TOML file whose `parallelism` table makes it a
/// job (the same keys as the YAML's, with `global_batch`, `training` and `runtime_tuning` as
/// sub-tables or keys of the entry). Throws UserError like read_llm_job_yaml.
LlmJob read_llm_job_toml(const std::string& file, const std::string& name);

/// Sets one field of a plan from "KEY=VALUE" (run --parallel): tp, pp, dp, ep, virtual_stages,
/// microbatch, global_batch, zero_stage (integers), sequence_parallel, dp_overlap (true or
/// false), schedule (gpipe, 1f1b, interleaved), recompute (none, selective, full). The plan is
/// validated later, as a whole (make_parallel_plan). Throws UserError "--parallel <assignment>:
/// <reason>" for an unknown key or a bad value.
void set_parallel_field(ParallelismSpec& s, const std::string& assignment);
/// Sets one engine setting of a serving job's serving block from `KEY=VALUE` (`run --serving`):
/// max_batch, max_num_tokens (integers >= 1), policy (continuous, static), scheduler
/// (guaranteed_no_evict, max_utilization), chunked_prefill (true, false), prefill_replicas (an
/// integer >= 0: of the dp replicas, those that run prompts only). Throws UserError naming
/// the assignment for an unknown key or a bad value.
void set_serving_field(ServingSpec& s, const std::string& assignment);

/// True if workload reference `ref` ("FILE#NAME") names a job: a .yaml/.yml file, or a TOML
/// llm entry with a `parallelism` table.
bool is_llm_job(const std::string& ref);

}  // namespace archsim
