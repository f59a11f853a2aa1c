#pragma once
// Pricing a parallel plan before (or from) its device runs, for the plan search
// (sim/api/plan_search.cpp): its chunks' times from their MACs over the device's peak at a
// measured device efficiency, and their memory from what device runs of the same tensor split,
// microbatch and recomputation kept per layer. Internal to sim/api.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cluster/job_builder.h"
#include "workloads/parallel/parallel_plan.h"

namespace archsim {

/// What the search prices a plan's chunks with: per pass, device time over roofline time (1: the
/// roofline, a lower bound), and the memory figures a device run gives; what device runs of one
/// tensor-parallel size, expert split, microbatch and recomputation measured, or (before any)
/// what the reference plan's runs and Korthikanti et al.'s counts suggest.
struct Efficiency {
    bool bound = true;  ///< times at the roofline with chunk_macs' lower-bound recomputation
    /// Device time over roofline time per pass; the recomputation's over its estimate basis
    /// (a full recomputation: the chunk's layers' forward; selective: chunk_macs').
    double forward = 1, backward = 1, recompute = 1;
    double optimizer_ps_per_param = 0, optimizer_bytes_per_param = 0;
    /// One microbatch's activations a layer keeps once its forward ends, as the device runs of
    /// its sequence-parallel setting measure them; -1: estimate it.
    double after_forward_per_layer = -1;
    double backward_extra = -1;  ///< what a chunk's backward adds to that (recomputed values); -1: estimate it
    double workspace = 0;        ///< a chunk's workspace, bytes
};

/// The device runs of one tensor-parallel size, expert split, microbatch, recomputation and
/// sequence parallelism (at tp > 1) measure the same per layer, whatever their chunks' sizes.
using RunKey = std::tuple<int64_t, int64_t, int64_t, std::string, bool>;
RunKey run_key(const ParallelismSpec& s);

/// The chunk runs `plan` would have at `eff` (one per plan.kinds entry): times from chunk_macs
/// over `peak_macs_per_s`, parameters from chunk_parameters (workloads/parallel/plan_space.h);
/// with eff.bound the times are lower bounds and the memory is left 0, else the memory follows
/// eff (weights and gradients at the weights' element size, optimizer state per parameter, the
/// activations per layer with the stand-in loss's two activations on a chunk before the last,
/// as stage_memory counts them).
std::vector<ChunkRun> modeled_runs(const ParallelPlan& plan, double peak_macs_per_s, const Efficiency& eff);

/// What `runs` (the device runs of `plan`'s chunk kinds, in order) measured against
/// modeled_runs at the roofline: each pass's device time over its roofline time, the optimizer's
/// time and state per parameter, the activations per layer after the forward (from a chunk
/// without the embedding or head when the plan has one), what the backward adds, the workspace.
Efficiency measured(const ParallelPlan& plan, const std::vector<ChunkRun>& runs, double peak_macs_per_s);

}  // namespace archsim
