#pragma once
// Request arrivals for a serving run: when each request comes and how long it is.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/serving/serving_sim.h"

namespace archsim {

/// How request lengths vary around their means (a serving block's `lengths` and `length_cv`):
/// "fixed" (every request at the mean), "uniform" (integers uniform on [1, 2 mean - 1]: the mean,
/// a coefficient of variation of about 0.58), "exponential" (1 + a geometric count with success
/// probability 1 / mean: the discrete exponential, mean exact, CV about 1) or "lognormal" (the
/// rounded draw of a lognormal of the mean and coefficient of variation `cv`, at least 1: heavy
/// tailed, as chat datasets' lengths are). Prompt and output lengths are drawn independently.
struct LengthDistribution {
    std::string kind = "fixed";
    double cv = 1.0;  ///< lognormal only: standard deviation over mean
};

/// A length of mean `mean` (>= 1) drawn from `d` with `rng`.
int64_t draw_length(int64_t mean, const LengthDistribution& d, std::mt19937_64& rng);

/// The load: `count` requests of `prompt` input and `output` output tokens on average (drawn from
/// `lengths` with their own random stream, so the arrivals do not change with it), arriving at `rate_per_s` on average (infinity: all at time 0) by `process`: "poisson"
/// (exponential gaps: a Poisson process, the default of vLLM's benchmark_serving.py and of the
/// TensorRT-LLM backend's benchmark client), "uniform" (every gap 1 / rate) or "bursty" (gamma
/// gaps of the same mean with a coefficient of variation of 4: bursts and lulls). `seed` makes a
/// run repeatable. Throws UserError for a rate not above 0, no requests, or an unknown process or
/// length distribution.
std::vector<ServingRequest> make_requests(int64_t count, double rate_per_s, const std::string& process, uint64_t seed, int64_t prompt,
                                          int64_t output, const LengthDistribution& lengths = {});

/// The requests of a replay file (the format's `dataloader: replay`, named by
/// `serving.replay_file`): a CSV with the header `arrival_s,prompt_tokens,output_tokens` and one
/// request per row, arrivals in seconds (not decreasing), lengths at least 1. Throws UserError
/// "FILE:LINE: reason" for a missing file or header, a malformed or out-of-order row, or no rows.
std::vector<ServingRequest> read_replay_csv(const std::string& path);

}  // namespace archsim
