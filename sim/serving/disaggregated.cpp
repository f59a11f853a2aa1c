#include "sim/serving/disaggregated.h"

#include <algorithm>
#include <numeric>

#include "sim/base/error.h"

namespace archsim {

DisaggregatedResult simulate_disaggregated(const std::vector<ServingRequest>& reqs, const SchedulerConfig& prefill_cfg,
                                           const SchedulerConfig& decode_cfg, const DisaggregatedConfig& cfg, const IterationCostFn& cost) {
    if (cfg.prefill_replicas < 1 || cfg.decode_replicas < 1)
        throw UserError("serving.prefill_replicas", "disaggregation needs at least one prefill and one decode replica");
    DisaggregatedResult out;
    if (reqs.empty()) return out;
    const size_t n = reqs.size(), P = size_t(cfg.prefill_replicas);
    // the prefill instances: each request's prompt and its first token
    std::vector<double> admitted(n), first(n), handover(n);
    double transfer_sum = 0;
    for (size_t p = 0; p < P && p < n; ++p) {
        std::vector<ServingRequest> mine;
        std::vector<size_t> ids;
        for (size_t i = p; i < n; i += P) mine.push_back({reqs[i].arrival_s, reqs[i].prompt, 1}), ids.push_back(i);
        const ServingResult r = simulate_serving(mine, prefill_cfg, cost);
        for (size_t k = 0; k < ids.size(); ++k) {
            const size_t i = ids[k];
            admitted[i] = r.request_times[k].admitted_s, first[i] = r.request_times[k].first_token_s;
            const double t = cfg.link_bytes_per_s > 0 ? double(reqs[i].prompt) * cfg.kv_bytes_per_token / cfg.link_bytes_per_s : 0.0;
            handover[i] = first[i] + cfg.link_latency_s + t;
            transfer_sum += cfg.link_latency_s + t;
        }
        if (p == 0) out.prefill = r;
    }
    out.kv_transfer_s = transfer_sum / double(n);
    // the decode side: hand-overs in order of arrival there, dealt in turn; decode replica 0's
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return handover[a] < handover[b]; });
    std::vector<size_t> ids;
    std::vector<ServingRequest> mine;
    for (size_t k = 0; k < n; k += size_t(cfg.decode_replicas)) {
        const size_t i = order[k];
        if (reqs[i].output < 2) continue;  // done at the prefill instance
        ids.push_back(i);
        mine.push_back({handover[i], reqs[i].prompt + 1, reqs[i].output - 1, true});  // the first token's KV is computed here
    }
    ServingResult& c = out.combined;
    if (!mine.empty()) out.decode = simulate_serving(mine, decode_cfg, cost);
    // decode replica 0's requests end to end (single-token requests are its share of the others):
    // the first token from the prefill instance, the last from the decode instance
    c.itl_hist = out.decode.itl_hist;
    for (size_t k = 0; k < ids.size(); ++k) {
        const size_t i = ids[k];
        const RequestTimes& d = out.decode.request_times[k];
        c.itl_hist.add(d.first_token_s - first[i]);  // the hand-over: token 1 at the prefill instance, token 2 here
        c.request_times.push_back({reqs[i].arrival_s, admitted[i], first[i], d.last_token_s});
        out.served.push_back(reqs[i]);
    }
    c.requests = c.completed = ids.size();
    c.itl = histogram_stats(c.itl_hist);
    // decode replica 0's share of the load, from its first request's arrival to its last token
    double t0 = ids.empty() ? 0.0 : reqs[ids.front()].arrival_s, t1 = 0;
    for (size_t i : ids) t0 = std::min(t0, reqs[i].arrival_s);
    for (const RequestTimes& q : c.request_times) t1 = std::max(t1, q.last_token_s);
    c.duration_s = t1 - t0;
    summarize_requests(c, out.served);
    c.iterations = out.prefill.iterations + out.decode.iterations;
    c.preemptions = out.prefill.preemptions + out.decode.preemptions;
    c.peak_kv_tokens = out.decode.peak_kv_tokens, c.peak_queue = std::max(out.prefill.peak_queue, out.decode.peak_queue);
    c.peak_running = std::max(out.prefill.peak_running, out.decode.peak_running);
    c.peak_iteration_tokens = std::max(out.prefill.peak_iteration_tokens, out.decode.peak_iteration_tokens);
    c.budget_limited_iterations = out.prefill.budget_limited_iterations + out.decode.budget_limited_iterations;
    c.kv_limited_iterations = out.prefill.kv_limited_iterations + out.decode.kv_limited_iterations;
    c.samples = out.decode.samples;
    return out;
}

}  // namespace archsim
