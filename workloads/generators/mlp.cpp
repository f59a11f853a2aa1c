// family = "mlp": a multilayer perceptron as PyTorch exports nn.Sequential of nn.Linear layers:
// Gemm (transB = 1, weight [out, in], bias [out]) with an activation between layers.
#include "workloads/generators/mlp.h"

#include <onnx/onnx_pb.h>

#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

void build_mlp(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t layers = a.integer("layers");
    const std::vector<int64_t> widths = layers > 1 ? a.integers("width", static_cast<size_t>(layers - 1)) : std::vector<int64_t>{};
    // a square network d -> d -> ... -> d when width is one integer and input or output is not given
    const bool square = layers > 1 && a.is_integer("width");
    const int64_t input = square && !a.has("input") ? widths[0] : a.integer("input");
    const int64_t output = square && !a.has("output") ? widths[0] : a.integer("output");
    const std::string act = a.choice_or("activation", "relu", {"relu", "gelu", "sigmoid"});
    const bool bias = a.boolean_or("bias", true);
    auto& g = gen::start_model(model, "mlp");
    gen::add_input(g, "input", {batch, input});
    std::string x = "input";
    int64_t in = input;
    // node names follow the exporter's, so reports read alike: /0/Gemm, /1/Relu, /2/Gemm, ...
    int64_t idx = 0;
    for (int64_t l = 0; l < layers; ++l) {
        const int64_t out = l + 1 < layers ? widths[static_cast<size_t>(l)] : output;
        x = gen::Emitter(g, "/" + std::to_string(idx)).fc(x, std::to_string(idx), in, out, bias);
        ++idx;
        in = out;
        if (l + 1 < layers) {
            x = gen::activation(g, "/" + std::to_string(idx), act, x);
            ++idx;
        }
    }
    gen::add_output(g, x, {batch, output});
}

}  // namespace archsim
