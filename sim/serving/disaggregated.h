#pragma once
// Prefill/decode disaggregation (Splitwise, Patel et al., ISCA 2024; DistServe, Zhong et al., OSDI
// 2024): prefill instances run only prompts, each finished prompt's KV cache is sent over the
// interconnect to a decode instance, which runs only decode iterations. The two phases no longer
// share iterations, so a long prompt never stalls the decoding requests, at the price of the KV
// transfer and of two groups of devices sized apart.
#include <cstdint>
#include <vector>

#include "sim/serving/serving_sim.h"

namespace archsim {

/// How the replicas are split and how a prompt's KV cache moves between them.
struct DisaggregatedConfig {
    int64_t prefill_replicas = 1, decode_replicas = 1;  ///< instances of each kind (each a device or a tensor group)
    double kv_bytes_per_token = 0;  ///< KV bytes one device sends per prompt token (its tensor shard)
    double link_bytes_per_s = 0;    ///< the link a device sends them over, sustained bytes/s
    double link_latency_s = 0;      ///< its per-transfer latency, s
};

/// What a disaggregated run measured: the requests' latencies end to end (`combined`: TTFT at the
/// prefill instance, ITL and TPOT across the hand-over, whose gap counts as an inter-token
/// latency; ITL percentiles from the merged histograms, within 1.2%), and each kind of
/// instance's own run (prefill replica 0's, decode replica 0's: their energy, iterations,
/// timelines).
struct DisaggregatedResult {
    ServingResult combined, prefill, decode;
    std::vector<ServingRequest> served;  ///< the requests `combined` describes, in its order (decode replica 0's)
    double kv_transfer_s = 0;  ///< one prompt's KV transfer, mean over the requests, s
};

/// Simulates `requests` (sorted by arrival) dealt to the prefill replicas in turn (each prefill
/// replica simulated: prompts only, `prefill_cfg`), their KV sent on when the prompt's first token
/// is out, and the hand-overs, in order of arrival at the decode side, dealt to the decode
/// replicas in turn (decode replica 0 simulated: decodes only, `decode_cfg`, a request's prompt
/// and first token already in its cache). Back-pressure (a prefill instance holding KV while the
/// decode side is full) is not modeled: a hand-over waits in the decode instance's queue. Throws
/// UserError as simulate_serving does, or for fewer than one replica of a kind.
DisaggregatedResult simulate_disaggregated(const std::vector<ServingRequest>& requests, const SchedulerConfig& prefill_cfg,
                                           const SchedulerConfig& decode_cfg, const DisaggregatedConfig& cfg, const IterationCostFn& cost);

}  // namespace archsim
