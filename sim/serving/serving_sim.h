#pragma once
// Request-level LLM serving on one model replica, as a discrete-event simulation: requests arrive,
// a scheduler batches them iteration by iteration (static batching, or continuous batching as
// Orca and vLLM do it, with an optional token budget and chunked prefill as in Sarathi-Serve), the
// KV cache is held in fixed-size blocks (PagedAttention) and a request that does not fit waits or
// is preempted, and each iteration takes the time and energy a cost function gives (from
// archsim's device models: sim/serving/iteration_cost.h). Pure: no SystemC, no files.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/serving/latency_histogram.h"

namespace archsim {

/// One request: when it arrives (s) and its prompt and output lengths (tokens). `kv_ready`: its
/// prompt's KV cache arrives with it (handed over by a prefill instance: sim/serving/
/// disaggregated.h), so it starts decoding at once.
struct ServingRequest {
    double arrival_s = 0;
    int64_t prompt = 0, output = 0;
    bool kv_ready = false;
};

/// A prefill chunk of one request in an iteration: `tokens` prompt tokens after `offset` already
/// in its KV cache.
struct PrefillChunk {
    int64_t tokens = 0, offset = 0;
};

/// What one iteration (one forward pass of the batch) runs.
struct IterationShape {
    int64_t tokens = 0;          ///< tokens through the token-linear kernels: decode sequences + prefill chunk tokens
    int64_t head_tokens = 0;     ///< tokens the LM head runs on: decode sequences + prefills finished this iteration
    int64_t decode_seqs = 0;     ///< sequences decoding one token
    int64_t decode_kv_tokens = 0;  ///< KV tokens those sequences attend over, summed
    std::vector<PrefillChunk> prefill;
};

/// An iteration's time (s) and energy (J).
struct IterationCostValue {
    double time_s = 0, energy_j = 0;
};
using IterationCostFn = std::function<IterationCostValue(const IterationShape&)>;

/// How the engine batches (engine profiles set these: docs/serving.md).
struct SchedulerConfig {
    std::string policy = "continuous";  ///< "continuous" (iteration-level) or "static" (a batch runs to its end)
    int64_t max_batch = 256;            ///< sequences in flight at most
    int64_t max_num_tokens = 8192;      ///< tokens an iteration runs at most (prefill chunks + decode tokens)
    bool chunked_prefill = false;       ///< a prompt may be split over iterations to fill the token budget
    bool mixed_batches = true;          ///< prefills and decodes share iterations (TensorRT-LLM); false: a prefill pauses decoding (vLLM v0)
    int64_t kv_block_tokens = 64;       ///< tokens per KV block
    int64_t kv_capacity_tokens = 0;     ///< KV cache capacity in tokens (blocks x block tokens); 0 = unlimited
    /// true: a request is admitted only when blocks for its prompt and whole output are free, and
    /// is never preempted (TensorRT-LLM's GUARANTEED_NO_EVICT); false: blocks are taken as tokens
    /// come and the newest request is preempted when none is left (vLLM; MAX_UTILIZATION).
    bool reserve_output = true;
    /// What a preempted request loses: "recompute" (its KV is dropped and rebuilt by a new prefill
    /// of its prompt and the tokens it made) or "swap" (its KV blocks are copied to host memory
    /// and back when blocks are free again; swapped requests come back before any waiting one is
    /// admitted, as vLLM's scheduler does). A swap that does not fit the host space recomputes.
    std::string preemption = "recompute";
    double swap_bytes_per_token = 0;   ///< KV bytes a swap moves per token (per device)
    double swap_bytes_per_s = 0;       ///< the device-host link's rate for swaps, bytes/s (PCIe)
    int64_t swap_capacity_tokens = 0;  ///< host swap space in tokens; 0: no swap space
    double iteration_overhead_s = 0;    ///< the engine's own time per iteration (scheduling, sampling), s
};

/// Mean and percentiles of a latency, s.
struct LatencyStats {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0;
    size_t n = 0;
};

/// One sample of the engine's state over time.
struct ServingSample {
    double t_s = 0;
    int64_t queued = 0, running = 0, kv_tokens = 0;
    double energy_j = 0, busy_s = 0;  ///< the iterations' energy and time before this one, summed from the start
    int64_t output_tokens = 0;        ///< tokens emitted before this iteration, summed from the start
};

/// When one request passed each stage, s: it arrived, was first admitted to the batch, got its
/// first token and its last.
struct RequestTimes {
    double arrival_s = 0, admitted_s = 0, first_token_s = 0, last_token_s = 0;
};

/// What a serving run measured.
struct ServingResult {
    size_t requests = 0, completed = 0, preemptions = 0, iterations = 0;
    size_t swaps_out = 0, swaps_in = 0;  ///< preemptions by swap, and their returns
    double swap_s = 0;                   ///< time the swaps' copies added to iterations
    int64_t swapped_tokens = 0;          ///< KV tokens copied out (each comes back as many)
    double duration_s = 0;             ///< first arrival to last completion
    double achieved_requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
    LatencyStats ttft, itl, tpot, e2e;  ///< time to first token, inter-token latency, time per output token, end to end
    LatencyHistogram ttft_hist, itl_hist, tpot_hist, e2e_hist;  ///< the same distributions, to merge across runs (a schedule's phases)
    double energy_j = 0, busy_s = 0;    ///< the iterations' energy and time
    int64_t peak_kv_tokens = 0, peak_queue = 0;
    int64_t peak_running = 0;           ///< requests in one iteration's batch at most (what a max_batch at or above it never limits)
    int64_t peak_iteration_tokens = 0;  ///< tokens one iteration ran at most (prefill chunks + decode tokens)
    /// Iterations in which the token budget held work back (a decode token, a prompt waiting for
    /// a budget it fits in, or a prompt's chunk cut short): 0 means a larger budget, or chunked
    /// prefill, would have run every iteration alike.
    size_t budget_limited_iterations = 0;
    /// Iterations at whose start a waiting request could not be admitted for want of KV-cache
    /// blocks (the queue's head waits): 0, with no preemption, means the KV cache never bound,
    /// and the scheduler's block policy (reserving the whole output or not) ran alike.
    size_t kv_limited_iterations = 0;
    std::vector<ServingSample> samples;  ///< the state at evenly spaced iterations' starts, 1,000 to 2,000 of them (all of a shorter run)
    std::vector<RequestTimes> request_times;  ///< per request, in the input's order
};

/// Latency objectives a request must meet to count as goodput (vLLM benchmark_serving.py's
/// --goodput: TTFT, TPOT and end-to-end latency, each optional); 0 = no objective.
struct ServingSlo {
    double ttft_s = 0, tpot_s = 0, e2e_s = 0;
    bool any() const { return ttft_s > 0 || tpot_s > 0 || e2e_s > 0; }
};

/// Requests of `r` (served from `requests`) that met every objective of `slo`, and the goodput:
/// those requests / the run's duration, requests/s (vLLM's request_goodput). A request's TPOT is
/// (last - first token) / (output - 1), 0 for a single token.
struct SloResult {
    size_t met = 0;
    double attainment = 0;           ///< met / requests
    double goodput_requests_per_s = 0;
};
SloResult slo_attainment(const ServingResult& r, const std::vector<ServingRequest>& requests, const ServingSlo& slo);

/// Sees every iteration as it runs: its start (s), its time (s, the swaps' copies included) and
/// what it ran (a trace writer, say).
using IterationObserver = std::function<void(double start_s, double time_s, const IterationShape& shape)>;

/// The latency stats of `v` (mean, and the 50th, 90th, 99th percentiles by linear interpolation
/// between order statistics, numpy's default); zeros for none.
LatencyStats latency_stats(std::vector<double> v);

/// The latency stats of a histogram: its exact mean and count, its percentiles within half a bin
/// (LatencyHistogram::percentile).
LatencyStats histogram_stats(const LatencyHistogram& h);

/// One request's latencies from its stage times and lengths, s: time to first token, end to end,
/// and time per output token ((last - first token) / (output - 1); 0, and `has_tpot` false, for a
/// single token).
struct RequestLatency {
    double ttft = 0, e2e = 0, tpot = 0;
    bool has_tpot = false;
};
RequestLatency request_latency(const RequestTimes& t, const ServingRequest& q);

/// Fills `r`'s TTFT, TPOT and e2e (stats and histograms) and its rates (over r.duration_s) from
/// r.request_times and `requests`, the requests they describe in the same order. ITL, which needs
/// every token's time, is the caller's.
void summarize_requests(ServingResult& r, const std::vector<ServingRequest>& requests);

/// Simulates `requests` (sorted by arrival) on one replica under `cfg`, each iteration costed by
/// `cost`. TTFT: arrival to the end of the iteration that finishes the prompt (its first token);
/// ITL: the gaps between a request's successive tokens after the first; TPOT: (e2e - TTFT) /
/// (output - 1) per request of two or more tokens; e2e: arrival to the last token. Throws
/// UserError when a request can never run: its prompt exceeds max_num_tokens without chunked
/// prefill, or its KV cache (prompt + output) exceeds the capacity. Without reserving, a request
/// whose next token needs a block when none is free preempts the newest request not yet scheduled
/// in the iteration (itself, when it is that one). `observe`, when given, sees every iteration.
ServingResult simulate_serving(const std::vector<ServingRequest>& requests, const SchedulerConfig& cfg, const IterationCostFn& cost,
                               const IterationObserver& observe = {});

}  // namespace archsim
