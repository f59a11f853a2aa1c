#pragma once
// The memory a training step holds on its device, by category, over the schedule.
#include <cstdint>
#include <string>

#include "workloads/graph/op_graph.h"
#include "workloads/training/training_step.h"

namespace archsim {

/// Bytes held, by what they hold.
struct MemoryBytes {
    int64_t weights = 0;            ///< trained parameters and constant buffers, in the run's precision
    int64_t gradients = 0;          ///< weight gradient buffers
    int64_t optimizer_state = 0;    ///< moments, momentum, fp32 master weights
    int64_t saved_activations = 0;  ///< forward values (and model inputs) the backward pass reads, while held
    int64_t workspace = 0;          ///< every other value while it lives: activation gradients, forward temporaries
    /// The sum of the five.
    int64_t total() const { return weights + gradients + optimizer_state + saved_activations + workspace; }
};

/// A training step's memory over its schedule.
struct MemoryFootprint {
    MemoryBytes at_peak;   ///< each category when the total peaks
    MemoryBytes largest;   ///< each category's own largest value over the step
    int64_t peak_bytes = 0;        ///< at_peak.total()
    /// Saved activations held when the last forward kernel ends: what a microbatch waiting for
    /// its backward keeps (a pipeline stage holds one such set per microbatch in flight); the
    /// largest figure adds what recomputation makes again for the backward.
    int64_t saved_after_forward = 0;
    std::string peak_kernel;       ///< the kernel running when the total peaks
};

/// The footprint of `plan` (the kernels of `step.graph` as a runtime lowered them, or the step's
/// graph itself) run in its topological order (the order the engine issues kernels), from tensor
/// lifetimes: weights, gradients and optimizer state are held for the whole step (a framework's
/// parameter, .grad and state buffers); every other buffer from the kernel that writes it (a
/// model input: that reads it first) to the last kernel that reads it or writes into it in place
/// (TrainingStep::storage); a kernel's inputs and outputs are all held while it runs. A buffer
/// the forward pass (or a recomputation) makes and a loss or backward kernel reads is a saved
/// activation, any other a workspace. Tensors inside a fused kernel (read by no kernel) take no
/// memory. A float tensor takes `float_bytes` per element (the run's operand precision) unless
/// it keeps its dtype (Tensor::keeps_dtype); integer and bool tensors their own size. Not
/// counted: a library's scratch workspace inside a kernel (cuDNN, cuBLAS), allocator
/// fragmentation, the runtime's own context.
MemoryFootprint memory_footprint(const OpGraph& plan, const TrainingStep& step, int64_t float_bytes);

}  // namespace archsim
