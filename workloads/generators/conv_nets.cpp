#include "workloads/generators/conv_nets.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

/// A BatchNormalization over the channels of `x` (its scale, shift and running statistics named
/// `w`.weight, .bias, .running_mean, .running_var).
std::string batch_norm(gen::Emitter& e, const std::string& x, const std::string& w, int64_t channels) {
    for (const char* s : {".weight", ".bias", ".running_mean", ".running_var"}) gen::add_weight(e.graph(), w + s, {channels});
    return e.node("BatchNormalization", {x, w + ".weight", w + ".bias", w + ".running_mean", w + ".running_var"});
}

/// A convolution `w` of `w_dims` [Cout, Cin / groups, taps...] on `x` with `stride`, `dilation`
/// and `pads` (ONNX order: every spatial axis's begin, then every end), with a bias.
std::string conv(gen::Emitter& e, const std::string& x, const std::string& w, const std::vector<int64_t>& w_dims, int64_t stride,
                 int64_t dilation, const std::vector<int64_t>& pads, int64_t groups = 1) {
    gen::add_weight(e.graph(), w + ".weight", w_dims);
    gen::add_weight(e.graph(), w + ".bias", {w_dims[0]});
    onnx::NodeProto* n = nullptr;
    const std::string y = e.node("Conv", {x, w + ".weight", w + ".bias"}, &n);
    gen::set_conv_attributes(*n, w_dims, stride, pads, dilation, groups);
    return y;
}

/// A 2-D k x k convolution with "same" padding (k / 2 each side) from `in` to `out` channels,
/// then an optional BatchNormalization and `act` (relu | silu | none).
std::string conv_bn_act(gen::Emitter& e, const std::string& x, const std::string& w, int64_t in, int64_t out, int64_t k, int64_t stride,
                        int64_t groups, bool bn, const std::string& act) {
    const int64_t p = k / 2;
    std::string y = conv(e, x, w, {out, in / groups, k, k}, stride, 1, {p, p, p, p}, groups);
    if (bn) y = batch_norm(e, y, w + ".bn", out);
    if (act == "relu") y = e.node("Relu", {y});
    if (act == "silu") y = e.node("Mul", {y, e.node("Sigmoid", {y})});
    return y;
}

int64_t conv_out(int64_t in, int64_t k, int64_t stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

}  // namespace

void build_conv_autoencoder(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t in_c = a.integer_or("in_channels", 3);
    const std::vector<int64_t> hw = a.integers_or_pair("size");
    const int64_t base = a.integer_or("channels", 32);
    const int64_t depth = a.integer_or("depth", 3);
    const std::string skip = a.choice_or("skip", "concat", {"concat", "add", "none"});
    const bool bn = a.boolean_or("batch_norm", false);
    if (depth > 16 || hw[0] % (int64_t(1) << depth) != 0 || hw[1] % (int64_t(1) << depth) != 0)
        throw UserError(a.where() + ".size", "H and W must be divisible by 2^depth = " + std::to_string(int64_t(1) << std::min<int64_t>(depth, 16)));
    auto& g = gen::start_model(model, "conv_autoencoder");
    gen::add_input(g, "input", {batch, in_c, hw[0], hw[1]});
    auto double_conv = [&](gen::Emitter& e, const std::string& x, const std::string& w, int64_t in, int64_t out) {
        return conv_bn_act(e, conv_bn_act(e, x, w + ".conv1", in, out, 3, 1, 1, bn, "relu"), w + ".conv2", out, out, 3, 1, 1, bn, "relu");
    };
    std::vector<std::string> skips;
    std::string x = "input";
    int64_t c = in_c;
    for (int64_t i = 0; i < depth; ++i) {
        const std::string name = "encoder." + std::to_string(i);
        gen::Emitter e(g, "/" + name);
        x = double_conv(e, x, name, c, base << i);
        c = base << i;
        skips.push_back(x);
        onnx::NodeProto* pool = nullptr;
        x = e.node("MaxPool", {x}, &pool);
        gen::set_ints(*pool, "kernel_shape", {2, 2});
        gen::set_ints(*pool, "strides", {2, 2});
    }
    gen::Emitter mid(g, "/bottleneck");
    x = double_conv(mid, x, "bottleneck", c, base << depth);
    c = base << depth;
    for (int64_t i = depth - 1; i >= 0; --i) {
        const std::string name = "decoder." + std::to_string(i);
        gen::Emitter e(g, "/" + name);
        const int64_t out = base << i;
        gen::add_weight(g, name + ".up.weight", {c, out, 2, 2});
        gen::add_weight(g, name + ".up.bias", {out});
        onnx::NodeProto* up = nullptr;
        x = e.node("ConvTranspose", {x, name + ".up.weight", name + ".up.bias"}, &up);
        gen::set_ints(*up, "kernel_shape", {2, 2});
        gen::set_ints(*up, "strides", {2, 2});
        int64_t joined = out;
        if (skip == "concat") {
            onnx::NodeProto* cat = nullptr;
            x = e.node("Concat", {skips[static_cast<size_t>(i)], x}, &cat);
            gen::set_int(*cat, "axis", 1);
            joined = 2 * out;
        } else if (skip == "add") {
            x = e.node("Add", {x, skips[static_cast<size_t>(i)]});
        }
        x = double_conv(e, x, name, joined, out);
        c = out;
    }
    gen::Emitter head(g, "/output");
    x = head.node("Sigmoid", {conv(head, x, "output", {in_c, c, 1, 1}, 1, 1, {0, 0, 0, 0})});
    gen::add_output(g, x, {batch, in_c, hw[0], hw[1]});
}

void build_separable_cnn(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t in_c = a.integer_or("in_channels", 3);
    const std::vector<int64_t> hw = a.integers_or_pair("size");
    const int64_t stem = a.integer_or("stem", 32);
    const int64_t blocks = a.integer("blocks");
    const size_t n = static_cast<size_t>(blocks);
    const std::vector<int64_t> channels = a.integers("channels", n);
    const std::vector<int64_t> stride = a.integers_or("stride", n, 1);
    const double se_ratio = a.real_or("se_ratio", 0.25, 0.0, 1.0);
    const bool bn = a.boolean_or("batch_norm", true);
    const std::string act = a.choice_or("activation", "relu", {"relu", "silu"});
    const int64_t classes = a.integer_or("classes", 1000, 0);
    auto& g = gen::start_model(model, "separable_cnn");
    gen::add_input(g, "input", {batch, in_c, hw[0], hw[1]});
    gen::Emitter s(g, "/stem");
    std::string x = conv_bn_act(s, "input", "stem", in_c, stem, 3, 2, 1, bn, act);
    int64_t c = stem, h = conv_out(hw[0], 3, 2), w = conv_out(hw[1], 3, 2);
    for (size_t i = 0; i < n; ++i) {
        const std::string name = "blocks." + std::to_string(i);
        gen::Emitter e(g, "/" + name);
        x = conv_bn_act(e, x, name + ".dw", c, c, 3, stride[i], c, bn, act);
        h = conv_out(h, 3, stride[i]), w = conv_out(w, 3, stride[i]);
        if (se_ratio > 0) {
            const int64_t squeezed = std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(c) * se_ratio)));
            gen::Emitter se(g, "/" + name + "/se");
            std::string z = se.node("GlobalAveragePool", {x});
            z = se.node("Relu", {conv(se, z, name + ".se.reduce", {squeezed, c, 1, 1}, 1, 1, {0, 0, 0, 0})});
            z = se.node("Sigmoid", {conv(se, z, name + ".se.expand", {c, squeezed, 1, 1}, 1, 1, {0, 0, 0, 0})});
            x = se.node("Mul", {x, z});
        }
        x = conv_bn_act(e, x, name + ".pw", c, channels[i], 1, 1, 1, bn, act);
        c = channels[i];
    }
    if (classes == 0) {
        gen::add_output(g, x, {batch, c, h, w});
        return;
    }
    gen::Emitter head(g, "/classifier");
    const std::string pooled = head.node("Flatten", {head.node("GlobalAveragePool", {x})});
    gen::add_output(g, head.fc(pooled, "classifier", c, classes), {batch, classes});
}

void build_tcn(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const int64_t in_c = a.integer("in_channels");
    const int64_t levels = a.integer("levels");
    const size_t n = static_cast<size_t>(levels);
    const std::vector<int64_t> channels = a.integers("channels", n);
    const int64_t kernel = a.integer_or("kernel", 3);
    const int64_t seq = a.integer("sequence");
    const int64_t classes = a.integer_or("classes", 0, 0);
    if (levels > 40) throw UserError(a.where() + ".levels", "at most 40 (dilation 2^levels)");
    auto& g = gen::start_model(model, "tcn");
    gen::add_input(g, "input", {batch, in_c, seq});
    std::string x = "input";
    int64_t c = in_c;
    for (size_t i = 0; i < n; ++i) {
        const std::string name = "network." + std::to_string(i);
        gen::Emitter e(g, "/" + name);
        const int64_t dilation = int64_t(1) << i, left = (kernel - 1) * dilation;
        std::string y = e.node("Relu", {conv(e, x, name + ".conv1", {channels[i], c, kernel}, 1, dilation, {left, 0})});
        y = e.node("Relu", {conv(e, y, name + ".conv2", {channels[i], channels[i], kernel}, 1, dilation, {left, 0})});
        const std::string res = c == channels[i] ? x : conv(e, x, name + ".downsample", {channels[i], c, 1}, 1, 1, {0, 0});
        x = e.node("Relu", {e.node("Add", {y, res})});
        c = channels[i];
    }
    if (classes == 0) {
        gen::add_output(g, x, {batch, c, seq});
        return;
    }
    gen::Emitter head(g, "/linear");
    const std::string last = head.reshape(head.node("Slice", {x, head.ints({seq - 1}), head.ints({seq}), head.ints({2})}), {batch, c});
    gen::add_output(g, head.fc(last, "linear", c, classes), {batch, classes});
}

}  // namespace archsim
