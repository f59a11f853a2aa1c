#pragma once
// The figures of a training step (archsim run --train): metrics.json's `training` object and the
// lines printed after the run's table.
#include <string>

#include <nlohmann/json.hpp>

namespace archsim {
struct Metrics;
struct TrainingStep;
struct MemoryFootprint;
class OpGraph;
}  // namespace archsim

namespace archsim {

/// Bytes in a GiB (2^30), for the footprints and capacities people read.
constexpr double kBytesPerGiB = 1073741824.0;

/// The `training` object of a run of training step `step` (its kernels `plan`) reduced to `m`:
/// optimizer, loss, recomputation, microbatches, the step time (step_time_s: the run's latency,
/// less the setup's when the run includes it), samples (and tokens) per step and per second, trained
/// parameters, model FLOPs (2 x the MACs of the forward and gradient operators: what the step
/// needs, Megatron-LM's and PaLM's definition) and hardware FLOPs (2 x the MACs executed,
/// total.flops; recomputation's share given apart), MFU = model FLOPs / (step time x peak FLOP/s
/// of the machine's MAC array), the step's energy, per phase (setup when included, forward, loss,
/// backward, recompute, optimizer) its time, energy, MACs, floating-point operations (2 per MAC
/// plus the vector operations of its kernels), utilization (2 x MACs / (time x peak FLOP/s)) and
/// the share of its time in compute-bound operators, and `memory`: the
/// footprint `mem` at its peak by category, each category's largest value, and whether the peak
/// fits in `capacity_bytes` (0: the machine gives no capacity, not checked).
nlohmann::ordered_json training_json(const TrainingStep& step, const OpGraph& plan, const Metrics& m, const MemoryFootprint& mem,
                                     double capacity_bytes);

/// The same as a few human lines.
std::string training_text(const nlohmann::ordered_json& training);

}  // namespace archsim
