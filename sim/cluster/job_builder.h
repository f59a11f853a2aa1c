#pragma once
// From a parallel plan, a cluster and the device simulations of each model chunk to the job
// simulator's model (job_model.h), and the per-device memory of the plan.
#include <string>
#include <vector>

#include "arch/cluster/cluster_config.h"
#include "sim/cluster/job_model.h"
#include "workloads/parallel/parallel_plan.h"

namespace archsim {

/// One device simulation of one model chunk (a training step of `microbatch` sequences through
/// it: metrics.json's `training` object), times in ps, energies in J, sizes in bytes.
struct ChunkRun {
    double forward_ps = 0, loss_ps = 0, recompute_ps = 0, backward_ps = 0, optimizer_ps = 0;
    double forward_j = 0, loss_j = 0, recompute_j = 0, backward_j = 0, optimizer_j = 0;
    double forward_macs = 0, loss_macs = 0, recompute_macs = 0, backward_macs = 0;
    double params = 0;  ///< trained parameters of the chunk
    double model_flops = 0;  ///< 2 x its forward and gradient MACs for one microbatch (training.model_flops)
    double weights_bytes = 0, gradients_bytes = 0, optimizer_state_bytes = 0;
    double saved_activations_bytes = 0;  ///< one microbatch's, their largest (in its backward, recomputed values included)
    /// One microbatch's when its forward ends: what it keeps while it waits for its backward.
    double saved_after_forward_bytes = 0;
    double workspace_bytes = 0;
    double peak_macs_per_s = 0;          ///< the device's dense peak at the run's precision
    double capacity_bytes = 0;           ///< the device's memory (dram.capacity_gib)
    double static_w = 0;                 ///< the device's static power (metrics.json total.static_power_w), W
};

/// What the job asks of the runtime beyond the plan (the workload's runtime_tuning).
struct JobOptions {
    /// Inter-node transfers go NIC to GPU memory directly (GPUDirect RDMA); false: they bounce
    /// through host memory, so the NIC share is limited by the device's PCIe link to the host.
    bool gpudirect_rdma = true;
    bool scatter_gather = true;   ///< Megatron-LM's pipeline scatter/gather (SC21 section 4.1)
    /// The job runs in virtual machines with SR-IOV network functions (the workload's virt:
    /// sriov): inter-node transfers sustain 0.98 of their bare-metal rate ("<2% loss of bandwidth
    /// across the entire range of message sizes", SR-IOV InfiniBand on SDSC Comet, G. Lockwood,
    /// "High-Performance Virtualization: SR-IOV and Amazon's C3 Instances", 2013); NVLink inside
    /// a VM runs as on bare metal (an Azure ND H100 v5 VM's 8-GPU all-reduce, 478.9 GB/s bus
    /// bandwidth, against ~480 GB/s bare metal, NVIDIA/nccl-tests issue 212).
    bool sriov = false;
};

/// Checks that `plan` fits `cluster`: enough devices for tp x pp x dp, and a tensor group that
/// spans whole nodes when it is larger than one. Throws UserError naming `where`. build_job and
/// build_inference_job check it too; a caller checks first to fail before simulating devices.
void check_placement(const ParallelPlan& plan, const ClusterConfig& cluster, const std::string& where);

/// The job's communicators (tensor, data, pipeline pairs, expert) and their links, placed in
/// Megatron-LM's rank order (tensor ranks adjacent, then data, then pipeline); without
/// GPUDirect RDMA the NIC share is capped by the device's PCIe link to the host. Checks the
/// placement first (check_placement: UserError naming `where`).
JobModel place_job(const ParallelPlan& plan, const ClusterConfig& cluster, const JobOptions& options, const std::string& where);

/// The tensor-parallel collectives of one forward pass of chunk `shape` split over `tp` devices,
/// as Megatron-LM issues them (Shoeybi et al. 2019, section 3): an all-reduce of the pass's
/// activations (`act_bytes`: tokens x hidden x element bytes) for the vocabulary-parallel
/// embedding, two per layer (after the attention and the MLP), and an all-gather of the logits
/// shards (`logits_bytes`) at the head. None for tp = 1.
std::vector<CommOp> tensor_parallel_forward(const ChunkShape& shape, int64_t tp, double act_bytes, double logits_bytes);

/// Builds the job: per stage its chunks' passes (device-run times; tensor-parallel collectives
/// per layer as Megatron-LM issues them: two all-reduces of one activation in the forward, two
/// in the backward, two more in a full recomputation, one for the vocabulary-parallel embedding,
/// one for the LM head's input gradient and three small ones (4 bytes per token) for the
/// vocabulary-parallel cross-entropy (Shoeybi et al. 2019, section 3; each a reduce-scatter plus
/// an all-gather under sequence parallelism, Korthikanti et al. 2023), gradients in the weights'
/// precision, the tied embedding's gradient between the first and last stage, a stage's
/// activation sent to the next (under sequence parallelism its 1/tp shard, without the
/// scatter/gather); communicators placed in Megatron-LM's rank order (tensor ranks adjacent,
/// then data, then pipeline).
/// `runs` holds one ChunkRun per plan.kinds entry. Throws UserError naming `where` when the
/// cluster has too few devices or the tensor group does not fit its nodes.
JobModel build_job(const ParallelPlan& plan, const ClusterConfig& cluster, const std::vector<ChunkRun>& runs,
                   const JobOptions& options, const std::string& where);

/// One device simulation of one model chunk serving: its prefill and its decode step at a few
/// KV-cache lengths (times in ps, energies in J), for `batch` = the plan's microbatch sequences.
struct ChunkServeRun {
    double prefill_ps = 0, prefill_j = 0, prefill_macs = 0;
    double decode_macs = 0;  ///< one decode step's MACs at the shortest sampled KV length (trace only)
    std::vector<std::pair<int64_t, std::pair<double, double>>> decode;  ///< (KV length, (ps, J)), ascending
    /// The decode step at KV length `kv`: linear between the sampled lengths (clamped outside).
    std::pair<double, double> decode_at(int64_t kv) const;
};

/// Builds an inference job: the prompt's prefill, then `steps` decode steps (KV lengths prompt,
/// prompt + 1, ...), each pass of each stage its chunks' device time and Megatron's
/// tensor-parallel collectives (one all-reduce of the pass's activations for the vocabulary-
/// parallel embedding, two per layer, an all-gather of the last token's logits shards), the
/// stages handing the activations on and the last stage the next tokens back to the first.
/// The batch (plan.spec.microbatch sequences) flows through the stages as `microbatches`
/// microbatches (inference_microbatches), each pass costed per microbatch: `runs` holds one
/// ChunkServeRun per plan.kinds entry, simulated at batch / microbatches. Throws UserError like
/// build_job.
JobModel build_inference_job(const ParallelPlan& plan, const ClusterConfig& cluster, const std::vector<ChunkServeRun>& runs, int64_t steps,
                             int64_t microbatches, const JobOptions& options, const std::string& where);

/// How many microbatches a serving batch of `batch` sequences is split into over `pp` pipeline
/// stages so that every stage has work (pipelined prefill and decode): the largest divisor of the
/// batch not above pp (1 without pipeline parallelism).
int64_t inference_microbatches(int64_t batch, int64_t pp);

/// One stage device's peak memory by category, bytes.
struct StageMemory {
    double weights = 0, gradients = 0, optimizer_state = 0, activations = 0, workspace = 0;
    double total() const { return weights + gradients + optimizer_state + activations + workspace; }
};

/// The activations a device run of `chunk` holds that its pipeline stage does not: a chunk
/// before the last runs with an MSE loss on its output standing in for the next stage (its
/// backward needs a gradient to start from), and the pipeline holds neither that loss's target
/// nor the output it reads (Megatron-LM frees a sent output's storage: deallocate_output_tensor):
/// two activations of plan.activation_bytes (1/tp of them under sequence parallelism, whose
/// chunk output is the rank's share of the tokens); none for the last chunk.
double stand_in_loss_bytes(const ParallelPlan& plan, const ChunkShape& chunk);

/// Peak memory of each stage's device: its chunks' weights, gradients and optimizer state (ZeRO
/// stages 1-3 dividing optimizer state, gradients and weights by dp), the activations of the
/// microbatch in its backward pass (the device run's saved activations) and those every other
/// microbatch the schedule keeps in flight holds (forwards run without their backward yet:
/// under full recomputation each layer's input, else what its forward saved), and the largest
/// workspace. Under sequence parallelism the device runs are of sequence-parallel chunks
/// (LlmShard::sequence_parallel), so what tensor parallelism leaves whole on every rank already
/// counts 1/tp in them, as does the layer input a full recomputation keeps, and the gather
/// buffer's other (tp - 1)/tp of an activation is workspace; stand_in_loss_bytes are not counted.
std::vector<StageMemory> stage_memory(const ParallelPlan& plan, const std::vector<ChunkRun>& runs);

}  // namespace archsim
