#pragma once
// The order in which each pipeline stage runs its microbatches' forward and backward passes:
// GPipe, 1F1B (PipeDream-Flush) and Megatron-LM's interleaved 1F1B with virtual stages.
#include <cstdint>
#include <string>
#include <vector>

namespace archsim {

/// One pass of one microbatch through one model chunk of a stage.
struct PipeOp {
    bool forward = true;
    int64_t chunk = 0;       ///< the stage's model chunk (0..virtual_stages-1); layers chunk x pp + stage
    int64_t microbatch = 0;
};

/// The schedules a job may name: "gpipe", "1f1b", "interleaved".
const std::vector<std::string>& pipeline_schedule_names();

/// Per stage (0..pp-1), its ops in program order, for `m` microbatches over `pp` stages with `v`
/// model chunks per stage:
/// - gpipe (Huang et al. 2019): every forward, then every backward in reverse microbatch order;
/// - 1f1b (PipeDream-Flush, Narayanan et al. 2021 section 2.2.1): stage r runs min(pp - r - 1, m)
///   warm-up forwards, then alternates one forward and one backward, then the remaining backwards;
/// - interleaved (Narayanan et al. SC21 section 2.2.2; Megatron-LM's
///   forward_backward_pipelining_with_interleaving): the v chunks of a stage take microbatches in
///   groups of pp, (pp - r - 1) x 2 + (v - 1) x pp warm-up forwards (all of them when m == pp), then
///   1F1B, then the remaining backwards; forward k runs chunk (k mod pp v) / pp on microbatch
///   (k / pp v) pp + k mod pp, backward k the chunks in reverse.
/// v must be 1 unless the schedule is interleaved, and m a multiple of pp for interleaved.
/// Throws std::invalid_argument otherwise (the plan validates user input first).
std::vector<std::vector<PipeOp>> pipeline_schedule(const std::string& schedule, int64_t pp, int64_t v, int64_t m);

/// The pipeline bubble's share of an ideal iteration, (pp - 1) / (v m) of the compute time
/// (Narayanan et al. SC21, section 2.2: bubble time fraction of 1F1B, divided by v interleaved).
double bubble_fraction(int64_t pp, int64_t v, int64_t m);

}  // namespace archsim
