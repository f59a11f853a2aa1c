// Training steps of a GPT: FLOPs per iteration against Megatron-LM's closed form with and without
// recomputation, the memory footprint against Korthikanti et al.'s, gradient accumulation and a
// mixed-precision optimizer's state.
#include <catch2/catch.hpp>

#include <algorithm>

#include <string>

#include "tests/support/temp_file.h"
#include "workloads/load_workload.h"
#include "workloads/lowering/lower.h"
#include "workloads/lowering/runtime_profile.h"
#include "workloads/training/memory_footprint.h"
#include "workloads/training/training_step.h"

using namespace archsim;

namespace {

/// A GPT (learned positions, LayerNorm, GELU, tied LM head) of `layers` x `hidden` with `heads`,
/// vocabulary `vocab`, trained on sequences of `seq` tokens at `batch`.
OpGraph gpt(int64_t layers, int64_t hidden, int64_t heads, int64_t vocab, int64_t seq, int64_t batch, double dropout = 0.1) {
    const std::string file = test::write_temp(
        "archsim_train_gpt.toml", "[g]\nfamily = \"llm\"\nmodel_family = \"gpt\"\nhidden = " + std::to_string(hidden) +
                                      "\nlayers = " + std::to_string(layers) + "\nheads = " + std::to_string(heads) +
                                      "\nffn = " + std::to_string(4 * hidden) + "\nvocab = " + std::to_string(vocab) +
                                      "\nmax_positions = " + std::to_string(seq) + "\ndropout = " + std::to_string(dropout) +
                                      "\nsequence = { prompt = " + std::to_string(seq) + ", generate = 0 }\n");
    ImportOptions opt;
    opt.batch = batch;
    return load_workload(file + "#g@train", opt).graph;
}

/// Bytes of the model's constant buffers (masks, scalars, shape data), which the footprint
/// counts with the weights.
int64_t constants(const OpGraph& g, int64_t float_bytes) {
    int64_t b = 0;
    for (const Tensor& t : g.tensors())
        if (t.role == TensorRole::Constant) b += t.bytes_at(float_bytes);
    return b;
}

TrainingOptions options(const std::string& recompute, int64_t microbatches = 1, bool mixed = false) {
    TrainingOptions o;
    o.optimizer = "adam";
    o.recompute = recompute;
    o.microbatches = microbatches;
    o.mixed_precision = mixed;
    return o;
}

}  // namespace

TEST_CASE("a GPT's training FLOPs per iteration are Megatron-LM's closed form, with and without recomputation",
          "[import][training]") {
    // Narayanan et al., SC21, eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full
    // recomputation (every layer's forward twice, the LM head's once); without it the layers'
    // share is 3/4 of that, 72 B s l h^2 (1 + s/(6h)) + 6 B s h V
    const int64_t B = 2, s = 128, l = 3, h = 128, a = 4, V = 1000;
    const OpGraph fwd = gpt(l, h, a, V, s, B);
    const int64_t layers_fwd_macs = 12 * B * s * l * h * h + 2 * B * s * s * l * h, head_macs = B * s * h * V;
    CHECK(fwd.total_macs() == layers_fwd_macs + head_macs);

    const TrainingStep none = make_training_step(fwd, options("none"));
    const int64_t model_flops = 2 * (none.forward_macs + none.backward_macs);
    CHECK(model_flops == 72 * B * s * l * h * h + 12 * B * s * s * l * h + 6 * B * s * h * V);
    CHECK(none.recompute_macs == 0);

    const TrainingStep full = make_training_step(fwd, options("full"));
    const int64_t full_flops = 2 * (full.forward_macs + full.backward_macs + full.recompute_macs);
    CHECK(2 * (full.forward_macs + full.backward_macs) == model_flops);  // recomputation is hardware, not model, work
    CHECK(full_flops == 96 * B * s * l * h * h + 16 * B * s * s * l * h + 6 * B * s * h * V);
    CHECK(full.recompute_macs == layers_fwd_macs);
    CHECK(full.graph.total_macs() == full.forward_macs + full.backward_macs + full.recompute_macs);

    // selective (Korthikanti et al., 2023): only the attention scores' matmul Q K^T is recomputed
    const TrainingStep sel = make_training_step(fwd, options("selective"));
    CHECK(sel.recompute_macs == B * s * s * h * l);
}

TEST_CASE("recomputation frees the activations it recomputes", "[import][training]") {
    const int64_t B = 2, s = 128, l = 4, h = 128, a = 4, V = 500;
    const OpGraph fwd = gpt(l, h, a, V, s, B);
    const int64_t none = memory_footprint(make_training_step(fwd, options("none")).graph, make_training_step(fwd, options("none")), 2)
                             .largest.saved_activations;
    const TrainingStep sel_step = make_training_step(fwd, options("selective"));
    const int64_t sel = memory_footprint(sel_step.graph, sel_step, 2).largest.saved_activations;
    const TrainingStep full_step = make_training_step(fwd, options("full"));
    const int64_t full = memory_footprint(full_step.graph, full_step, 2).largest.saved_activations;
    // selective saves the 5 a s^2 b bytes per layer of scores, softmax, dropout mask and output
    // (Korthikanti et al., eq. 2 and section 4.2), less what the layer being recomputed holds
    const int64_t scores = 5 * a * s * s * B;
    CHECK(none - sel >= (l - 1) * scores);
    CHECK(none - sel <= l * scores);
    // full keeps one residual stream per sublayer and one layer's activations at a time
    CHECK(full < sel);
    CHECK(full < none / 2);
    // what a microbatch keeps once its forward ends (a pipeline's waiting microbatches): without
    // recomputation all of it but the labels (int64, held from the loss that reads them first);
    // with selective, all but the scores the backward makes again for one layer at a time (at
    // most one layer's); with full, the residual streams only
    const TrainingStep none_step = make_training_step(fwd, options("none"));
    CHECK(none - memory_footprint(none_step.graph, none_step, 2).saved_after_forward == B * s * 8);
    const int64_t sel_after = memory_footprint(sel_step.graph, sel_step, 2).saved_after_forward;
    CHECK(sel_after < sel);
    CHECK(sel - sel_after <= scores);
    const int64_t full_after = memory_footprint(full_step.graph, full_step, 2).saved_after_forward;
    CHECK(full_after < full);
    CHECK(full_after >= l * s * B * h * 2);  // at least each layer's input, 2 bytes an element
}

TEST_CASE("GPT-2 small's training memory peak is Korthikanti et al.'s closed form within 10%, without its score term under FlashAttention kernels", "[import][training]") {
    // batch 8, sequence 1024, mixed precision with Adam: weights (2 bytes) + gradients (2) + fp32
    // master weights and moments (12) per parameter, and 34 s b h + 5 a s^2 b bytes of saved
    // activations per layer (Korthikanti et al., "Reducing Activation Recomputation in Large
    // Transformer Models", MLSys 2023, eq. 1); the closed form leaves out the LM head's logits
    const int64_t B = 8, s = 1024, l = 12, h = 768, a = 12, V = 50257;
    const OpGraph fwd = gpt(l, h, a, V, s, B);
    const TrainingStep step = make_training_step(fwd, options("none", 1, true));
    CHECK(step.params == 124439808);
    const MemoryFootprint m = memory_footprint(step.graph, step, 2);
    const double per_layer = 34.0 * s * B * h + 5.0 * a * s * s * B;
    const double closed = 16.0 * static_cast<double>(step.params) + l * per_layer;
    CHECK(m.at_peak.weights == 2 * step.params + constants(fwd, 2));
    CHECK(m.at_peak.gradients == 2 * step.params);
    CHECK(m.at_peak.optimizer_state == 12 * step.params);
    // the saved activations: every layer's, the logits (written over by their gradient, the
    // fused cross-entropy's) and the few s b h tensors outside the layers (the embeddings'
    // dropout mask, the final LayerNorm's input and output)
    const double logits = 2.0 * B * s * V;
    CHECK(static_cast<double>(m.at_peak.saved_activations) >= l * per_layer + logits);
    CHECK(static_cast<double>(m.at_peak.saved_activations) <= l * per_layer + logits + 6.0 * s * B * h);
    CHECK(static_cast<double>(m.peak_bytes) == Approx(closed).epsilon(0.10));
    CHECK(m.peak_bytes == m.at_peak.total());
    // as the A100's runtime lowers it: fused epilogues keep writing what the backward pass reads,
    // and the LM head's weight gradient does not wait for the embedding's (the logits are freed
    // right after it); FlashAttention's forward and backward kernels (fuse_attention) keep the
    // scores on chip and recompute them, so the 5 a s^2 b term leaves every layer's saved
    // activations (as with Korthikanti et al.'s selective recomputation): 16 bytes per
    // parameter, 34 s b h per layer and the logits, within 10%
    const OpGraph plan = lower(step.graph, load_runtime("tensorrt", std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes"), "fp16");
    int64_t forward = 0, backward = 0;
    for (const Operator& k : plan.ops()) forward += k.op_type == "Attention", backward += k.op_type == "AttentionGrad";
    CHECK(forward == l);
    CHECK(backward == l);
    const MemoryFootprint pm = memory_footprint(plan, step, 2);
    const double flash = 16.0 * static_cast<double>(step.params) + l * 34.0 * s * B * h + logits;
    CHECK(static_cast<double>(pm.peak_bytes) == Approx(flash).epsilon(0.10));
    CHECK(static_cast<double>(pm.peak_bytes) <= static_cast<double>(m.peak_bytes) - 0.9 * l * 5.0 * a * s * s * B);
}

TEST_CASE("a runtime that fuses attention runs its backward as one kernel that recomputes the scores (FlashAttention-2)", "[import][training]") {
    const int64_t B = 2, s = 32, l = 2, h = 64, a = 4, V = 300, d = h / a;
    const OpGraph fwd = gpt(l, h, a, V, s, B);
    const TrainingStep step = make_training_step(fwd, options("none"));
    const OpGraph plan = lower(step.graph, load_runtime("tensorrt", std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes"), "fp16");
    const int64_t scores = B * a * s * s;
    int64_t forward = 0, backward = 0;
    for (const Operator& k : plan.ops()) {
        if (k.op_type != "Attention" && k.op_type != "AttentionGrad") continue;
        INFO(k.name);
        const bool bwd = k.op_type == "AttentionGrad";
        (bwd ? backward : forward) += 1;
        REQUIRE(k.cost.attention.size() == 1);
        const AttentionView& v = k.cost.attention[0];
        CHECK(v.backward == bwd);
        CHECK(v.batch * v.q_len * v.kv_len == scores);
        // no score-sized tensor crosses the kernel's boundary: the forward keeps S and P on chip,
        // the backward recomputes them from Q and K
        for (const auto* side : {&k.inputs, &k.outputs})
            for (int32_t t : *side) CHECK(plan.tensors()[static_cast<size_t>(t)].elems() != scores);
        if (!bwd) {
            CHECK(k.cost.macs == 2 * scores * d);
            continue;
        }
        // S recomputed, dV, dP, dQ, dK: 5 products of the score count by the head dimension
        REQUIRE(k.cost.gemms.size() == 5);
        CHECK(k.cost.macs == 5 * scores * d);
        CHECK(std::find(k.inputs.begin(), k.inputs.end(), v.out.tensor) != k.inputs.end());  // O, for rowsum(dO O)
        for (int32_t t : {v.q.tensor, v.k.tensor, v.v.tensor, v.d_out.tensor, v.dq.tensor, v.dk.tensor, v.dv.tensor}) CHECK(t >= 0);
        CHECK(std::find(k.outputs.begin(), k.outputs.end(), v.dv.tensor) != k.outputs.end());
        CHECK(plan.tensors()[static_cast<size_t>(v.dq.tensor)].elems() == B * s * h);
    }
    CHECK(forward == l);
    CHECK(backward == l);
    // the hardware MACs: the step's, plus the recomputed Q K^T of every layer
    CHECK(plan.total_macs() == step.graph.total_macs() + l * scores * d);
}

TEST_CASE("gradient accumulation runs every microbatch and one optimizer step", "[import][training]") {
    const OpGraph fwd = gpt(2, 64, 4, 300, 32, 2);
    const TrainingStep one = make_training_step(fwd, options("none"));
    const TrainingStep four = make_training_step(fwd, options("none", 4));
    CHECK(four.samples == 4 * one.samples);
    CHECK(four.tokens == 4 * 2 * 32);
    CHECK(four.forward_macs == 4 * one.forward_macs);
    CHECK(four.backward_macs == 4 * one.backward_macs);
    CHECK(four.graph.total_macs() == 4 * one.graph.total_macs());
    int64_t updates_one = 0, updates_four = 0, accumulates = 0;
    for (const Operator& op : one.graph.ops()) updates_one += op.phase == TrainingPhase::Optimizer;
    for (const Operator& op : four.graph.ops()) {
        updates_four += op.phase == TrainingPhase::Optimizer;
        accumulates += op.op_type == "GradAccumulate";
    }
    CHECK(updates_four == updates_one);
    CHECK(accumulates == 3 * updates_one);  // each later microbatch adds into every weight's gradient
    // one microbatch's activations at a time: the same peak of saved activations
    const MemoryFootprint m1 = memory_footprint(one.graph, one, 4), m4 = memory_footprint(four.graph, four, 4);
    CHECK(m4.largest.saved_activations == m1.largest.saved_activations);
    CHECK(m4.at_peak.gradients == m1.at_peak.gradients);
}

TEST_CASE("a mixed-precision optimizer keeps fp32 master weights and moments", "[import][training]") {
    const OpGraph fwd = gpt(1, 64, 4, 300, 16, 1, 0.0);
    const TrainingStep fp32 = make_training_step(fwd, options("none"));
    const TrainingStep mixed = make_training_step(fwd, options("none", 1, true));
    const MemoryFootprint a = memory_footprint(fp32.graph, fp32, 4), b = memory_footprint(mixed.graph, mixed, 2);
    CHECK(a.at_peak.weights == 4 * fp32.params + constants(fwd, 4));
    CHECK(a.at_peak.optimizer_state == 8 * fp32.params);  // Adam's two moments in the weights' precision
    CHECK(b.at_peak.weights == 2 * mixed.params + constants(fwd, 2));
    CHECK(b.at_peak.gradients == 2 * mixed.params);
    CHECK(b.at_peak.optimizer_state == 12 * mixed.params);  // fp32 master copy and two fp32 moments
    int64_t update_flops = 0;
    for (const Operator& op : mixed.graph.ops())
        if (op.phase == TrainingPhase::Optimizer) {
            update_flops += op.cost.flops;
            for (const int32_t t : op.outputs) CHECK(mixed.storage[static_cast<size_t>(t)] != t);  // updates in place
        }
    CHECK(update_flops == 16 * mixed.params);  // Adam's 14, the gradient's unscaling and the half-precision copy
}

TEST_CASE("dropout in training mode is a kernel whose mask the backward reads", "[import][training]") {
    const OpGraph fwd = gpt(1, 64, 4, 300, 16, 2, 0.1);
    int64_t dropouts = 0;
    for (const Operator& op : fwd.ops())
        if (op.op_type == "Dropout") {
            ++dropouts;
            CHECK(op.cost.cls == OpClass::Elementwise);
            REQUIRE(op.outputs.size() == 2);
            CHECK(fwd.tensors()[static_cast<size_t>(op.outputs[1])].elem_bytes == 1);  // a bool mask
        }
    CHECK(dropouts == 4);  // embeddings, attention probabilities, two sublayer outputs
    const TrainingStep step = make_training_step(fwd, options("none"));
    int64_t grads = 0;
    for (const Operator& op : step.graph.ops())
        if (op.op_type == "DropoutGrad") {
            ++grads;
            CHECK(step.graph.tensors()[static_cast<size_t>(op.inputs[1])].elem_bytes == 1);
        }
    CHECK(grads == 4);
}

TEST_CASE("sequence parallelism keeps 1/tp of what tensor parallelism leaves whole, as Korthikanti et al. count it", "[import][training]") {
    const int64_t B = 2, s = 128, l = 4, h = 128, a = 4, V = 512, t = 4;
    const std::string file = test::write_temp(
        "archsim_train_gpt_sp.toml", "[g]\nfamily = \"llm\"\nmodel_family = \"gpt\"\nhidden = " + std::to_string(h) + "\nlayers = " +
                                         std::to_string(l) + "\nheads = " + std::to_string(a) + "\nffn = " + std::to_string(4 * h) +
                                         "\nvocab = " + std::to_string(V) + "\nmax_positions = " + std::to_string(s) +
                                         "\ndropout = 0.1\nsequence = { prompt = " + std::to_string(s) + ", generate = 0 }\n"
                                         "[llama]\nfamily = \"llm\"\nmodel_family = \"llama\"\nhidden = 128\nlayers = 4\nheads = 4\nffn = 256\n"
                                         "vocab = 512\nsequence = { prompt = 128, generate = 0 }\n"
                                         "[moe]\nfamily = \"llm\"\nmodel_family = \"moe\"\nhidden = 128\nlayers = 4\nheads = 4\nffn = 256\n"
                                         "vocab = 512\nexperts = 4\ntop_k = 2\nsequence = { prompt = 128, generate = 0 }\n");
    // layers > 0: a middle chunk of that many layers; 0: the whole model
    auto graph = [&](bool sp, int64_t layers, const std::string& entry = "g") {
        ImportOptions opt;
        opt.batch = B;
        opt.workload_sets = {"shard.tp=" + std::to_string(t), std::string("shard.sequence_parallel=") + (sp ? "true" : "false")};
        if (layers > 0) opt.workload_sets.insert(opt.workload_sets.end(), {"shard.embedding=false", "shard.head=false", "shard.layers=" + std::to_string(layers)});
        return load_workload(file + "#" + entry + "@train", opt).graph;
    };
    auto saved = [&](const OpGraph& fwd) {
        const TrainingStep step = make_training_step(fwd, options("none"));
        return memory_footprint(step.graph, step, 2).saved_after_forward;
    };
    // middle chunks (their layers only): the same contractions, and per layer 10 s b h bytes
    // fewer by (1 - 1/t): the two norms' inputs and outputs (4 s b h elements) and the two
    // residual dropouts' masks (2 s b h bytes; Korthikanti et al. 2023, Table 2: 10 + 24/t -> 34/t)
    const int64_t sbh = s * B * h;
    auto fewer = [&](int64_t layers, const std::string& entry) {
        const OpGraph tp_only = graph(false, layers, entry), seq = graph(true, layers, entry);
        CHECK(seq.total_macs() == tp_only.total_macs());
        return saved(tp_only) - saved(seq);
    };
    CHECK(fewer(l, "g") - fewer(l / 2, "g") == (l - l / 2) * 10 * sbh * (t - 1) / t);
    // a mixture-of-experts layer differs from a Llama layer only after the gather (its experts
    // read views of the gathered rows, kept as the shard too): the same saving per layer
    const int64_t llama = fewer(4, "llama") - fewer(2, "llama"), moe = fewer(4, "moe") - fewer(2, "moe");
    CHECK(llama > 0);
    CHECK(moe == llama);
    // the whole model too: the same MACs, and a norm and its residual stream at s / t tokens
    const OpGraph whole = graph(true, 0);
    CHECK(whole.total_macs() == graph(false, 0).total_macs());
    int64_t gathers = 0, scatters = 0;
    for (const Operator& op : whole.ops()) {
        if (op.op_type == "LayerNormalization") CHECK(whole.tensors()[static_cast<size_t>(op.inputs[0])].shape == std::vector<int64_t>{B, s / t, h});
        gathers += op.op_type == "SequenceGather", scatters += op.op_type == "SequenceScatter";
    }
    CHECK(gathers == 2 * l + 1);   // before each layer's QKV and FC1 GEMMs, and the LM head
    CHECK(scatters == 2 * l + 1);  // after each layer's output projection and FC2, and the embedding
    // Megatron needs t to divide the tokens
    ImportOptions odd;
    odd.workload_sets = {"shard.tp=3", "shard.sequence_parallel=true"};
    const std::string odd_file = test::write_temp("archsim_train_gpt_sp3.toml", "[g]\nfamily = \"llm\"\nmodel_family = \"gpt\"\nhidden = 96\nlayers = 1\n"
                                                                                 "heads = 3\nffn = 384\nvocab = 384\nmax_positions = 128\n"
                                                                                 "sequence = { prompt = 100, generate = 0 }\n");
    CHECK_THROWS_WITH(load_workload(odd_file + "#g@train", odd), Catch::Contains("shard.sequence_parallel") && Catch::Contains("100 tokens"));
}
