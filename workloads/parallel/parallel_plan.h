#pragma once
// A parallelism plan for a decoder-only LLM: tensor, pipeline and data parallelism (with
// interleaved virtual stages, sequence parallelism and ZeRO), validated against the model, and
// what it implies: the model chunks each device runs and the collectives each pass issues.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/generators/llm.h"

namespace archsim {

/// How a job splits its model and batch (the workload's `parallelism` and the training fields).
struct ParallelismSpec {
    int64_t tp = 1;                 ///< tensor-parallel ranks (Megatron column/row splits)
    int64_t pp = 1;                 ///< pipeline stages
    int64_t dp = 1;                 ///< data-parallel replicas
    /// Expert-parallel ranks (MoE): each holds experts/ep experts, its tokens dispatched to and
    /// combined from the others by all-to-all; taken from the data-parallel ranks (divides dp),
    /// as Megatron-Core's expert model parallelism does.
    int64_t ep = 1;
    int64_t virtual_stages = 1;     ///< model chunks per pipeline stage (interleaved 1F1B)
    int64_t microbatch = 1;         ///< sequences per microbatch
    int64_t global_batch = 0;       ///< sequences per iteration; 0 = dp x microbatch
    std::string schedule = "1f1b";  ///< gpipe | 1f1b | interleaved (set when virtual_stages > 1)
    bool sequence_parallel = false; ///< Korthikanti et al. 2023: each all-reduce becomes a reduce-scatter + all-gather
    int64_t zero_stage = 0;         ///< ZeRO 0-3 (Rajbhandari et al. 2020)
    bool dp_overlap = true;         ///< gradient buckets overlapped with backward (PyTorch DDP) or after the flush
    std::string recompute = "full"; ///< activation recomputation: none | selective | full
    std::string optimizer = "adam";
    int64_t devices() const { return tp * pp * dp; }
    /// The parts sequence parallelism splits the residual stream's tokens into: tp where it is
    /// on and tp > 1, else 1 (a rank then holds 1/sequence_parts() of a layer-boundary activation).
    int64_t sequence_parts() const { return sequence_parallel && tp > 1 ? tp : 1; }
};

/// One model chunk as a device runs it (an llm `shard`).
struct ChunkShape {
    int64_t layers = 0;
    bool embedding = false, head = false;
    bool operator==(const ChunkShape& o) const { return layers == o.layers && embedding == o.embedding && head == o.head; }
};

/// The plan: the spec, the model, and what follows from them.
struct ParallelPlan {
    ParallelismSpec spec;
    LlmShape model;
    int64_t microbatches = 1;     ///< per pipeline per iteration: global_batch / (dp x microbatch)
    int64_t layers_per_chunk = 0;
    /// The distinct chunks one device runs (at most first, middle, last; or one whole model).
    std::vector<ChunkShape> kinds;
    /// kind_of[stage][chunk]: index into kinds.
    std::vector<std::vector<size_t>> kind_of;
    /// One microbatch's activations at a layer boundary, bytes: microbatch x sequence x hidden x
    /// the activations' bytes per element (a tensor-parallel all-reduce's size, and a pipeline
    /// message's).
    double activation_bytes = 0;
};

/// Checks `spec` against `model` and builds the plan. `where` names the job in errors
/// ("workloads.yaml#NAME"). Throws UserError "<where>: parallelism.<key> = <v>: <reason>" when
/// tp does not divide heads or ffn (the vocabulary is padded as Megatron pads it), pp x virtual_stages does not divide layers, the
/// global batch is not a multiple of dp x microbatch, interleaving lacks pp > 1 or microbatches
/// divisible by pp, ep > 1 on a dense model or not dividing the experts or dp, or a value is out
/// of range.
ParallelPlan make_parallel_plan(const LlmShape& model, const ParallelismSpec& spec, const std::string& where);

/// Megatron-LM's model FLOPs per iteration for a GPT with full recomputation (Narayanan et al.
/// SC21, eq. 3): 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)); B the global batch.
double megatron_flops_per_iteration(const LlmShape& model, int64_t global_batch);

/// Model FLOPs per iteration of a GPT, recomputation excluded (Korthikanti et al., "Reducing
/// Activation Recomputation in Large Transformer Models", 2022, sec. 6): 72 B s l h^2 (1 + s / (6 h)
/// + V / (12 l h)); what MFU divides by the peak.
double gpt_model_flops_per_iteration(const LlmShape& model, int64_t global_batch);

/// Hardware FLOPs per iteration of a GPT, the forward recomputation included (Korthikanti et al.
/// 2022, sec. 6): `recompute` "full" adds a whole forward, 96 B s l h^2 (1 + s / (6 h) + V / (16 l h));
/// "selective" only the attention's s^2 terms, 72 B s l h^2 (1 + s / (3 h) + V / (12 l h)); "none"
/// the model FLOPs. What HFU divides by the peak. Throws std::invalid_argument for another value.
double gpt_hardware_flops_per_iteration(const LlmShape& model, int64_t global_batch, const std::string& recompute);

}  // namespace archsim
