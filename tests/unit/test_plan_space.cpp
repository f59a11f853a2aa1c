// The parallel-plan space: every plan valid and on exactly its devices, the dimensions each plan
// may vary, parameters and MACs per chunk against the model's own counts, and the memory bound.
#include <catch2/catch.hpp>

#include <set>

#include "workloads/parallel/plan_space.h"

using namespace archsim;

namespace {

LlmShape model(const std::string& family) {
    LlmShape s;
    s.model_family = family, s.hidden = 256, s.layers = 4, s.heads = 4, s.kv_heads = family == "gpt" ? 4 : 2, s.ffn = family == "gpt" ? 1024 : 512;
    s.vocab = 1000, s.prompt = 128, s.max_positions = 128;
    if (family == "moe") s.experts = 4, s.top_k = 2;
    s.weights_precision = s.activations_precision = "fp16";
    return s;
}

ParallelismSpec base(int64_t global_batch) {
    ParallelismSpec s;
    s.global_batch = global_batch;
    return s;
}

}  // namespace

TEST_CASE("plan space: every plan is valid, on exactly its devices, and named once", "[parallel]") {
    const LlmShape m = model("gpt");
    const auto plans = enumerate_plans(m, base(16), 8, 8);
    REQUIRE(!plans.empty());
    std::set<std::string> ids;
    for (const ParallelismSpec& s : plans) {
        CHECK(s.devices() == 8);
        CHECK_NOTHROW(make_parallel_plan(m, s, "test"));
        CHECK(ids.insert(plan_id(s)).second);
        CHECK((!s.sequence_parallel || s.tp > 1));
        CHECK((s.zero_stage == 0 || s.dp > 1));
        CHECK((s.virtual_stages == 1 || s.schedule == "interleaved"));
    }
    // the plan space holds tp 1, 2 and 4 (the heads), pp 1, 2 and 4 (the layers), each recomputation
    std::set<int64_t> tps, pps;
    std::set<std::string> rcs;
    for (const auto& s : plans) tps.insert(s.tp), pps.insert(s.pp), rcs.insert(s.recompute);
    CHECK(tps == std::set<int64_t>{1, 2, 4});
    CHECK(pps == std::set<int64_t>{1, 2, 4});
    CHECK(rcs.size() == 3);
    // a tensor group larger than a node spans whole nodes: on 3-device nodes, no tp of 4 or 8
    for (const auto& s : enumerate_plans(m, base(16), 8, 3)) CHECK(s.tp <= 2);
}

TEST_CASE("plan space: a MoE model's plans split its experts over data-parallel ranks", "[parallel]") {
    const LlmShape m = model("moe");
    std::set<int64_t> eps;
    for (const auto& s : enumerate_plans(m, base(8), 8, 8)) {
        eps.insert(s.ep);
        CHECK(s.dp % s.ep == 0);
        CHECK(m.experts / s.ep >= m.top_k);
    }
    CHECK(eps == std::set<int64_t>{1, 2});
}

TEST_CASE("plan space: one chunk holding the whole model has the model's parameters", "[parallel]") {
    for (const std::string f : {"gpt", "llama", "moe"}) {
        INFO(f);
        const LlmShape m = model(f);
        ParallelismSpec s;
        CHECK(chunk_parameters(m, s, {m.layers, true, true}) == Approx(double(m.parameters())));
        // pipeline chunks add up to it (a GPT's tied head keeps its own copy of the embedding on the last stage)
        const double split = chunk_parameters(m, s, {2, true, false}) + chunk_parameters(m, s, {2, false, true});
        CHECK(split == Approx(double(m.parameters()) + (f == "gpt" ? double(m.vocab * m.hidden) : 0.0)));
    }
}

TEST_CASE("plan space: a GPT chunk's MACs are Megatron's per-layer count, its backward twice its forward", "[parallel]") {
    const LlmShape m = model("gpt");
    ParallelismSpec s;
    s.tp = 2, s.microbatch = 3, s.recompute = "selective";
    const ChunkMacs c = chunk_macs(m, s, {2, false, false});
    // Megatron's forward FLOPs per layer, 24 B s h^2 + 4 B s^2 h (Narayanan et al. SC21, section
    // 5.1), as MACs, over tp, for 2 layers
    const double B = 3, sq = 128, h = 256;
    CHECK(c.forward == Approx(2 * (24 * B * sq * h * h + 4 * B * sq * sq * h) / 2 / 2));
    CHECK(c.backward == Approx(2 * c.forward));
    CHECK(c.recompute == Approx(2 * B * sq * sq * h / 2));  // each layer's scores, over tp
    // the head chunk adds the LM head on every token over the vocabulary shard
    CHECK(chunk_macs(m, s, {2, false, true}).forward - c.forward == Approx(B * sq * h * double(vocab_shard(m.vocab, 2))));
}

TEST_CASE("plan space: the memory bound grows with the microbatch and falls with ZeRO and sequence parallelism", "[parallel]") {
    const LlmShape m = model("gpt");
    ParallelismSpec s = base(16);
    s.tp = 2, s.pp = 2, s.dp = 2, s.microbatch = 1, s.recompute = "selective";
    const double b = memory_lower_bound_bytes(make_parallel_plan(m, s, "t"));
    ParallelismSpec bigger = s;
    bigger.microbatch = 4;
    CHECK(memory_lower_bound_bytes(make_parallel_plan(m, bigger, "t")) > b);
    ParallelismSpec zero = s;
    zero.zero_stage = 3;
    CHECK(memory_lower_bound_bytes(make_parallel_plan(m, zero, "t")) < b);
    ParallelismSpec sp = s;
    sp.sequence_parallel = true;
    CHECK(memory_lower_bound_bytes(make_parallel_plan(m, sp, "t")) < b);
    // 1F1B on 2 stages: stage 0 holds 2 microbatches in flight, stage 1 one
    CHECK(in_flight_microbatches(make_parallel_plan(m, s, "t")) == std::vector<int64_t>{2, 1});
}
