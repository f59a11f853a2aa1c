#pragma once
// Request arrivals for a serving run: when each request comes and how long it is.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/serving/serving_sim.h"

namespace archsim {

/// The load: `count` requests of `prompt` input and `output` output tokens (fixed lengths: the
/// means), arriving at `rate_per_s` on average (infinity: all at time 0) by `process`: "poisson"
/// (exponential gaps: a Poisson process, the default of vLLM's benchmark_serving.py and of the
/// TensorRT-LLM backend's benchmark client), "uniform" (every gap 1 / rate) or "bursty" (gamma
/// gaps of the same mean with a coefficient of variation of 4: bursts and lulls). `seed` makes a
/// run repeatable. Throws UserError for a rate not above 0, no requests, or an unknown process.
std::vector<ServingRequest> make_requests(int64_t count, double rate_per_s, const std::string& process, uint64_t seed, int64_t prompt,
                                          int64_t output);

/// The requests of a replay file (the format's `dataloader: replay`, named by
/// `serving.replay_file`): a CSV with the header `arrival_s,prompt_tokens,output_tokens` and one
/// request per row, arrivals in seconds (not decreasing), lengths at least 1. Throws UserError
/// "FILE:LINE: reason" for a missing file or header, a malformed or out-of-order row, or no rows.
std::vector<ServingRequest> read_replay_csv(const std::string& path);

}  // namespace archsim
