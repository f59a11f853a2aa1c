#pragma once
// What the job simulator needs to know of a parallel training job: each pipeline stage's
// passes (their compute from the device simulations, their collectives), the communicators, and
// the schedule. Built by sim/cluster/job_builder from a parallel plan and the device runs.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/interconnect/collective_model.h"

namespace archsim {

/// Which communicator a collective runs on.
enum class CommScope { Tensor, Data, Pipeline, Embedding, Expert, ExpertData };
/// "tensor", "data", "pipeline", "embedding", "expert" (MoE dispatch and combine), "expert_data"
/// (the experts' gradients, reduced over the dp / ep replicas of each expert).
const char* to_string(CommScope s);

/// One collective a pass issues.
struct CommOp {
    Collective kind = Collective::AllReduce;
    CommScope scope = CommScope::Tensor;
    double bytes = 0;  ///< as collective_cost counts it
};

/// One pass (a microbatch's forward, or its recomputation and backward) of one model chunk on
/// one device: its compute time from the device simulation and the collectives it issues on the
/// critical path (Megatron-LM 2021 overlaps none of them with compute), spread evenly between
/// equal slices of the compute.
struct PassCost {
    double compute_ps = 0;
    double energy_j = 0;
    double macs = 0;  ///< the device run's MACs (trace only)
    std::vector<CommOp> comm;
    /// Inference only: what the stage sends the next one after this pass, bytes (the prefill's
    /// hidden states, a decode step's one token per sequence).
    double send_bytes = 0;
};

/// One model chunk of a stage (a pipeline stage holds `virtual_stages` of them).
struct ChunkCost {
    PassCost forward, backward;  ///< backward includes the chunk's recomputation
    double grad_bytes = 0;       ///< its weight gradients but the experts', bytes (reduced over data parallelism)
    double expert_grad_bytes = 0;  ///< its experts' gradients, bytes (reduced over dp / ep replicas)
};

/// One pipeline stage as its representative device runs it.
struct StageCost {
    std::vector<ChunkCost> chunks;
    double optimizer_ps = 0, optimizer_j = 0;  ///< the optimizer step over the stage's shard
    double embedding_grad_bytes = 0;           ///< tied-embedding gradient to sync with the other end (pp > 1)
};

/// A training job on a cluster, reduced to what differs between devices (symmetry: the data-
/// parallel replicas and the tensor-parallel ranks of a stage do the same work, so one device
/// per pipeline stage is simulated and its collectives stand for its communicators').
struct JobModel {
    std::string schedule = "1f1b";  ///< pipeline_schedule_names()
    int64_t pp = 1, virtual_stages = 1, microbatches = 1;
    std::vector<StageCost> stages;  ///< pp of them
    CommGroup tensor, data, embedding;  ///< the communicators (ranks, ranks per node, links)
    CommGroup expert, expert_data;      ///< expert parallelism: the ep ranks, and each expert's dp / ep replicas
    /// The activation (or its gradient) one stage sends the next per microbatch, bytes.
    double p2p_bytes = 0;
    bool p2p_inter_node = true;      ///< consecutive stages on different nodes
    LinkSpec p2p_inter;              ///< the network path between consecutive stages (their nodes' distance)
    /// The communicator a collective of `scope` runs on (Pipeline: the embedding's; send/recv
    /// pairs are p2p_pair()).
    const CommGroup& group(CommScope scope) const {
        switch (scope) {
            case CommScope::Tensor: return tensor;
            case CommScope::Data: return data;
            case CommScope::Expert: return expert;
            case CommScope::ExpertData: return expert_data;
            default: return embedding;
        }
    }
    /// Two consecutive stages as a communicator for their send/recv (the tensor group's node
    /// link, p2p_inter between nodes).
    CommGroup p2p_pair() const {
        CommGroup g = tensor;
        g.ranks = 2, g.ranks_per_node = p2p_inter_node ? 1 : 2;
        g.inter = p2p_inter;
        return g;
    }
    /// Megatron-LM's scatter/gather (SC21 section 4.1): each of the tp ranks sends 1/tp of the
    /// activation through its own NIC and the receiving node all-gathers it over NVLink.
    bool scatter_gather = true;
    int64_t tp = 1;
    /// Data-parallel gradient all-reduce in buckets overlapped with the last backward pass of each
    /// chunk (PyTorch DDP), else one all-reduce after the pipeline flush (Megatron's local DDP).
    bool dp_overlap = true;
    double bucket_bytes = 25.0 * 1024 * 1024;  ///< PyTorch DDP's bucket_cap_mb default, 25 MiB
    /// ZeRO stage (Rajbhandari et al. 2020): 1 and 2 replace the gradient all-reduce by a
    /// reduce-scatter and a parameter all-gather after the optimizer step (same volume); 3
    /// gathers each layer's parameters before its forward, recomputation and backward instead.
    int64_t zero_stage = 0;
    /// How gradients are reduced across replicas: a reduce-scatter under ZeRO, else an all-reduce.
    Collective gradient_reduction() const { return zero_stage >= 1 ? Collective::ReduceScatter : Collective::AllReduce; }
    double param_bytes_per_stage_device = 0;  ///< for ZeRO's all-gather
    double intra_pj_per_byte = 0, inter_pj_per_byte = 0;  ///< link energies; 0 = not modeled
    /// Inference instead of a training step: each stage runs `passes[stage]` in order, forward
    /// only (pass 0 the prefill, then one pass per decode step), each pass once per microbatch
    /// of the batch (`microbatches` of them, pipelined through the stages: FasterTransformer's
    /// and Megatron's pipelined prefill and decode); stage r > 0 waits for stage r - 1's
    /// microbatch, and stage 0's pass k of a microbatch waits for the last stage's pass k - 1 of
    /// that microbatch (its next token depends on it). `stages`, `schedule` and the gradient
    /// fields are then unused; PassCost times are one microbatch's.
    bool inference = false;
    std::vector<std::vector<PassCost>> passes;
    // for the trace (simulate_job's trace_path)
    std::string name, target, precision;   ///< the job, the target, the run precision
    double device_peak_macs_per_s = 0;     ///< one device's dense peak
};

/// Time one stage's device spends, by what it waits for.
struct StageTimes {
    double compute_ps = 0;       ///< passes and the optimizer
    double exposed_comm_ps = 0;  ///< collectives and transfers the device waited on
    double idle_ps = 0;          ///< waiting for another stage's data: the pipeline bubble
    double end_ps = 0;           ///< when its step ended
    double energy_j = 0;         ///< compute energy (device runs) + link energy
    /// Exposed time per scope and link level ("tensor/intra", "pipeline/inter", ...), ps.
    std::vector<std::pair<std::string, double>> exposed_by;
};

/// One row of communication totals.
struct CommTotal {
    std::string scope, kind, algorithm, protocol;
    int64_t count = 0;
    double bytes = 0;         ///< operation sizes summed
    double time_ps = 0;       ///< their durations summed (hidden or not)
    double exposed_ps = 0;    ///< of which the issuing device waited on
};

/// What a job simulation produced (one representative device per stage).
struct JobResult {
    double step_ps = 0;
    std::vector<StageTimes> stages;
    std::vector<CommTotal> comm;         ///< summed over the representative devices
    double intra_bytes = 0, inter_bytes = 0;  ///< sent per iteration by the representative devices
    double link_queued_ps = 0;           ///< time transfers waited for a busy link (contention)
    /// Inference: when the last stage finished each pass for every microbatch, ps (pass 0: the
    /// first token of every sequence).
    std::vector<double> pass_end_ps;
    uint64_t events = 0;                 ///< SystemC process activations
};

}  // namespace archsim
