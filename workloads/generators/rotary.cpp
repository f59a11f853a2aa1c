#include "workloads/generators/rotary.h"

#include <onnx/onnx_pb.h>

#include <cmath>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

/// x cos + rotate_half(x) sin on `x` [B, H, S, hd]; the tables broadcast from [S, hd].
std::string rotate(gen::Emitter& e, const std::string& x, int64_t hd) {
    onnx::NodeProto* n = nullptr;
    const std::string x1 = e.node("Slice", {x, e.ints({0}), e.ints({hd / 2}), e.ints({3})});
    const std::string x2 = e.node("Slice", {x, e.ints({hd / 2}), e.ints({hd}), e.ints({3})});
    const std::string rot = e.node("Concat", {e.node("Neg", {x2}), x1}, &n);
    gen::set_int(*n, "axis", -1);
    return e.node("Add", {e.node("Mul", {x, "rope_cos"}), e.node("Mul", {rot, "rope_sin"})});
}

}  // namespace

void build_rotary_encoder(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t layers = a.integer("layers");
    const int64_t d = a.integer("d_model");
    const int64_t heads = a.integer("heads");
    const int64_t ffn = a.integer_or("ffn", 4 * d);
    const int64_t seq = a.integer("sequence");
    const std::string act = a.choice_or("activation", "gelu", {"gelu", "relu"});
    const int64_t classes = a.integer_or("classes", 0, 0);
    if (d % heads != 0 || (d / heads) % 2 != 0)
        throw UserError(a.where() + ".heads", std::to_string(heads) + " heads do not divide d_model " + std::to_string(d) + " into an even head dimension");
    const int64_t hd = d / heads;
    auto& g = gen::start_model(model, "rotary_encoder");
    gen::add_input(g, "input", {batch, seq, d});
    gen::add_input(g, "rope_cos", {seq, hd});
    gen::add_input(g, "rope_sin", {seq, hd});
    std::string x = "input";
    for (int64_t l = 0; l < layers; ++l) {
        const std::string w = "layers." + std::to_string(l);
        gen::Emitter e(g, "/" + w);
        const std::string h = e.norm(x, w + ".norm1", d, false);
        auto heads_of = [&](const std::string& t) { return e.transpose(e.reshape(t, {batch, seq, heads, hd}), {0, 2, 1, 3}); };
        const std::string q = rotate(e, heads_of(e.linear(h, w + ".attn.q_proj", d, d, true)), hd);
        const std::string k = rotate(e, heads_of(e.linear(h, w + ".attn.k_proj", d, d, true)), hd);
        const std::string v = heads_of(e.linear(h, w + ".attn.v_proj", d, d, true));
        const std::string scores = e.node("Mul", {e.node("MatMul", {q, e.transpose(k, {0, 1, 3, 2})}), e.scalar(1.0f / std::sqrt(float(hd)))});
        onnx::NodeProto* sm = nullptr;
        const std::string probs = e.node("Softmax", {scores}, &sm);
        gen::set_int(*sm, "axis", -1);
        const std::string ctx = e.reshape(e.transpose(e.node("MatMul", {probs, v}), {0, 2, 1, 3}), {batch, seq, d});
        x = e.node("Add", {x, e.linear(ctx, w + ".attn.o_proj", d, d, true)});
        const std::string u = e.linear(e.norm(x, w + ".norm2", d, false), w + ".mlp.fc1", d, ffn, true);
        const std::string f = gen::activation(g, "/" + w + "/mlp/act", act, u);
        x = e.node("Add", {x, e.linear(f, w + ".mlp.fc2", ffn, d, true)});
    }
    gen::Emitter top(g, "/final");
    x = top.norm(x, "norm", d, false);
    if (classes > 0) x = top.linear(x, "head", d, classes, true);
    gen::add_output(g, x, {batch, seq, classes > 0 ? classes : d});
}

}  // namespace archsim
