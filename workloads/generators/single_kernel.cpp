// family = "kernel": one operator alone (single_kernel.h).
#include "workloads/generators/single_kernel.h"

#include <cmath>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

/// `dims` with a leading batch axis when batch > 1.
std::vector<int64_t> batched(int64_t batch, std::vector<int64_t> dims) {
    if (batch > 1) dims.insert(dims.begin(), batch);
    return dims;
}

void build_attention(const GeneratorArgs& a, int64_t batch, onnx::GraphProto& g) {
    const int64_t hidden = a.integer("hidden"), heads = a.integer("heads"), seq = a.integer("sequence");
    const bool causal = a.boolean_or("causal", false);
    if (hidden % heads != 0)
        throw UserError(a.where() + ".heads", std::to_string(heads) + " heads do not divide hidden " + std::to_string(hidden));
    const int64_t hd = hidden / heads;
    gen::add_input(g, "input", {batch, seq, hidden});
    gen::Emitter e(g, "/attn");
    auto head_major = [&](const std::string& name, const std::vector<int64_t>& perm) {
        gen::add_weight(g, "attn." + name + ".weight", {hidden});
        const std::string x = gen::Emitter(g, "/attn/" + name).node("Mul", {"input", "attn." + name + ".weight"});
        return e.transpose(e.reshape(x, {batch, seq, heads, hd}), perm);
    };
    const std::string q = head_major("q", {0, 2, 1, 3}), kt = head_major("k", {0, 2, 3, 1}), v = head_major("v", {0, 2, 1, 3});
    std::string scores = e.node("Mul", {e.node("MatMul", {q, kt}), e.scalar(1.0f / std::sqrt(static_cast<float>(hd)))});
    if (causal) {
        auto* mask = g.add_initializer();
        mask->set_name("attn.causal_mask");
        mask->set_data_type(onnx::TensorProto::BOOL);
        for (int64_t d : {int64_t(1), int64_t(1), seq, seq}) mask->add_dims(d);
        mask->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
        auto* where = mask->add_external_data();
        where->set_key("location");
        where->set_value("causal_mask.bin");  // never read: the importer reads dims only
        scores = e.node("Where", {"attn.causal_mask", e.scalar(-1e4f), scores});
    }
    onnx::NodeProto* sm = nullptr;
    const std::string probs = e.node("Softmax", {scores}, &sm);
    gen::set_int(*sm, "axis", -1);
    const std::string out = e.reshape(e.transpose(e.node("MatMul", {probs, v}), {0, 2, 1, 3}), {batch, seq, hidden});
    gen::add_output(g, out, {batch, seq, hidden});
}

}  // namespace

void build_single_kernel(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const std::string op = a.choice_or("op", "", {"matmul", "softmax", "layernorm", "gelu", "attention"});
    if (op.empty()) throw UserError(a.where() + ".op", "missing (matmul | softmax | layernorm | gelu | attention)");
    auto& g = gen::start_model(model, op);
    if (op == "attention") {
        build_attention(a, batch, g);
        return;
    }
    gen::Emitter e(g, "/" + op);
    if (op == "matmul") {
        const int64_t m = a.integer("m"), n = a.integer("n"), k = a.integer("k");
        gen::add_input(g, "a", batched(batch, {m, k}));
        gen::add_input(g, "b", batched(batch, {k, n}));
        gen::add_output(g, e.node("MatMul", {"a", "b"}), batched(batch, {m, n}));
        return;
    }
    if (op == "gelu") {
        const std::vector<int64_t> dims = batched(batch, {a.integer("m")});
        gen::add_input(g, "input", dims);
        gen::add_output(g, gen::activation(g, "/gelu", "gelu", "input"), dims);
        return;
    }
    const std::vector<int64_t> dims = batched(batch, {a.integer("m"), a.integer("n")});
    gen::add_input(g, "input", dims);
    if (op == "layernorm") {
        gen::add_output(g, e.layer_norm("input", "ln", dims.back()), dims);
        return;
    }
    onnx::NodeProto* node = nullptr;
    const std::string y = e.node("Softmax", {"input"}, &node);
    gen::set_int(*node, "axis", -1);
    gen::add_output(g, y, dims);
}

}  // namespace archsim
