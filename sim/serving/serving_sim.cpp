#include "sim/serving/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "sim/base/error.h"

namespace archsim {

namespace {

/// A request in the engine.
struct Live {
    int64_t prompt = 0;      ///< tokens to prefill: the prompt, and after a recompute preemption the tokens generated so far too
    int64_t prefilled = 0;   ///< of them, in the KV cache
    int64_t generated = 0;   ///< output tokens emitted
    int64_t blocks = 0;      ///< KV blocks held (on the device, or in host memory while swapped)
    bool swapped = false;    ///< preempted by swap: its blocks in host memory
    double admitted_s = -1, first_token_s = -1, last_token_s = -1;
};

int64_t blocks_for(int64_t tokens, int64_t block) { return (tokens + block - 1) / block; }

}  // namespace

LatencyStats latency_stats(std::vector<double> v) {
    LatencyStats s;
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / double(v.size());
    auto pct = [&](double p) {
        const double pos = p / 100.0 * double(v.size() - 1);
        const size_t lo = static_cast<size_t>(std::floor(pos));
        const size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
    };
    s.p50 = pct(50), s.p90 = pct(90), s.p99 = pct(99);
    return s;
}

LatencyStats histogram_stats(const LatencyHistogram& h) {
    return {h.mean(), h.percentile(50), h.percentile(90), h.percentile(99), size_t(h.count())};
}

RequestLatency request_latency(const RequestTimes& t, const ServingRequest& q) {
    RequestLatency l;
    l.ttft = t.first_token_s - t.arrival_s, l.e2e = t.last_token_s - t.arrival_s;
    l.has_tpot = q.output > 1;
    if (l.has_tpot) l.tpot = (t.last_token_s - t.first_token_s) / double(q.output - 1);
    return l;
}

void summarize_requests(ServingResult& r, const std::vector<ServingRequest>& requests) {
    std::vector<double> ttft, tpot, e2e;
    int64_t out_tokens = 0, all_tokens = 0;
    for (size_t i = 0; i < r.request_times.size(); ++i) {
        const RequestLatency l = request_latency(r.request_times[i], requests[i]);
        ttft.push_back(l.ttft), e2e.push_back(l.e2e);
        if (l.has_tpot) tpot.push_back(l.tpot);
        out_tokens += requests[i].output, all_tokens += requests[i].prompt + requests[i].output;
    }
    r.ttft = latency_stats(ttft), r.tpot = latency_stats(tpot), r.e2e = latency_stats(e2e);
    for (const auto& [v, h] : {std::pair{&ttft, &r.ttft_hist}, std::pair{&tpot, &r.tpot_hist}, std::pair{&e2e, &r.e2e_hist}})
        for (const double x : *v) h->add(x);
    if (r.duration_s > 0) {
        r.achieved_requests_per_s = double(r.request_times.size()) / r.duration_s;
        r.output_tokens_per_s = double(out_tokens) / r.duration_s;
        r.total_tokens_per_s = double(all_tokens) / r.duration_s;
    }
}

SloResult slo_attainment(const ServingResult& r, const std::vector<ServingRequest>& requests, const ServingSlo& slo) {
    SloResult s;
    for (size_t i = 0; i < r.request_times.size() && i < requests.size(); ++i) {
        const RequestLatency l = request_latency(r.request_times[i], requests[i]);
        if ((slo.ttft_s <= 0 || l.ttft <= slo.ttft_s) && (slo.tpot_s <= 0 || l.tpot <= slo.tpot_s) && (slo.e2e_s <= 0 || l.e2e <= slo.e2e_s)) ++s.met;
    }
    s.attainment = r.request_times.empty() ? 0.0 : double(s.met) / double(r.request_times.size());
    s.goodput_requests_per_s = r.duration_s > 0 ? double(s.met) / r.duration_s : 0.0;
    return s;
}

ServingResult simulate_serving(const std::vector<ServingRequest>& reqs, const SchedulerConfig& cfg, const IterationCostFn& cost,
                               const IterationObserver& observe) {
    const int64_t B = std::max<int64_t>(1, cfg.kv_block_tokens);
    const int64_t cap_blocks = cfg.kv_capacity_tokens > 0 ? cfg.kv_capacity_tokens / B : INT64_MAX;
    const bool continuous = cfg.policy != "static";
    for (size_t i = 0; i < reqs.size(); ++i) {
        const ServingRequest& r = reqs[i];
        if (r.prompt < 1 || r.output < 1) throw UserError("serving", "request " + std::to_string(i) + " has no prompt or no output tokens");
        if (continuous && !cfg.chunked_prefill && !r.kv_ready && r.prompt > cfg.max_num_tokens)
            throw UserError("serving.max_num_tokens", "a prompt of " + std::to_string(r.prompt) + " tokens exceeds the token budget of " +
                                                          std::to_string(cfg.max_num_tokens) + " and chunked prefill is off");
        const int64_t need = blocks_for(r.prompt + r.output, B);  // it must be able to finish alone
        if (need > cap_blocks)
            throw UserError("serving", "the KV cache holds " + std::to_string(cap_blocks * B) + " tokens, less than one request needs (" +
                                           std::to_string(need * B) + ")");
        if (i > 0 && r.arrival_s < reqs[i - 1].arrival_s) throw UserError("serving", "requests are not sorted by arrival");
    }
    ServingResult out;
    out.requests = reqs.size();
    if (reqs.empty()) return out;
    std::vector<Live> live(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) live[i].prompt = reqs[i].prompt, live[i].prefilled = reqs[i].kv_ready ? reqs[i].prompt : 0;
    std::deque<size_t> waiting, swapped;  // swapped: preempted by swap, their blocks in host memory
    std::vector<size_t> running;  // in admission order
    std::vector<double> itl;
    int64_t emitted = 0;  // output tokens so far
    int64_t used_blocks = 0;
    const bool swap = cfg.preemption == "swap" && cfg.swap_bytes_per_s > 0;
    const int64_t swap_cap_blocks = swap ? cfg.swap_capacity_tokens / B : 0;
    int64_t swap_used_blocks = 0, swap_moved_blocks = 0;  // in host memory; copied in this iteration
    size_t next = 0;
    double t = reqs.front().arrival_s;
    const double t0 = t;
    // the state at every `stride`-th iteration; when 2,000 are held, every other one goes and the
    // stride doubles, so a long run keeps 1,000 to 2,000 evenly spaced samples in bounded memory
    std::vector<ServingSample> samples;
    size_t stride = 1;

    auto admit = [&]() {
        if (!continuous && !running.empty()) return;
        while (!swapped.empty() && static_cast<int64_t>(running.size()) < cfg.max_batch) {  // swapped requests first, in order
            const size_t id = swapped.front();
            if (used_blocks + live[id].blocks > cap_blocks) break;
            used_blocks += live[id].blocks, swap_used_blocks -= live[id].blocks, swap_moved_blocks += live[id].blocks;
            live[id].swapped = false;
            running.push_back(id);
            swapped.pop_front();
            ++out.swaps_in;
        }
        if (!swapped.empty()) return;  // no new request while one is swapped out (vLLM)
        while (!waiting.empty() && static_cast<int64_t>(running.size()) < cfg.max_batch) {
            const size_t id = waiting.front();
            Live& q = live[id];
            const int64_t need = blocks_for(cfg.reserve_output ? q.prompt + (reqs[id].output - q.generated) : q.prompt + 1, B);
            if (used_blocks + need > cap_blocks) {  // first come, first served: the head waits
                ++out.kv_limited_iterations;
                break;
            }
            q.blocks = need, used_blocks += need;
            if (q.admitted_s < 0) q.admitted_s = t;
            running.push_back(id);
            waiting.pop_front();
        }
    };
    // the newest running request not yet scheduled in this iteration gives its blocks back (vLLM
    // preempts the lowest priority, the latest to arrive): swapped out to host memory when it
    // fits there, else dropped to start over (recompute); returns it
    auto preempt_newest = [&](const std::vector<size_t>& scheduled) -> size_t {
        for (size_t k = running.size(); k-- > 0;) {
            const size_t id = running[k];
            if (std::find(scheduled.begin(), scheduled.end(), id) != scheduled.end()) continue;
            Live& q = live[id];
            used_blocks -= q.blocks;
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            ++out.preemptions;
            if (swap && swap_used_blocks + q.blocks <= swap_cap_blocks) {
                swap_used_blocks += q.blocks, swap_moved_blocks += q.blocks;
                out.swapped_tokens += q.blocks * B;
                q.swapped = true;
                swapped.push_back(id);
                ++out.swaps_out;
                return id;
            }
            q.blocks = 0;
            q.prompt = reqs[id].prompt + q.generated, q.prefilled = 0;
            waiting.push_front(id);
            return id;
        }
        return SIZE_MAX;
    };

    while (out.completed < reqs.size()) {
        while (next < reqs.size() && reqs[next].arrival_s <= t) waiting.push_back(next++);
        admit();
        out.peak_queue = std::max<int64_t>(out.peak_queue, static_cast<int64_t>(waiting.size()));
        out.peak_running = std::max<int64_t>(out.peak_running, static_cast<int64_t>(running.size()));
        if (running.empty()) {
            if (next >= reqs.size()) throw UserError("serving", "requests wait that can never be admitted");  // guarded above
            t = std::max(t, reqs[next].arrival_s);
            continue;
        }
        if (out.iterations % stride == 0) {
            samples.push_back({t, static_cast<int64_t>(waiting.size()), static_cast<int64_t>(running.size()), used_blocks * B, out.energy_j,
                               out.busy_s, emitted});
            if (samples.size() >= 2000) {
                for (size_t k = 0; 2 * k < samples.size(); ++k) samples[k] = samples[2 * k];
                samples.resize((samples.size() + 1) / 2);
                stride *= 2;
            }
        }
        // the iteration: decode tokens first, then prefill chunks in admission order within the token budget
        IterationShape shape;
        int64_t budget = continuous ? cfg.max_num_tokens : INT64_MAX;
        bool prefill_pending = false;
        for (size_t id : running) prefill_pending |= live[id].prefilled < live[id].prompt;
        const bool decode_now = cfg.mixed_batches || !prefill_pending;
        std::vector<size_t> decoding, prefilling;
        std::vector<int64_t> chunk_of;
        bool budget_held = false;  // the token budget kept some work out of this iteration
        if (decode_now)
            for (const size_t id : std::vector<size_t>(running)) {  // a copy: preemption edits `running`
                Live& q = live[id];
                if (q.prefilled < q.prompt || q.swapped) continue;  // prefilling, or preempted this iteration
                if (budget < 1) {
                    budget_held = true;
                    continue;
                }
                // a new token's KV needs a block when the held ones are full (without reserving)
                const int64_t ctx = reqs[id].prompt + q.generated;  // tokens in the cache once this step has run
                if (!cfg.reserve_output && blocks_for(ctx + 1, B) > q.blocks) {
                    bool self_preempted = false;
                    while (used_blocks + 1 > cap_blocks && !self_preempted) {
                        const size_t gone = preempt_newest(decoding);
                        if (gone == SIZE_MAX) break;
                        self_preempted = gone == id;
                    }
                    if (self_preempted || used_blocks + 1 > cap_blocks) continue;
                    ++q.blocks, ++used_blocks;
                }
                decoding.push_back(id);
                shape.decode_kv_tokens += ctx;
                --budget;
            }
        for (size_t id : running) {
            Live& q = live[id];
            if (q.prefilled >= q.prompt) continue;
            const int64_t rest = q.prompt - q.prefilled;
            const int64_t chunk = cfg.chunked_prefill || !continuous ? std::min(rest, budget) : (rest <= budget ? rest : 0);
            budget_held |= chunk < rest;
            if (chunk <= 0) {
                if (!cfg.chunked_prefill) continue;  // a whole prompt waits for a budget it fits in
                break;
            }
            prefilling.push_back(id), chunk_of.push_back(chunk);
            shape.prefill.push_back({chunk, q.prefilled});
            budget -= chunk;
        }
        shape.decode_seqs = static_cast<int64_t>(decoding.size());
        shape.tokens = shape.decode_seqs;
        for (const auto& c : shape.prefill) shape.tokens += c.tokens;
        shape.head_tokens = shape.decode_seqs;
        for (size_t k = 0; k < prefilling.size(); ++k)
            shape.head_tokens += live[prefilling[k]].prefilled + chunk_of[k] >= live[prefilling[k]].prompt;
        if (shape.tokens == 0) {  // nothing fits (every prompt above what is left of the budget): wait for the next arrival
            if (next >= reqs.size()) throw UserError("serving", "no request can run within the token budget");
            t = std::max(t, reqs[next].arrival_s);
            continue;
        }
        out.peak_iteration_tokens = std::max(out.peak_iteration_tokens, shape.tokens);
        out.budget_limited_iterations += budget_held;
        const IterationCostValue c = cost(shape);
        // the swaps' copies over the host link hold the iteration (vLLM's worker runs them before
        // the forward pass); the device idles meanwhile, so they add time, not busy time
        const double swap_s = swap ? double(swap_moved_blocks * B) * cfg.swap_bytes_per_token / cfg.swap_bytes_per_s : 0.0;
        swap_moved_blocks = 0;
        out.swap_s += swap_s;
        if (observe) observe(t, c.time_s + cfg.iteration_overhead_s + swap_s, shape);
        t += c.time_s + cfg.iteration_overhead_s + swap_s;
        out.energy_j += c.energy_j, out.busy_s += c.time_s + cfg.iteration_overhead_s;
        ++out.iterations;
        // tokens come out at the end of the iteration
        auto emit = [&](size_t id) {
            Live& q = live[id];
            ++q.generated, ++emitted;
            if (q.first_token_s < 0) q.first_token_s = t;
            else itl.push_back(t - q.last_token_s);
            q.last_token_s = t;
        };
        for (size_t id : decoding) emit(id);
        for (size_t k = 0; k < prefilling.size(); ++k) {
            Live& q = live[prefilling[k]];
            q.prefilled += chunk_of[k];
            if (q.prefilled >= q.prompt) emit(prefilling[k]);
        }
        // finished requests leave and give their blocks back
        for (size_t k = running.size(); k-- > 0;) {
            const size_t id = running[k];
            if (live[id].generated < reqs[id].output) continue;
            used_blocks -= live[id].blocks;
            live[id].blocks = 0;
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            ++out.completed;
        }
        out.peak_kv_tokens = std::max(out.peak_kv_tokens, used_blocks * B);
    }
    out.duration_s = t - t0;
    for (size_t i = 0; i < reqs.size(); ++i)
        out.request_times.push_back({reqs[i].arrival_s, live[i].admitted_s, live[i].first_token_s, live[i].last_token_s});
    summarize_requests(out, reqs);
    out.itl = latency_stats(itl);
    for (const double x : itl) out.itl_hist.add(x);
    out.samples = std::move(samples);
    return out;
}

}  // namespace archsim
