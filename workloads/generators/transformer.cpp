#include "workloads/generators/transformer.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "sim/common/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

/// Emits nodes named like the exporter's: "<prefix>/<Op>", "<prefix>/<Op>_1", ... per prefix.
class Namer {
public:
    Namer(onnx::GraphProto& g, std::string prefix) : m_g(g), m_prefix(std::move(prefix)) {}
    /// Adds `op` on `inputs`; returns its output's name.
    std::string node(const std::string& op, const std::vector<std::string>& inputs, onnx::NodeProto** out = nullptr) {
        int& n = m_count[op];
        const std::string name = m_prefix + "/" + op + (n ? "_" + std::to_string(n) : "");
        ++n;
        auto& nd = gen::add_node(m_g, op, name, inputs, {name + "_output_0"});
        if (out) *out = &nd;
        return name + "_output_0";
    }
    std::string transpose(const std::string& x, const std::vector<int64_t>& perm) {
        onnx::NodeProto* n = nullptr;
        const std::string y = node("Transpose", {x}, &n);
        gen::set_ints(*n, "perm", perm);
        return y;
    }
    std::string reshape(const std::string& x, const std::vector<int64_t>& shape) {
        const std::string s = m_prefix + "/shape_" + std::to_string(m_consts++);
        gen::add_int64_constant(m_g, s, shape);
        return node("Reshape", {x, s});
    }
    std::string scalar(float v) {
        const std::string s = m_prefix + "/scalar_" + std::to_string(m_consts++);
        gen::add_float_constant(m_g, s, v);
        return s;
    }
    std::string ints(const std::vector<int64_t>& v) {
        const std::string s = m_prefix + "/ints_" + std::to_string(m_consts++);
        gen::add_int64_constant(m_g, s, v);
        return s;
    }

private:
    onnx::GraphProto& m_g;
    std::string m_prefix;
    std::map<std::string, int> m_count;
    int m_consts = 0;
};

/// LayerNorm over the last axis, decomposed as torch.onnx (opset 13) exports it.
std::string layer_norm(onnx::GraphProto& g, const std::string& prefix, const std::string& weights, const std::string& x, int64_t d) {
    Namer n(g, prefix);
    onnx::NodeProto* rm = nullptr;
    const std::string mean = n.node("ReduceMean", {x}, &rm);
    gen::set_ints(*rm, "axes", {-1});
    const std::string centred = n.node("Sub", {x, mean});
    const std::string sq = n.node("Pow", {centred, n.scalar(2.0f)});
    const std::string var = n.node("ReduceMean", {sq}, &rm);
    gen::set_ints(*rm, "axes", {-1});
    const std::string std_ = n.node("Sqrt", {n.node("Add", {var, n.scalar(1e-5f)})});
    const std::string normed = n.node("Div", {centred, std_});
    gen::add_weight(g, weights + ".weight", {d});
    gen::add_weight(g, weights + ".bias", {d});
    return n.node("Add", {n.node("Mul", {normed, weights + ".weight"}), weights + ".bias"});
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
