// Pipeline schedules and parallel plans: every pass once, dependencies in order, the in-flight
// bounds of 1F1B, interleaving's warm-up, and the plan's one-line errors.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "sim/base/error.h"
#include "workloads/parallel/parallel_plan.h"
#include "workloads/parallel/pipeline_schedule.h"

using namespace archsim;

namespace {

int64_t most_in_flight(const std::vector<PipeOp>& ops) {
    int64_t live = 0, most = 0;
    for (const auto& op : ops) most = std::max(most, live += op.forward ? 1 : -1);
    return most;
}

LlmShape gpt(int64_t h, int64_t l, int64_t a) {
    LlmShape s;
    s.model_family = "gpt", s.hidden = h, s.layers = l, s.heads = a, s.kv_heads = a, s.ffn = 4 * h, s.vocab = 51200, s.prompt = 2048;
    s.weights_precision = s.activations_precision = "fp16";
    return s;
}

}  // namespace

TEST_CASE("every schedule runs each chunk's forward and backward of each microbatch once, forward first", "[unit][pipeline]") {
    for (const auto& [name, pp, v, m] : std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>>{
             {"gpipe", 4, 1, 8}, {"1f1b", 4, 1, 8}, {"1f1b", 8, 1, 3}, {"interleaved", 4, 2, 8}, {"interleaved", 4, 3, 4}}) {
        const auto s = pipeline_schedule(name, pp, v, m);
        REQUIRE(int64_t(s.size()) == pp);
        for (const auto& ops : s) {
            CHECK(int64_t(ops.size()) == 2 * v * m);
            std::set<std::tuple<bool, int64_t, int64_t>> seen;
            for (const auto& op : ops) {
                if (!op.forward) CHECK(seen.count({true, op.chunk, op.microbatch}) == 1);
                CHECK(seen.insert({op.forward, op.chunk, op.microbatch}).second);
            }
        }
    }
}

TEST_CASE("1F1B keeps at most pp - r microbatches in flight on stage r, GPipe keeps all", "[unit][pipeline]") {
    const auto s = pipeline_schedule("1f1b", 4, 1, 16);
    for (int64_t r = 0; r < 4; ++r) CHECK(most_in_flight(s[size_t(r)]) == 4 - r);
    CHECK(most_in_flight(pipeline_schedule("gpipe", 4, 1, 16)[0]) == 16);
}

TEST_CASE("interleaved 1F1B warms up with (pp - r - 1) x 2 + (v - 1) x pp forwards, chunks in groups of pp", "[unit][pipeline]") {
    const int64_t pp = 4, v = 2, m = 8;
    const auto s = pipeline_schedule("interleaved", pp, v, m);
    for (int64_t r = 0; r < pp; ++r) {
        const int64_t warm = (pp - r - 1) * 2 + (v - 1) * pp;
        for (int64_t k = 0; k < warm; ++k) CHECK(s[size_t(r)][size_t(k)].forward);
        CHECK_FALSE(s[size_t(r)][size_t(warm + 1)].forward);
    }
    // stage 0's forwards: microbatches 0..3 on chunk 0, then 0..3 on chunk 1
    for (int k = 0; k < 8; ++k) {
        CHECK(s[0][size_t(k)].chunk == k / 4);
        CHECK(s[0][size_t(k)].microbatch == k % 4);
    }
    CHECK(bubble_fraction(pp, v, m) == Approx(3.0 / 16));
    CHECK_THROWS_AS(pipeline_schedule("interleaved", 4, 2, 6), std::invalid_argument);
}

TEST_CASE("a plan splits the model into first, middle and last chunks and counts microbatches", "[unit][pipeline][plan]") {
    ParallelismSpec s;
    s.tp = 8, s.pp = 8, s.dp = 24, s.virtual_stages = 2, s.microbatch = 2, s.global_batch = 2304;
    const ParallelPlan p = make_parallel_plan(gpt(12288, 80, 96), s, "t");
    CHECK(p.spec.schedule == "interleaved");
    CHECK(p.microbatches == 48);
    CHECK(p.layers_per_chunk == 5);
    CHECK(p.kinds.size() == 3);
    CHECK(p.kinds[p.kind_of[0][0]].embedding);
    CHECK(p.kinds[p.kind_of[7][1]].head);
    CHECK(p.kind_of[0][1] == p.kind_of[7][0]);  // both middle chunks
    CHECK(p.activation_bytes == Approx(2.0 * 2048 * 12288 * 2));
    // the paper's formula: the 145.6B row's 227.1 aggregate PFLOP/s over its 1,536 GPUs at 148 TFLOP/s
    CHECK(megatron_flops_per_iteration(p.model, 2304) / 1536 / 148e12 == Approx(24.8).epsilon(0.01));
}

TEST_CASE("a plan that does not divide the model or the batch is a one-line error naming the key", "[unit][pipeline][plan]") {
    ParallelismSpec s;
    s.tp = 5;
    CHECK_THROWS_WITH(make_parallel_plan(gpt(2304, 24, 24), s, "w.yaml#x"), Catch::Contains("w.yaml#x: parallelism.tp = 5") && Catch::Contains("24 attention heads"));
    s.tp = 1, s.pp = 5;
    CHECK_THROWS_WITH(make_parallel_plan(gpt(2304, 24, 24), s, "w"), Catch::Contains("parallelism.pp = 5") && Catch::Contains("24 layers"));
    s.pp = 2, s.dp = 4, s.microbatch = 3, s.global_batch = 16;
    CHECK_THROWS_WITH(make_parallel_plan(gpt(2304, 24, 24), s, "w"), Catch::Contains("global_batch = 16"));
    s.microbatch = 1, s.virtual_stages = 2, s.global_batch = 12;  // 3 microbatches: not a multiple of pp
    CHECK_THROWS_AS(make_parallel_plan(gpt(2304, 24, 24), s, "w"), UserError);
}
