// The request-level serving simulator (sim/serving/serving_sim.h) on hand-made costs, where every
// latency follows from the schedule by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <tuple>

#include "sim/base/error.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/disaggregated.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/serving_sim.h"

using namespace archsim;

namespace {

/// Every iteration takes 1 ms plus 1 us per token, and 1 mJ.
IterationCostValue per_token(const IterationShape& s) { return {1e-3 + 1e-6 * double(s.tokens), 1e-3}; }
/// Every iteration takes 10 ms whatever it runs.
IterationCostValue flat(const IterationShape&) { return {10e-3, 1.0}; }

}  // namespace

TEST_CASE("one request: a prefill iteration gives its first token, then one token per decode iteration", "[unit][serving]") {
    SchedulerConfig cfg;
    const ServingResult r = simulate_serving({{0.0, 100, 5}}, cfg, per_token);
    CHECK(r.iterations == 5);
    CHECK(r.ttft.mean == Approx(1e-3 + 100e-6));   // the prompt's 100 tokens
    CHECK(r.itl.n == 4);
    CHECK(r.itl.mean == Approx(1e-3 + 1e-6));      // one token per decode step
    CHECK(r.e2e.mean == Approx(1.1e-3 + 4 * 1.001e-3));
    CHECK(r.tpot.mean == Approx(1.001e-3));
    CHECK(r.energy_j == Approx(5e-3));
    CHECK(r.kv_limited_iterations == 0);  // an unlimited KV cache never holds a request back
    CHECK(r.achieved_requests_per_s == Approx(1.0 / r.e2e.mean));
    CHECK(r.output_tokens_per_s == Approx(5.0 / r.e2e.mean));
}

TEST_CASE("continuous batching lets a late request in at the next iteration and static batching makes it wait for the batch", "[unit][serving]") {
    const std::vector<ServingRequest> reqs = {{0.0, 10, 10}, {0.015, 10, 10}};  // the second arrives during the first's 2nd iteration
    SchedulerConfig cont;
    const ServingResult c = simulate_serving(reqs, cont, flat);
    // it joins at 20 ms (the first iteration boundary after its arrival) and has its first token at 30 ms
    CHECK(c.ttft.p50 == Approx((0.010 + 0.015) / 2 + 0.0).margin(0.0051));
    CHECK(c.e2e.n == 2);
    SchedulerConfig stat;
    stat.policy = "static";
    const ServingResult s = simulate_serving(reqs, stat, flat);
    // the first runs 10 iterations alone (to 100 ms); the second starts then: first token at 110 ms
    CHECK(s.ttft.mean == Approx((0.010 + (0.110 - 0.015)) / 2));
    CHECK(s.iterations == 20);
    CHECK(c.iterations < s.iterations);
}

TEST_CASE("the token budget: a prompt over it is refused without chunked prefill and split into chunks with it", "[unit][serving]") {
    SchedulerConfig cfg;
    cfg.max_num_tokens = 256;
    CHECK_THROWS_AS(simulate_serving({{0.0, 1000, 2}}, cfg, flat), UserError);
    cfg.chunked_prefill = true;
    const ServingResult r = simulate_serving({{0.0, 1000, 2}}, cfg, flat);
    CHECK(r.ttft.mean == Approx(4 * 0.010));  // 256 + 256 + 256 + 232 tokens
    CHECK(r.iterations == 5);
    CHECK(r.peak_iteration_tokens == 256);
    CHECK(r.budget_limited_iterations == 3);  // the first three chunks were cut short
    // two prompts of 200 in a budget of 256: the second waits one iteration for a budget it fits
    cfg.chunked_prefill = false;
    const ServingResult w = simulate_serving({{0.0, 200, 2}, {0.0, 200, 2}}, cfg, flat);
    CHECK(w.budget_limited_iterations == 1);
    CHECK(w.peak_iteration_tokens == 201);  // the first's decode token and the second's prompt
    // a budget that never binds holds nothing back
    cfg.max_num_tokens = 8192;
    const ServingResult free = simulate_serving({{0.0, 200, 2}, {0.0, 200, 2}}, cfg, flat);
    CHECK(free.budget_limited_iterations == 0);
    CHECK(free.peak_iteration_tokens == 400);
}

TEST_CASE("a KV cache for one request: the second waits for the first to finish, and without reserving the newest is preempted", "[unit][serving]") {
    SchedulerConfig cfg;
    cfg.kv_block_tokens = 16;
    cfg.kv_capacity_tokens = 160;  // 10 blocks: one request of 100 + 50 tokens
    const ServingResult r = simulate_serving({{0.0, 100, 50}, {0.0, 100, 50}}, cfg, flat);
    CHECK(r.preemptions == 0);
    CHECK(r.ttft.n == 2);
    CHECK(r.e2e.mean == Approx((0.5 + 1.0) / 2));   // 50 iterations each, one after the other
    CHECK(r.ttft.mean == Approx((0.010 + 0.510) / 2));
    CHECK(r.peak_kv_tokens <= 160);
    CHECK(r.kv_limited_iterations == 50);  // the second waits at the start of each of the first's 50 iterations
    CHECK_THROWS_AS(simulate_serving({{0.0, 200, 50}}, cfg, flat), UserError);  // one request does not fit
    // 40 + 100 tokens each: reserving, one at a time (9 blocks each); without, both start on 3
    // blocks and grow until the newest is preempted and recomputed
    const ServingResult one_by_one = simulate_serving({{0.0, 40, 100}, {0.0, 40, 100}}, cfg, flat);
    CHECK(one_by_one.preemptions == 0);
    CHECK(one_by_one.iterations == 200);
    cfg.reserve_output = false;
    const ServingResult p = simulate_serving({{0.0, 40, 100}, {0.0, 40, 100}}, cfg, flat);
    CHECK(p.preemptions >= 1);
    CHECK(p.completed == 2);
    CHECK(p.peak_kv_tokens <= 160);
    CHECK(p.itl.n == 2 * 99);  // every token emitted once, a recomputed request's included
    // six at once on room for about two: preemptions cascade, every request still ends with its 100 tokens
    std::vector<ServingRequest> six(6, ServingRequest{0.0, 40, 100});
    const ServingResult q = simulate_serving(six, cfg, flat);
    CHECK(q.completed == 6);
    CHECK(q.preemptions >= 4);
    CHECK(q.itl.n == 6 * 99);
    CHECK(q.peak_kv_tokens <= 160);
}

TEST_CASE("swap preemption copies the KV out and back instead of recomputing it and the copies take time", "[unit][serving]") {
    SchedulerConfig cfg;
    cfg.kv_block_tokens = 16, cfg.kv_capacity_tokens = 160, cfg.reserve_output = false;
    int64_t prefill_tokens = 0;
    const auto counting = [&](const IterationShape& s) {
        for (const auto& c : s.prefill) prefill_tokens += c.tokens;
        return flat(s);
    };
    const std::vector<ServingRequest> two(2, ServingRequest{0.0, 40, 100});
    const ServingResult rc = simulate_serving(two, cfg, counting);
    const int64_t recompute_prefill = prefill_tokens;
    CHECK(rc.preemptions >= 1);
    CHECK(recompute_prefill > 80);  // a preempted request prefills its prompt and tokens again
    cfg.preemption = "swap", cfg.swap_bytes_per_token = 1000, cfg.swap_bytes_per_s = 1e6, cfg.swap_capacity_tokens = 1000;
    prefill_tokens = 0;
    const ServingResult sw = simulate_serving(two, cfg, counting);
    CHECK(prefill_tokens == 80);  // each prompt once: the swapped KV comes back whole
    CHECK(sw.swaps_out >= 1);
    CHECK(sw.swaps_in == sw.swaps_out);
    CHECK(sw.preemptions == sw.swaps_out);
    CHECK(sw.completed == 2);
    CHECK(sw.itl.n == 2 * 99);
    CHECK(sw.swapped_tokens % 16 == 0);  // whole blocks
    CHECK(sw.swap_s == Approx(2.0 * double(sw.swapped_tokens) * 1000 / 1e6));  // out and back in, 1 ms per token
    CHECK(sw.duration_s == Approx(double(sw.iterations) * 0.010 + sw.swap_s));  // everything at time 0: no idle time
    CHECK(sw.busy_s == Approx(double(sw.iterations) * 0.010));
    // no host space: every preemption recomputes
    cfg.swap_capacity_tokens = 0;
    const ServingResult none = simulate_serving(two, cfg, flat);
    CHECK(none.swaps_out == 0);
    CHECK(none.preemptions == rc.preemptions);
}

TEST_CASE("a prefill pauses decoding when batches are not mixed (vLLM v0)", "[unit][serving]") {
    SchedulerConfig cfg;
    cfg.mixed_batches = false;
    const ServingResult r = simulate_serving({{0.0, 10, 3}, {0.005, 10, 3}}, cfg, flat);
    // first: prefill [0,10] token 1; at 10 ms the second's prefill runs alone [10,20]; decodes [20,30],[30,40]
    CHECK(r.itl.n == 4);
    CHECK(r.itl.mean == Approx((0.020 + 0.010 + 0.010 + 0.010) / 4));  // the first's gap spans the second's prefill
}

TEST_CASE("latency percentiles interpolate between order statistics", "[unit][serving]") {
    const LatencyStats s = latency_stats({4, 1, 3, 2, 5});
    CHECK(s.mean == Approx(3));
    CHECK(s.p50 == Approx(3));
    CHECK(s.p90 == Approx(4.6));
    CHECK(s.p99 == Approx(4.96));
    CHECK(latency_stats({}).n == 0);
}

TEST_CASE("an iteration costs the sum of its kernel classes, each interpolated between simulated points", "[unit][serving]") {
    CHECK(kernel_class("/model/layers.3/MatMul_6", "MergedMatMul(2)") == KernelClass::Linear);
    CHECK(kernel_class("/model/layers.3/MatMul_3", "Attention") == KernelClass::Attention);
    CHECK(kernel_class("/model/Pow", "RMSNorm") == KernelClass::Linear);  // the final norm runs on every prefill token
    CHECK(kernel_class("/model/MatMul", "MatMul") == KernelClass::Head);
    CHECK(interpolate({{1, 1.0, 2.0}, {3, 3.0, 6.0}}, 2).time_s == Approx(2.0));
    CHECK(interpolate({{1, 1.0, 2.0}, {3, 3.0, 6.0}}, 5).energy_j == Approx(10.0));  // beyond the end: the last segment
    CHECK(interpolate({{1, 1.0, 2.0}, {3, 3.0, 6.0}}, -9).time_s == 0);           // never below 0
    IterationCostModel m;
    ClassCost prefill, decode;
    prefill.add(KernelClass::Linear, 10e-3, 1), prefill.add(KernelClass::Head, 1e-3, 0.1), prefill.add(KernelClass::Attention, 2e-3, 0.2);
    m.add_prefill_run(512, prefill);
    decode.add(KernelClass::Linear, 5e-3, 0.5), decode.add(KernelClass::Head, 1e-3, 0.1), decode.add(KernelClass::Attention, 1e-3, 0.1);
    m.add_decode_run(1, 512, decode);
    IterationShape s;  // one decode at a KV of 512 and a whole 512-token prompt
    s.tokens = 513, s.head_tokens = 2, s.decode_seqs = 1, s.decode_kv_tokens = 512, s.prefill = {{512, 0}};
    const IterationCostValue v = m(s);
    const double linear = 5e-3 + (10e-3 - 5e-3) * (513.0 - 1) / (512 - 1);
    CHECK(v.time_s == Approx(linear + 1e-3 + 1e-3 + 2e-3));  // linear(513) + head (one point) + decode attention + prefill attention
}

TEST_CASE("request lengths drawn around their means keep the means and differ by distribution", "[unit][serving]") {
    const auto lengths = [](const LengthDistribution& d) {
        const std::vector<ServingRequest> r = make_requests(20000, 10.0, "poisson", 7, 467, 256, d);
        double p = 0, o = 0, o2 = 0;
        int64_t lo = INT64_MAX, hi = 0;
        for (const ServingRequest& q : r) p += double(q.prompt), o += double(q.output), o2 += double(q.output) * double(q.output);
        for (const ServingRequest& q : r) lo = std::min(lo, q.output), hi = std::max(hi, q.output);
        const double n = double(r.size()), mean_o = o / n;
        return std::make_tuple(p / n, mean_o, std::sqrt(o2 / n - mean_o * mean_o) / mean_o, lo, hi);
    };
    const auto [fp, fo, fcv, flo, fhi] = lengths({"fixed", 1.0});
    CHECK(fp == 467.0);
    CHECK(fcv == Approx(0.0).margin(1e-9));
    const auto [up, uo, ucv, ulo, uhi] = lengths({"uniform", 1.0});
    CHECK(ulo >= 1);
    CHECK(uhi <= 511);
    CHECK(uo == Approx(256).epsilon(0.02));
    CHECK(ucv == Approx(1.0 / std::sqrt(3.0)).epsilon(0.05));
    const auto [ep, eo, ecv, elo, ehi] = lengths({"exponential", 1.0});
    CHECK(ep == Approx(467).epsilon(0.03));
    CHECK(eo == Approx(256).epsilon(0.03));
    CHECK(ecv == Approx(1.0).epsilon(0.05));
    const auto [lp, lo_, lcv, llo, lhi] = lengths({"lognormal", 2.0});
    CHECK(lo_ == Approx(256).epsilon(0.05));
    CHECK(lcv > 1.5);  // heavy tailed: the sample CV of a lognormal converges slowly
    // the arrivals do not move with the lengths' distribution
    const auto a = make_requests(50, 4.0, "poisson", 3, 100, 100, {"fixed", 1.0});
    const auto b = make_requests(50, 4.0, "poisson", 3, 100, 100, {"lognormal", 1.0});
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].arrival_s == b[i].arrival_s);
    CHECK_THROWS_AS(make_requests(5, 1.0, "poisson", 1, 10, 10, {"gaussian", 1.0}), UserError);
}

TEST_CASE("latency histograms give percentiles within half a bin and merge runs with weights", "[unit][serving]") {
    std::mt19937_64 rng(5);
    std::lognormal_distribution<double> d(std::log(0.02), 0.8);
    std::vector<double> a, b;
    LatencyHistogram ha, hb;
    for (int i = 0; i < 5000; ++i) a.push_back(d(rng)), ha.add(a.back());
    for (int i = 0; i < 3000; ++i) b.push_back(3 * d(rng)), hb.add(b.back());
    const LatencyStats sa = latency_stats(a);
    CHECK(ha.mean() == Approx(sa.mean));
    for (const auto& [p, exact] : {std::pair{50.0, sa.p50}, std::pair{90.0, sa.p90}, std::pair{99.0, sa.p99}}) {
        INFO(p);
        CHECK(ha.percentile(p) == Approx(exact).epsilon(0.025));  // within a bin (2.3%) of the interpolated order statistic
    }
    // b counted twice (two replicas) against the exact pooled sample
    LatencyHistogram pooled = LatencyHistogram::from(ha.bins(), ha.sum());
    pooled.merge(hb, 2.0);
    std::vector<double> all = a;
    for (double x : b) all.push_back(x), all.push_back(x);
    const LatencyStats s = latency_stats(all);
    CHECK(pooled.count() == 11000.0);
    CHECK(pooled.mean() == Approx(s.mean));
    CHECK(pooled.percentile(50) == Approx(s.p50).epsilon(0.025));
    CHECK(pooled.percentile(99) == Approx(s.p99).epsilon(0.025));
    CHECK(LatencyHistogram().percentile(50) == 0.0);
}

TEST_CASE("disaggregated serving: the prompt on a prefill instance then its KV handed over to a decode instance", "[unit][serving]") {
    SchedulerConfig cfg;
    DisaggregatedConfig d;
    d.kv_bytes_per_token = 1000, d.link_bytes_per_s = 1e6, d.link_latency_s = 0.001;  // 100 tokens: 101 ms
    const DisaggregatedResult r = simulate_disaggregated({{0.0, 100, 5}}, cfg, cfg, d, flat);
    const double handover = 0.001 + 0.100;
    CHECK(r.kv_transfer_s == Approx(handover));
    CHECK(r.combined.ttft.mean == Approx(0.010));                          // one prefill iteration
    CHECK(r.combined.e2e.mean == Approx(0.010 + handover + 4 * 0.010));    // then four decode iterations
    CHECK(r.combined.tpot.mean == Approx((handover + 4 * 0.010) / 4));
    CHECK(r.combined.itl.n == 4);                                          // the hand-over gap counts
    CHECK(r.combined.itl.mean == Approx((handover + 4 * 0.010) / 4));
    CHECK(r.prefill.iterations == 1);
    CHECK(r.decode.iterations == 4);
    // a stream of long prompts: unlike a mixed instance, the decode instance never runs a prompt,
    // so its iterations stay as short as a decode's (here: every iteration costs its tokens)
    std::vector<ServingRequest> many;
    for (int i = 0; i < 20; ++i) many.push_back({0.02 * i, 2000, 20});
    const ServingResult mixed = simulate_serving(many, cfg, per_token);
    d.link_bytes_per_s = 1e12, d.link_latency_s = 0;
    const DisaggregatedResult split = simulate_disaggregated(many, cfg, cfg, d, per_token);
    CHECK(split.combined.requests == 20);
    REQUIRE(split.served.size() == 20);
    for (size_t k = 0; k < split.served.size(); ++k) CHECK(split.served[k].arrival_s == split.combined.request_times[k].arrival_s);
    CHECK(split.combined.itl.p99 < mixed.itl.p99);
    CHECK_THROWS_AS(simulate_disaggregated(many, cfg, cfg, DisaggregatedConfig{0, 1}, per_token), UserError);
}
