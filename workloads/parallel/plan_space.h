#pragma once
// The space of parallel plans a training job could run with on a number of devices, and what
// can be said of a plan before any device simulates it: its MACs per chunk and lower bounds on
// its memory per device. The parallel-plan search (sim/api/plan_search.cpp) enumerates it,
// prunes by these bounds and evaluates the rest with the device and job simulators.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/parallel/parallel_plan.h"

namespace archsim {

/// Every valid plan of `model` on exactly `devices` devices (tp x pp x dp = devices) at the
/// base plan's global batch, in a fixed order: tensor-parallel size tp (dividing the heads and
/// the feed-forward width, fitting the KV heads, and within a node or whole nodes of
/// `devices_per_node`), pipeline stages pp (dividing the layers), dp the rest; expert
/// parallelism ep (a MoE model: dividing the experts and dp, leaving top_k experts per rank);
/// microbatch (dividing global_batch / dp); virtual stages (dividing layers / pp; more than
/// one needs pp >= 2 and microbatches a multiple of pp); recompute none, selective or full;
/// sequence parallelism off and, with tp > 1, on; ZeRO stage 0 and, with dp > 1, 1, 2 and 3.
/// The optimizer, the data-parallel overlap and a GPipe schedule come from `base`; every plan
/// passes make_parallel_plan. The search space of Calculon's llm-optimal-execution (Isaev et
/// al., SC23) less its offloading and overlap switches, plus ZeRO and expert parallelism.
std::vector<ParallelismSpec> enumerate_plans(const LlmShape& model, const ParallelismSpec& base, int64_t devices, int64_t devices_per_node);

/// A plan's short name, also a folder name: "tp8_pp8_dp1_v3_mb1_selective_sp_z0" (ep when > 1:
/// "_ep4"; "_sp" only with sequence parallelism).
std::string plan_id(const ParallelismSpec& s);

/// One model chunk's MACs for one microbatch on one device of a plan, from the model's shape
/// as the llm generator builds it (workloads/generators/llm.h): per layer the q, k, v and
/// output projections (heads / tp query heads, max(1, kv_heads / tp) KV heads), the scores and
/// the probabilities times V over the whole sequence, the feed-forward (GPT: 2 matrices;
/// Llama: 3; MoE: top_k experts of 3 per token and the router's experts / ep columns); the LM
/// head on every token (padded_vocab / tp rows) when the chunk has it. Backward: twice the
/// forward (the input and the weight gradients). Recompute: selective, one scores matmul per
/// layer (Korthikanti et al. 2023: the attention core; the probabilities times V is not
/// repeated); full, the forward of all but one layer (a lower bound: archsim's full
/// recomputation repeats every segment but the last, a sublayer); none, zero.
struct ChunkMacs {
    double forward = 0, backward = 0, recompute = 0;
    double layer_forward = 0;  ///< the forward of the chunk's layers alone (no LM head)
};
ChunkMacs chunk_macs(const LlmShape& model, const ParallelismSpec& s, const ChunkShape& chunk);

/// Parameters one device of the plan holds for `chunk` (weights of its layers split by tp,
/// experts by ep, the vocabulary-parallel embedding and head when it has them; the norms and
/// biases that tensor parallelism replicates counted once per device).
double chunk_parameters(const LlmShape& model, const ParallelismSpec& s, const ChunkShape& chunk);

/// A lower bound on the most memory any device of the plan holds, bytes: its largest stage's
/// weights and gradients (the weights' element size) and optimizer state (Adam's two FP32
/// moments, momentum's one; FP32 master weights not counted), divided by dp as the ZeRO stage
/// shards them, plus the activations every microbatch in flight on stage 0 (the schedule's
/// most forwards without their backward yet) keeps at least: each layer's input (what full
/// recomputation keeps; the other modes keep it too), divided by tp under sequence
/// parallelism, and, without full recomputation, the inputs of the layer's matmuls and norms
/// (Korthikanti et al. 2023, Table 2: four replicated [s, b, h] tensors, and the attention
/// context and the two feed-forward activations split by tp). Device runs give the exact
/// figure (stage_memory); a plan above the capacity by this bound cannot fit.
double memory_lower_bound_bytes(const ParallelPlan& plan);

/// An estimate (not a bound) of the activations one microbatch keeps per layer once its forward
/// ends, bytes: Korthikanti et al. 2023, Table 2, s b h (10 + 24 / t + 5 a s / (h t)) at two
/// bytes an element (34 / t for the first two terms under sequence parallelism), the last term
/// (the attention scores, softmax and dropout) only without recomputation; under full
/// recomputation the layer's input, s b h elements (1/t of them under sequence parallelism).
/// Scaled to the activations' element size.
double activation_bytes_per_layer_estimate(const ParallelPlan& plan);

/// An estimate of what a chunk's backward holds beyond its forward's saved activations, bytes:
/// under full recomputation one layer's activations without recomputation, under selective
/// one layer's attention scores, probabilities and dropout mask (5 a s^2 b / t bytes at two
/// bytes an element; Korthikanti et al. 2023, Table 2), none without recomputation.
double backward_extra_bytes_estimate(const ParallelPlan& plan);

/// Per pipeline stage, the most microbatches it holds activations for at once: the schedule's
/// largest count of forwards (of one chunk each) run without their backward yet.
std::vector<int64_t> in_flight_microbatches(const ParallelPlan& plan);

}  // namespace archsim
