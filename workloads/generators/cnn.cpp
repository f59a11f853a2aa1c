#include "workloads/generators/cnn.h"

#include <onnx/onnx_pb.h>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; }
}  // namespace

void build_conv(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t layers = a.integer("layers");
    const size_t n = static_cast<size_t>(layers);
    const int64_t in_c = a.integer("in_channels");
    const std::vector<int64_t> hw = a.integers_or_pair("input");
    const std::vector<int64_t> channels = a.integers("channels", n);
    const std::vector<int64_t> kernel = a.integers_or("kernel", n, 3);
    const std::vector<int64_t> stride = a.integers_or("stride", n, 1);
    const std::vector<int64_t> groups = a.integers_or("groups", n, 1);
    std::vector<int64_t> padding(n);
    for (size_t i = 0; i < n; ++i) padding[i] = kernel[i] / 2;
    padding = a.integers_or_list("padding", n, padding, 0);
    const bool bn = a.boolean_or("batch_norm", false);
    const bool bias = a.boolean_or("bias", true);
    const std::string act = a.choice_or("activation", "relu", {"relu", "gelu", "sigmoid", "none"});
    auto& g = gen::start_model(model, "conv");
    gen::add_input(g, "input", {batch, in_c, hw[0], hw[1]});
    std::string x = "input";
    int64_t c = in_c, h = hw[0], w = hw[1];
    for (size_t i = 0; i < n; ++i) {
        if (c % groups[i] != 0 || channels[i] % groups[i] != 0)
            throw UserError(a.where() + ".groups", "layer " + std::to_string(i) + ": " + std::to_string(groups[i]) +
                                                      " groups do not divide its channels");
        const std::string p = "/layers." + std::to_string(i);
        x = gen::conv(g, p + "/conv/Conv", x, "layers." + std::to_string(i) + ".conv", {channels[i], c / groups[i], kernel[i], kernel[i]},
                      stride[i], padding[i], groups[i], bias);
        h = out_size(h, kernel[i], stride[i], padding[i]), w = out_size(w, kernel[i], stride[i], padding[i]);
        if (h < 1 || w < 1) throw UserError(a.where() + ".input", "layer " + std::to_string(i) + " leaves no output pixels");
        c = channels[i];
        if (bn) {
            const std::string b = "layers." + std::to_string(i) + ".bn";
            for (const char* s : {".weight", ".bias", ".running_mean", ".running_var"}) gen::add_weight(g, b + s, {c});
            const std::string y = p + "/bn/BatchNormalization_output_0";
            gen::add_node(g, "BatchNormalization", p + "/bn/BatchNormalization",
                          {x, b + ".weight", b + ".bias", b + ".running_mean", b + ".running_var"}, {y});
            x = y;
        }
        if (act != "none") x = gen::activation(g, p + "/act", act, x);
    }
    gen::add_output(g, x, {batch, c, h, w});
}

void build_resnet_block(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const std::string block = a.choice_or("block", "basic", {"basic", "bottleneck"});
    const int64_t in_c = a.integer("in_channels");
    const int64_t out_c = a.integer("channels");
    const int64_t stride = a.integer_or("stride", 1);
    const int64_t size = a.integer("size");
    if (block == "bottleneck" && out_c % 4 != 0) throw UserError(a.where() + ".channels", "a bottleneck's channels must be a multiple of 4");
    auto& g = gen::start_model(model, "resnet_block");
    gen::add_input(g, "input", {batch, in_c, size, size});
    const int64_t out_hw = out_size(size, 3, stride, 1);
    std::string x;
    std::vector<std::string> relus = {"/relu/Relu", "/relu_1/Relu", "/relu_2/Relu"};
    auto relu = [&](const std::string& name, const std::string& in) {
        gen::add_node(g, "Relu", name, {in}, {name + "_output_0"});
        return name + "_output_0";
    };
    if (block == "basic") {
        x = gen::conv(g, "/conv1/Conv", "input", "conv1", {out_c, in_c, 3, 3}, stride, 1, 1, true);
        x = relu(relus[0], x);
        x = gen::conv(g, "/conv2/Conv", x, "conv2", {out_c, out_c, 3, 3}, 1, 1, 1, true);
    } else {
        const int64_t mid = out_c / 4;
        x = gen::conv(g, "/conv1/Conv", "input", "conv1", {mid, in_c, 1, 1}, 1, 0, 1, true);
        x = relu(relus[0], x);
        x = gen::conv(g, "/conv2/Conv", x, "conv2", {mid, mid, 3, 3}, stride, 1, 1, true);
        x = relu(relus[1], x);
        x = gen::conv(g, "/conv3/Conv", x, "conv3", {out_c, mid, 1, 1}, 1, 0, 1, true);
    }
    std::string shortcut = "input";
    if (stride != 1 || in_c != out_c)
        shortcut = gen::conv(g, "/downsample/downsample.0/Conv", "input", "downsample.0", {out_c, in_c, 1, 1}, stride, 0, 1, true);
    gen::add_node(g, "Add", "/Add", {x, shortcut}, {"/Add_output_0"});
    const std::string y = relu(block == "basic" ? relus[1] : relus[2], "/Add_output_0");
    gen::add_output(g, y, {batch, out_c, out_hw, out_hw});
}

}  // namespace archsim
