#include "workloads/generators/transformer.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

using Namer = gen::Emitter;

/// LayerNorm over the last axis, decomposed as torch.onnx (opset 13) exports it, its nodes
/// named under `prefix`.
std::string layer_norm(onnx::GraphProto& g, const std::string& prefix, const std::string& weights, const std::string& x, int64_t d) {
    return Namer(g, prefix).norm(x, weights, d, false);
}

}  // namespace

namespace {

/// The "gpt2" style: GPT-2 blocks as Hugging Face's GPT2Block exports (pre-LN, fused c_attn and a
/// Split, causal mask by Where, tanh-GELU, final LayerNorm), batch-first.
void build_gpt2_stack(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model, int64_t layers, int64_t d, int64_t heads,
                      int64_t ffn, int64_t seq) {
    const int64_t hd = d / heads;
    auto& g = gen::start_model(model, "gpt2_stack");
    gen::add_input(g, "input", {batch, seq, d});
    std::string x = "input";
    for (int64_t l = 0; l < layers; ++l) {
        const std::string lp = "/h." + std::to_string(l), wp = "h." + std::to_string(l);
        Namer blk(g, lp);
        const std::string h1 = layer_norm(g, lp + "/ln_1", wp + ".ln_1", x, d);
        Namer ca(g, lp + "/attn/c_attn");
        gen::add_weight(g, wp + ".attn.c_attn.weight", {d, 3 * d});
        gen::add_weight(g, wp + ".attn.c_attn.bias", {3 * d});
        const std::string qkv = ca.node("Add", {wp + ".attn.c_attn.bias", ca.node("MatMul", {h1, wp + ".attn.c_attn.weight"})});
        Namer at(g, lp + "/attn");
        const std::string split = lp + "/attn/Split";
        auto& sp = gen::add_node(g, "Split", split, {qkv, at.ints({d, d, d})}, {split + "_output_0", split + "_output_1", split + "_output_2"});
        gen::set_int(sp, "axis", 2);
        const std::string q = at.transpose(at.reshape(split + "_output_0", {batch, seq, heads, hd}), {0, 2, 1, 3});
        const std::string k4 = at.reshape(split + "_output_1", {batch, seq, heads, hd});
        const std::string v4 = at.reshape(split + "_output_2", {batch, seq, heads, hd});
        const std::string kt = at.transpose(k4, {0, 2, 3, 1});
        const std::string v = at.transpose(v4, {0, 2, 1, 3});
        const std::string scores = at.node("Mul", {at.node("MatMul", {q, kt}), at.scalar(1.0f / std::sqrt(float(hd)))});
        // the causal mask: a constant [1, 1, S, S], true above the diagonal
        onnx::NodeProto* mask_node = nullptr;
        const std::string mask = at.node("Constant", {}, &mask_node);
        auto* attr = mask_node->add_attribute();
        attr->set_name("value");
        attr->set_type(onnx::AttributeProto::TENSOR);
        auto* t = attr->mutable_t();
        t->set_data_type(onnx::TensorProto::BOOL);
        for (int64_t dim : {int64_t(1), int64_t(1), seq, seq}) t->add_dims(dim);
        for (int64_t i = 0; i < seq; ++i)
            for (int64_t j = 0; j < seq; ++j) t->add_int32_data(j > i);
        const std::string masked = at.node("Where", {mask, at.scalar(-1e4f), scores});
        onnx::NodeProto* sm = nullptr;
        const std::string probs = at.node("Softmax", {masked}, &sm);
        gen::set_int(*sm, "axis", -1);
        const std::string ctx = at.reshape(at.transpose(at.node("MatMul", {probs, v}), {0, 2, 1, 3}), {batch, seq, d});
        Namer cp(g, lp + "/attn/c_proj");
        gen::add_weight(g, wp + ".attn.c_proj.weight", {d, d});
        gen::add_weight(g, wp + ".attn.c_proj.bias", {d});
        const std::string attn = cp.node("Add", {wp + ".attn.c_proj.bias", cp.node("MatMul", {ctx, wp + ".attn.c_proj.weight"})});
        const std::string r1 = blk.node("Add", {x, attn});
        const std::string h2 = layer_norm(g, lp + "/ln_2", wp + ".ln_2", r1, d);
        Namer m0(g, lp + "/mlp/mlp.0");
        gen::add_weight(g, wp + ".mlp.0.weight", {d, ffn});
        gen::add_weight(g, wp + ".mlp.0.bias", {ffn});
        const std::string u = m0.node("Add", {wp + ".mlp.0.bias", m0.node("MatMul", {h2, wp + ".mlp.0.weight"})});
        // tanh GELU: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        Namer m1(g, lp + "/mlp/mlp.1");
        const std::string half = m1.node("Mul", {u, m1.scalar(0.5f)});
        const std::string cube = m1.node("Mul", {m1.node("Mul", {m1.node("Mul", {u, m1.scalar(0.044715f)}), u}), u});
        const std::string inner = m1.node("Mul", {m1.node("Add", {u, cube}), m1.scalar(0.7978845608f)});
        const std::string gelu = m1.node("Mul", {half, m1.node("Add", {m1.node("Tanh", {inner}), m1.scalar(1.0f)})});
        Namer m2(g, lp + "/mlp/mlp.2");
        gen::add_weight(g, wp + ".mlp.2.weight", {ffn, d});
        gen::add_weight(g, wp + ".mlp.2.bias", {d});
        const std::string down = m2.node("Add", {wp + ".mlp.2.bias", m2.node("MatMul", {gelu, wp + ".mlp.2.weight"})});
        x = blk.node("Add", {r1, down});
    }
    x = layer_norm(g, "/ln_f", "ln_f", x, d);
    gen::add_output(g, x, {batch, seq, d});
    (void)a;
}

}  // namespace

void build_transformer_encoder(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t layers = a.integer("layers");
    const int64_t d = a.integer("d_model");
    const int64_t heads = a.integer("heads");
    const int64_t ffn = a.integer("ffn");
    const int64_t seq = a.integer("sequence");
    const std::string act = a.choice_or("activation", "gelu", {"gelu", "relu"});
    if (d % heads != 0) throw UserError(a.where() + ".heads", std::to_string(heads) + " heads do not divide d_model " + std::to_string(d));
    if (a.choice_or("style", "torch_encoder", {"torch_encoder", "gpt2"}) == "gpt2") {
        build_gpt2_stack(a, batch, model, layers, d, heads, ffn, seq);
        return;
    }
    const int64_t hd = d / heads, bh = batch * heads;
    auto& g = gen::start_model(model, "transformer_encoder");
    gen::add_input(g, "input", {batch, seq, d});
    std::string x = "input";
    for (int64_t l = 0; l < layers; ++l) {
        const std::string lp = "/encoder/layers." + std::to_string(l);
        const std::string wp = "encoder.layers." + std::to_string(l);
        // self-attention, sequence-first
        Namer at(g, lp + "/self_attn");
        const std::string xs = at.transpose(x, {1, 0, 2});  // [S, B, D]
        gen::add_weight(g, wp + ".self_attn.in_proj_weight_t", {d, 3 * d});
        gen::add_weight(g, wp + ".self_attn.in_proj_bias", {3 * d});
        const std::string qkv = at.node("Add", {wp + ".self_attn.in_proj_bias", at.node("MatMul", {xs, wp + ".self_attn.in_proj_weight_t"})});
        std::string part[3];
        for (int i = 0; i < 3; ++i) part[i] = at.node("Slice", {qkv, at.ints({i * d}), at.ints({(i + 1) * d}), at.ints({-1})});
        const std::string q = at.transpose(at.reshape(part[0], {seq, bh, hd}), {1, 0, 2});  // [BH, S, hd]
        const std::string k = at.reshape(part[1], {seq, bh, hd});
        const std::string v = at.transpose(at.reshape(part[2], {seq, bh, hd}), {1, 0, 2});
        const std::string qs = at.node("Div", {q, at.scalar(std::sqrt(static_cast<float>(hd)))});
        const std::string kt = at.transpose(k, {1, 2, 0});  // [BH, hd, S]
        const std::string scores = at.node("MatMul", {qs, kt});
        onnx::NodeProto* sm = nullptr;
        const std::string probs = at.node("Softmax", {scores}, &sm);
        gen::set_int(*sm, "axis", -1);
        const std::string ctx = at.node("MatMul", {probs, v});  // [BH, S, hd]
        const std::string flat = at.reshape(at.transpose(ctx, {1, 0, 2}), {seq * batch, d});
        gen::add_weight(g, wp + ".self_attn.out_proj.weight", {d, d});
        gen::add_weight(g, wp + ".self_attn.out_proj.bias", {d});
        onnx::NodeProto* gemm = nullptr;
        const std::string proj = at.node("Gemm", {flat, wp + ".self_attn.out_proj.weight", wp + ".self_attn.out_proj.bias"}, &gemm);
        gen::set_int(*gemm, "transB", 1);
        const std::string attn = at.transpose(at.reshape(proj, {seq, batch, d}), {1, 0, 2});  // [B, S, D]
        Namer ly(g, lp);
        const std::string h1 = layer_norm(g, lp + "/norm1", wp + ".norm1", ly.node("Add", {x, attn}), d);
        // feed-forward
        Namer f1(g, lp + "/linear1");
        gen::add_weight(g, wp + ".linear1.weight_t", {d, ffn});
        gen::add_weight(g, wp + ".linear1.bias", {ffn});
        const std::string u = f1.node("Add", {wp + ".linear1.bias", f1.node("MatMul", {h1, wp + ".linear1.weight_t"})});
        std::string a1;
        if (act == "gelu") {  // x * 0.5 * (1 + erf(x / sqrt(2)))
            const std::string e = ly.node("Erf", {ly.node("Div", {u, ly.scalar(std::sqrt(2.0f))})});
            a1 = ly.node("Mul", {ly.node("Mul", {u, ly.node("Add", {e, ly.scalar(1.0f)})}), ly.scalar(0.5f)});
        } else {
            a1 = ly.node("Relu", {u});
        }
        Namer f2(g, lp + "/linear2");
        gen::add_weight(g, wp + ".linear2.weight_t", {ffn, d});
        gen::add_weight(g, wp + ".linear2.bias", {d});
        const std::string dn = f2.node("Add", {wp + ".linear2.bias", f2.node("MatMul", {a1, wp + ".linear2.weight_t"})});
        x = layer_norm(g, lp + "/norm2", wp + ".norm2", ly.node("Add", {h1, dn}), d);
    }
    gen::add_output(g, x, {batch, seq, d});
}

}  // namespace archsim
