#pragma once
// The figures of a training step (archsim run --train): metrics.json's `training` object and the
// lines printed after the run's table.
#include <string>

#include <nlohmann/json.hpp>

namespace archsim {
struct Metrics;
struct TrainingStep;
}  // namespace archsim

namespace archsim::cli {

/// The `training` object of a run of training step `step` reduced to `m`: optimizer, loss, samples (and tokens) per step and per second, trained
/// parameters, model FLOPs (2 x the MACs of the forward and gradient operators: what the step
/// needs) and hardware FLOPs (2 x the MACs executed, total.flops), MFU = model FLOPs / (step
/// time x peak FLOP/s of the machine's MAC array), and per phase (forward, loss, backward,
/// optimizer) its time, energy, MACs and the share of its time in compute-bound operators.
nlohmann::ordered_json training_json(const TrainingStep& step, const Metrics& m);

/// The same as a few human lines.
std::string training_text(const nlohmann::ordered_json& training);

}  // namespace archsim::cli
