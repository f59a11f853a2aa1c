#include "workloads/generators/moe.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <vector>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"

namespace archsim::gen {

std::string moe_layer(Emitter& e, const std::string& x, const std::string& w, int64_t rows, int64_t d, int64_t experts, int64_t top_k,
                      const ExpertBuilder& expert) {
    const int64_t routed = rows * top_k;
    const int64_t active = std::min(experts, routed), per = (routed + active - 1) / active;
    add_weight(e.graph(), w + ".gate.weight", {d, experts});
    onnx::NodeProto* n = nullptr;
    const std::string probs = e.node("Softmax", {e.node("MatMul", {x, w + ".gate.weight"})}, &n);
    set_int(*n, "axis", -1);
    const std::string top = e.node("TopK", {probs, e.ints({top_k})}, &n);  // [rows, top_k] and their indices
    n->add_output(n->name() + "_output_1");
    std::vector<std::string> outs;
    for (int64_t i = 0; i < active; ++i) {
        Emitter ex(e.graph(), e.prefix() + "/experts." + std::to_string(i));
        outs.push_back(expert(ex, ex.node("Slice", {x, ex.ints({0}), ex.ints({per}), ex.ints({0})}), w + ".experts." + std::to_string(i)));
    }
    for (int64_t i = active; i < experts; ++i) {  // idle this step: its weights stay in the model, its operators are not built
        onnx::GraphProto scratch;
        Emitter idle(scratch, "/idle");
        expert(idle, x, w + ".experts." + std::to_string(i));
        for (const onnx::TensorProto& t : scratch.initializer()) *e.graph().add_initializer() = t;
    }
    const std::string all = e.node("Concat", outs, &n);
    set_int(*n, "axis", 0);
    // each row's top_k outputs (the last share may be padded: active x per >= rows x top_k)
    const std::string routed_rows = per * active == routed ? all : e.node("Slice", {all, e.ints({0}), e.ints({routed}), e.ints({0})});
    const std::string mine = e.reshape(routed_rows, {rows, top_k, d});
    const std::string weighted = e.node("Mul", {mine, e.reshape(top, {rows, top_k, 1})});
    const std::string y = e.node("ReduceSum", {weighted, e.ints({1})}, &n);
    set_int(*n, "keepdims", 0);
    return y;
}

}  // namespace archsim::gen

namespace archsim {

void build_moe_mlp(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t input = a.integer("input");
    const int64_t width = a.integer("width");
    const int64_t layers = a.integer("layers");
    const int64_t experts = a.integer("experts");
    const int64_t top_k = a.integer_or("top_k", 2);
    const int64_t ffn = a.integer_or("ffn", 4 * width);
    const std::string act = a.choice_or("activation", "relu", {"relu", "gelu"});
    const int64_t output = a.integer_or("output", input);
    if (top_k > experts) throw UserError(a.where() + ".top_k", std::to_string(top_k) + " is more than the " + std::to_string(experts) + " experts");
    auto& g = gen::start_model(model, "moe_mlp");
    gen::add_input(g, "input", {batch, input});
    gen::Emitter in(g, "/embed");
    std::string x = in.fc("input", "embed", input, width);
    for (int64_t l = 0; l < layers; ++l) {
        const std::string name = "layers." + std::to_string(l);
        gen::Emitter e(g, "/" + name);
        const std::string y = gen::moe_layer(e, x, name, batch, width, experts, top_k, [&](gen::Emitter& ex, const std::string& rows, const std::string& w) {
            const std::string h = gen::activation(ex.graph(), ex.prefix() + "/act", act, ex.fc(rows, w + ".fc1", width, ffn));
            return ex.fc(h, w + ".fc2", ffn, width);
        });
        x = e.node("Add", {x, y});
    }
    gen::Emitter out(g, "/head");
    gen::add_output(g, out.fc(x, "head", width, output), {batch, output});
}

}  // namespace archsim
