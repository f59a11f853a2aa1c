#pragma once
// `archsim run FILE.toml#NAME` for an llm workload: prefill and decode simulated as separate runs,
// combined into serving metrics.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/api/run_model.h"

namespace archsim {

/// True if `model` names an llm workload without a phase ("FILE.toml#NAME").
bool is_llm_workload(const std::string& model);

/// An llm workload `model` ("FILE.toml#NAME", its fields `sets` applied) run as a training step:
/// sets `train` when the entry's sequence.generate is 0 (the format's training-only entry) or its
/// mode is "train", and returns the workload that step trains ("FILE.toml#NAME@train"); its
/// precision is decided by the one rule (sim/engine/run_choice.h) like any run's.
std::string llm_training_workload(const std::string& model, const std::vector<std::string>& sets, bool& train);

/// Simulates the prefill (the whole prompt) and the decode phase at four KV lengths across the
/// generation (prompt, and one third, two thirds and the whole of the way through), each
/// `archsim run` of NAME@prefill / NAME@decode=L in a child process (sim/api/process_pool.h) under
/// OUT/prefill and OUT/decode_kv<L>; then integrates the decode steps (step time and energy
/// interpolated linearly in the KV length between the simulated points, summed over every step)
/// and returns what it writes to OUT/llm.json: time to first token (the prefill), time per output
/// token (mean decode step), tokens/s (batch x generated tokens over the whole request), energy per
/// token, each phase's and each sampled point's latency and energy (the serving metrics of
/// traces/metric_catalog.h). The run precision is the weights' (precision.weights) unless
/// `precision` is given. Each phase's trace is written at `detail` (run --detail), and runs with
/// `reference` (run --reference) and `mapper` (run --mapper); `note` hears one line on what is about to be simulated. Throws
/// UserError when a phase fails (naming its log) or for workload sets (not applied to the serving
/// phases: write the values into the entry).
nlohmann::json run_llm_serving(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
                               const std::vector<std::string>& sets, const std::string& detail = "full", bool reference = false,
                               const std::string& mapper = "auto", const std::function<void(const std::string&)>& note = {});

}  // namespace archsim
