#include "workloads/generators/llm.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "sim/base/error.h"
#include "sim/base/precision.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/moe.h"
#include "workloads/generators/onnx_builder.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {

/// Published shapes. Sources: GPT-2 (Radford et al. 2019; Hugging Face gpt2 / gpt2-medium
/// config.json), Llama 2 (Touvron et al. 2023, Llama-2-7b-hf config.json), Llama 3 (Meta-Llama-3-8B
/// config.json), Mixtral (Jiang et al. 2024, "Mixtral of Experts"; Mixtral-8x7B-v0.1 config.json).
struct Preset {
    const char* name;
    LlmShape shape;
};
const std::vector<Preset>& presets() {
    static const std::vector<Preset> p = {
        {"gpt2-small", {"gpt", 768, 12, 12, 12, 3072, 50257, 0, 0, 1024}},
        {"gpt2-medium", {"gpt", 1024, 24, 16, 16, 4096, 50257, 0, 0, 1024}},
        {"llama2-7b", {"llama", 4096, 32, 32, 32, 11008, 32000, 0, 0, 0}},
        {"llama3-8b", {"llama", 4096, 32, 32, 8, 14336, 128256, 0, 0, 0}},
        {"mixtral-8x7b", {"moe", 4096, 32, 32, 8, 14336, 32000, 8, 2, 0}},
    };
    return p;
}

using Emit = gen::Emitter;

/// SwiGLU feed-forward on `x` [rows..., D]: down(silu(gate(x)) * up(x)).
std::string swiglu(Emit& e, const std::string& x, const std::string& w, int64_t d, int64_t f) {
    const std::string gate = e.linear(x, w + ".gate_proj", d, f, false);
    const std::string up = e.linear(x, w + ".up_proj", d, f, false);
    const std::string act = gen::activation(e.graph(), w + "/act", "silu", gate);
    return e.linear(e.node("Mul", {act, up}), w + ".down_proj", f, d, false);
}

}  // namespace

namespace {
int64_t elem_bytes(const std::string& precision) { return operand_bytes(parse_precision(precision, "precision")); }
}  // namespace

int64_t LlmShape::weight_elem_bytes() const { return elem_bytes(weights_precision); }
int64_t LlmShape::activation_elem_bytes() const { return elem_bytes(activations_precision); }

int64_t LlmShape::parameters() const {
    const int64_t hd = hidden / heads, d = hidden;
    const bool gpt = model_family == "gpt";
    int64_t attn = d * heads * hd + 2 * d * kv_heads * hd + heads * hd * d;
    if (gpt) attn += heads * hd + 2 * kv_heads * hd + d;  // biases
    int64_t ffn_p = gpt ? 2 * d * ffn + ffn + d : 3 * d * ffn;
    if (model_family == "moe") ffn_p = experts * 3 * d * ffn + d * experts;
    const int64_t norms = gpt ? 4 * d : 2 * d;
    int64_t total = layers * (attn + ffn_p + norms) + vocab * d + (gpt ? 2 * d : d);
    if (gpt) total += max_positions * d;  // tied LM head
    else total += vocab * d;              // untied LM head
    return total;
}

LlmShape read_llm_shape(const GeneratorArgs& a) {
    LlmShape s;
    if (a.has("preset")) {
        std::vector<std::string> names;
        for (const auto& p : presets()) names.push_back(p.name);
        const std::string name = a.choice_or("preset", "", names);
        for (const auto& p : presets())
            if (name == p.name) s = p.shape;
    }
    const bool preset = s.hidden > 0;
    s.model_family = a.choice_or("model_family", preset ? s.model_family : "llama", {"gpt", "llama", "moe"});
    auto field = [&](const std::string& key, int64_t& v, int64_t min) { v = preset ? a.integer_or(key, v, min) : a.integer(key, min); };
    field("hidden", s.hidden, 1);
    field("layers", s.layers, 1);
    field("heads", s.heads, 1);
    s.kv_heads = a.integer_or("kv_heads", preset ? s.kv_heads : s.heads);
    field("ffn", s.ffn, 1);
    field("vocab", s.vocab, 1);
    if (s.model_family == "moe") {
        field("experts", s.experts, 1);
        field("top_k", s.top_k, 1);
        if (s.top_k > s.experts) throw UserError(a.where() + ".top_k", "larger than experts");
    }
    if (s.model_family == "gpt") s.max_positions = a.integer_or("max_positions", s.max_positions > 0 ? s.max_positions : 1024);
    if (s.hidden % s.heads != 0) throw UserError(a.where() + ".heads", "does not divide hidden");
    if (s.heads % s.kv_heads != 0) throw UserError(a.where() + ".kv_heads", "does not divide heads");
    s.prompt = a.integer_or("sequence.prompt", 128);
    s.generate = a.integer_or("sequence.generate", 128, 0);  // 0: training only
    s.weights_precision = a.choice_or("precision.weights", "fp16", precision_names());
    s.activations_precision = a.choice_or("precision.activations", s.weights_precision, precision_names());
    s.dropout = a.real_or("dropout", s.model_family == "gpt" ? 0.1 : 0.0, 0.0, 0.99);
    if (s.model_family == "gpt" && s.prompt + s.generate > s.max_positions)
        throw UserError(a.where() + ".sequence", "prompt + generate exceeds max_positions " + std::to_string(s.max_positions));
    return s;
}

std::vector<int64_t> decode_step_samples(int64_t steps) {
    std::vector<int64_t> out;
    if (steps > 0)
        for (const int64_t t : {int64_t(0), (steps - 1) / 3, 2 * (steps - 1) / 3, steps - 1})
            if (out.empty() || out.back() != t) out.push_back(t);
    return out;
}

int64_t padded_vocab(int64_t vocab, int64_t tp) {
    const int64_t unit = 128 * tp;
    return (vocab + unit - 1) / unit * unit;
}

int64_t vocab_shard(int64_t vocab, int64_t tp) { return tp > 1 ? padded_vocab(vocab, tp) / tp : vocab; }

LlmShard read_llm_shard(const GeneratorArgs& a, const LlmShape& s) {
    LlmShard sh;
    sh.tp = a.integer_or("shard.tp", 1);
    sh.ep = a.integer_or("shard.ep", 1);
    if (sh.ep > 1 && (s.model_family != "moe" || s.experts % sh.ep != 0 || s.experts / sh.ep < s.top_k))
        throw UserError(a.where() + ".shard.ep = " + std::to_string(sh.ep), "needs a moe model whose experts it divides, leaving at least top_k per rank");
    sh.layers = a.integer_or("shard.layers", s.layers, 0);
    sh.embedding = a.boolean_or("shard.embedding", true);
    sh.head = a.boolean_or("shard.head", true);
    auto divides = [&](const char* what, int64_t n) {
        if (n % sh.tp != 0) throw UserError(a.where() + ".shard.tp = " + std::to_string(sh.tp), std::string("does not divide ") + what + " (" + std::to_string(n) + ")");
    };
    divides("heads", s.heads);
    divides("ffn", s.ffn);
    if (s.kv_heads % sh.tp != 0 && sh.tp % s.kv_heads != 0)
        throw UserError(a.where() + ".shard.tp = " + std::to_string(sh.tp), "neither divides nor is a multiple of kv_heads (" + std::to_string(s.kv_heads) + ")");
    if (sh.layers > s.layers) throw UserError(a.where() + ".shard.layers = " + std::to_string(sh.layers), "more than the model's " + std::to_string(s.layers) + " layers");
    sh.sequence_parallel = a.boolean_or("shard.sequence_parallel", false);
    if (sh.sequence_parallel && sh.tp > 1 && s.prompt % sh.tp != 0)
        throw UserError(a.where() + ".shard.sequence_parallel", "needs shard.tp (" + std::to_string(sh.tp) + ") to divide the prompt's " +
                                                                    std::to_string(s.prompt) + " tokens");
    return sh;
}

void build_llm(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const LlmShape s = read_llm_shape(a);
    int64_t kv_len = 0;  // 0: prefill
    const std::string& phase = a.phase();
    if (phase.rfind("decode=", 0) == 0) {
        try {
            kv_len = std::stoll(phase.substr(7));
        } catch (...) {
            kv_len = -1;
        }
        if (kv_len < 1) throw UserError(a.where() + "@" + phase, "decode needs a KV length >= 1: @decode=L");
    } else if (!phase.empty() && phase != "prefill" && phase != "train") {
        throw UserError(a.where() + "@" + phase, "unknown phase (prefill, decode=L for a KV cache of L tokens, or train)");
    }
    const bool gpt = s.model_family == "gpt", decode = kv_len > 0, train = phase == "train";
    const double p_drop = train ? s.dropout : 0.0;
    const LlmShard sh = read_llm_shard(a, s);
    const int64_t d = s.hidden, hd = s.hidden / s.heads, heads = s.heads / sh.tp, kvh = std::max<int64_t>(1, s.kv_heads / sh.tp),
                  grp = heads / kvh, ffn = s.ffn / sh.tp, vocab = vocab_shard(s.vocab, sh.tp);
    const int64_t sq = decode ? 1 : s.prompt, t = decode ? kv_len + 1 : s.prompt;
    // sequence parallelism: the residual stream holds this rank's sq / tp tokens (LlmShard)
    const bool sp = sh.sequence_parallel && sh.tp > 1 && !decode;
    const int64_t sq_res = sp ? sq / sh.tp : sq;
    auto& g = gen::start_model(model, decode ? "llm_decode" : train ? "llm_train" : "llm_prefill");
    if (train) model.mutable_opset_import(0)->set_version(17);  // LayerNormalization
    if (sp) {
        auto* o = model.add_opset_import();
        o->set_domain(kArchsimDomain);
        o->set_version(1);
    }
    // the tokens gathered from the tensor-parallel ranks ([B, sq/tp, D] -> [B, sq, D]) or
    // scattered back to them (the reverse): archsim.SequenceGather / SequenceScatter
    auto tokens = [&](Emit& e, const char* op, const std::string& x, int64_t to_tokens) {
        onnx::NodeProto* n = nullptr;
        const std::string y = e.node(op, {x}, &n);
        n->set_domain(kArchsimDomain);
        gen::set_int(*n, "parts", sh.tp);
        gen::add_value_info(g, y, {batch, to_tokens, d});
        return y;
    };
    auto gathered = [&](Emit& e, const std::string& x) { return sp ? tokens(e, "SequenceGather", x, sq) : x; };
    auto scattered = [&](Emit& e, const std::string& x) { return sp ? tokens(e, "SequenceScatter", x, sq_res) : x; };
    // a row-parallel linear: under sequence parallelism its bias after the scatter
    auto row_linear = [&](Emit& e, const std::string& x, const std::string& w, int64_t in, bool bias) {
        if (!sp) return e.linear(x, w, in, d, bias);
        std::string y = scattered(e, e.linear(x, w, in, d, false));
        if (bias) {
            gen::add_weight(g, w + ".bias", {d});
            y = e.node("Add", {y, w + ".bias"});
        }
        return y;
    };
    // the model's norm: GPT's LayerNorm one operator in training (what backward saves: its
    // input), decomposed otherwise; Llama's RMSNorm decomposed
    auto norm = [&](Emit& e, const std::string& x, const std::string& w, int64_t d) {
        return gpt && train ? e.layer_norm(x, w, d) : e.norm(x, w, d, !gpt);
    };
    Emit top(g, "/model");
    std::string x = "hidden_in";
    if (!sh.embedding) {  // a later pipeline chunk: the previous chunk's hidden states come in
        gen::add_input(g, x, {batch, sq_res, d});
    } else {
        auto* ids = g.add_input();
        ids->set_name("input_ids");
        ids->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
        for (int64_t v : {batch, sq}) ids->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(v);
        gen::add_weight(g, "model.embed_tokens.weight", {vocab, d});  // a vocabulary-parallel shard under tensor parallelism
        x = top.node("Gather", {"model.embed_tokens.weight", "input_ids"});
    }
    if (gpt && sh.embedding) {
        auto* pos = g.add_input();
        pos->set_name("position_ids");
        pos->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
        for (int64_t v : {int64_t(1), sq}) pos->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(v);
        gen::add_weight(g, "model.embed_positions.weight", {s.max_positions, d});
        x = top.node("Add", {x, top.node("Gather", {"model.embed_positions.weight", "position_ids"})});
    }
    if (sh.embedding) x = top.dropout(scattered(top, x), p_drop);
    for (int64_t l = 0; l < sh.layers; ++l) {
        const std::string w = "model.layers." + std::to_string(l);
        Emit e(g, "/model/layers." + std::to_string(l));
        const std::string h = gathered(e, norm(e, x, w + ".input_layernorm", d));
        const std::string q = e.linear(h, w + ".self_attn.q_proj", d, heads * hd, gpt);
        const std::string k = e.linear(h, w + ".self_attn.k_proj", d, kvh * hd, gpt);
        const std::string v = e.linear(h, w + ".self_attn.v_proj", d, kvh * hd, gpt);
        // queries grouped by KV head: [B, KVH, G * S, hd]
        const std::string qr = e.reshape(e.transpose(e.reshape(q, {batch, sq, kvh, grp, hd}), {0, 2, 3, 1, 4}), {batch, kvh, grp * sq, hd});
        std::string kt, vv;
        if (decode) {  // the cache, this token's K and V included; the new K and V are the present outputs
            kt = "past_key_" + std::to_string(l), vv = "past_value_" + std::to_string(l);
            gen::add_input(g, kt, {batch, kvh, hd, t});
            gen::add_input(g, vv, {batch, kvh, t, hd});
            gen::add_output(g, k, {batch, sq, kvh * hd});
            gen::add_output(g, v, {batch, sq, kvh * hd});
        } else {
            kt = e.transpose(e.reshape(k, {batch, sq, kvh, hd}), {0, 2, 3, 1});
            vv = e.transpose(e.reshape(v, {batch, sq, kvh, hd}), {0, 2, 1, 3});
        }
        const std::string scores = e.node("Mul", {e.node("MatMul", {qr, kt}), e.scalar(1.0f / std::sqrt(float(hd)))});
        onnx::NodeProto* sm = nullptr;
        const std::string probs = e.dropout(e.node("Softmax", {scores}, &sm), p_drop);
        gen::set_int(*sm, "axis", -1);
        const std::string ctx = e.reshape(e.transpose(e.reshape(e.node("MatMul", {probs, vv}), {batch, kvh, grp, sq, hd}), {0, 3, 1, 2, 4}),
                                          {batch, sq, heads * hd});
        x = e.node("Add", {x, e.dropout(row_linear(e, ctx, w + ".self_attn.o_proj", heads * hd, gpt), p_drop)});
        const std::string h2 = gathered(e, norm(e, x, w + ".post_attention_layernorm", d));
        std::string f;
        if (gpt) {
            const std::string pre = e.linear(h2, w + ".mlp.fc_in", d, ffn, true);
            std::string act;
            if (train) {  // one GELU operator (opset 20's Gelu; its shape given, ONNX 1.12 predates it)
                act = e.node("Gelu", {pre});
                gen::add_value_info(g, act, {batch, sq, ffn});
            } else {
                act = gen::activation(g, "/model/layers." + std::to_string(l) + "/mlp", "gelu", pre);
            }
            f = row_linear(e, act, w + ".mlp.fc_out", ffn, true);
        } else if (s.model_family == "llama") {
            f = scattered(e, swiglu(e, h2, w + ".mlp", d, ffn));
        } else {  // moe: the router and the active experts (moe.h)
            const std::string mixed = gen::moe_layer(e, e.reshape(h2, {batch * sq, d}), w + ".block_sparse_moe", batch * sq, d, s.experts / sh.ep, s.top_k,
                                                     [&](gen::Emitter& ex, const std::string& rows, const std::string& ew) {
                                                         return swiglu(ex, rows, ew, d, ffn);
                                                     });
            f = scattered(e, e.reshape(mixed, {batch, sq, d}));
        }
        x = e.node("Add", {x, e.dropout(f, p_drop)});
    }
    if (!sh.head) {  // a pipeline chunk before the last: its hidden states go on to the next
        gen::add_output(g, x, {batch, sq_res, d});
        return;
    }
    x = gathered(top, norm(top, x, "model.norm", d));
    const int64_t rows = train ? sq : 1;  // the LM head's tokens per sequence: all in training, else the last
    if (!decode && !train) x = top.node("Slice", {x, top.ints({sq - 1}), top.ints({sq}), top.ints({1})});
    std::string logits;
    if (gpt) {  // tied: the embedding table, transposed by Gemm (the last pipeline chunk keeps its own copy)
        if (!sh.embedding) gen::add_weight(g, "model.embed_tokens.weight", {vocab, d});
        onnx::NodeProto* gm = nullptr;
        logits = top.node("Gemm", {top.reshape(x, {batch * rows, d}), "model.embed_tokens.weight"}, &gm);
        gen::set_int(*gm, "transB", 1);
        gen::add_output(g, logits, {batch * rows, vocab});
    } else {
        logits = top.linear(x, "lm_head", d, vocab, false);
        gen::add_output(g, logits, {batch, rows, vocab});
    }
}

}  // namespace archsim
