#pragma once
// Small helpers for writing ONNX graphs in memory (the generators' output), shape-only weights.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace archsim::gen {

/// Starts a model: IR 7, default-domain opset 13, graph `name`.
onnx::GraphProto& start_model(onnx::ModelProto& model, const std::string& name);
/// Declares a float graph input or output of `dims`.
void add_input(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
void add_output(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
/// A float value_info: the shape of an intermediate that ONNX's shape inference cannot infer (an
/// operator newer than the installed ONNX's opsets).
void add_value_info(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
/// A float initializer of `dims` with no data (the importer reads dims only; weights never load).
void add_weight(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
/// A node; returns it for attributes.
onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
/// An integer attribute.
void set_int(onnx::NodeProto& n, const std::string& name, int64_t v);

}  // namespace archsim::gen

namespace archsim::gen {
/// A Constant node holding int64 `values` (1-D), e.g. a Reshape target or Slice bounds.
void add_int64_constant(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& values);
/// A Constant node holding one float (a scalar), e.g. a scale.
void add_float_constant(onnx::GraphProto& g, const std::string& name, float value);
/// A string attribute.
void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v);
/// An int list attribute.
void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
/// A Conv node's attributes for weights `w_dims` [out, in/groups, taps...]: kernel_shape, the
/// stride on every spatial axis, `pads` (ONNX order: every axis's begin, then every end), the
/// dilation when not 1, the group count when not 1.
void set_conv_attributes(onnx::NodeProto& n, const std::vector<int64_t>& w_dims, int64_t stride, const std::vector<int64_t>& pads,
                         int64_t dilation = 1, int64_t groups = 1);
/// Conv (with bias) of `w_dims` = [out, in/groups, kh, kw] on `x`; returns the output name.
std::string conv(onnx::GraphProto& g, const std::string& node, const std::string& x, const std::string& weight,
                 const std::vector<int64_t>& w_dims, int64_t stride, int64_t pad, int64_t groups, bool bias);
}  // namespace archsim::gen

namespace archsim::gen {
/// An activation after `x` as torch.onnx exports it at opset 13: "relu" -> Relu, "sigmoid" ->
/// Sigmoid, "silu" -> Sigmoid and Mul, "gelu" -> x * 0.5 * (1 + erf(x / sqrt(2))) as Div, Erf,
/// Add, Mul, Mul (opset 13 has no Gelu). Nodes are named "<prefix>/<Op>" ("_1", "_2" for
/// repeats); returns the output's name.
std::string activation(onnx::GraphProto& g, const std::string& prefix, const std::string& kind, const std::string& x);
}  // namespace archsim::gen

namespace archsim::gen {
/// Emits nodes named like torch.onnx's exporter names them: "<prefix>/<Op>", then "<prefix>/<Op>_1",
/// "<prefix>/<Op>_2", ... per op type; constants are named "<prefix>/c<N>" (they fold away).
class Emitter {
public:
    Emitter(onnx::GraphProto& g, std::string prefix) : m_g(g), m_prefix(std::move(prefix)) {}
    /// Adds an `op` node on `inputs` (the node itself in `out` when given); returns its output.
    std::string node(const std::string& op, const std::vector<std::string>& inputs, onnx::NodeProto** out = nullptr);
    /// A Transpose with `perm`.
    std::string transpose(const std::string& x, const std::vector<int64_t>& perm);
    /// A Reshape to the constant `shape`.
    std::string reshape(const std::string& x, const std::vector<int64_t>& shape);
    /// A float scalar constant; returns its name.
    std::string scalar(float v);
    /// A 1-D int64 constant; returns its name.
    std::string ints(const std::vector<int64_t>& v);
    /// A boolean scalar constant; returns its name.
    std::string boolean(bool v);
    /// x @ W (+ b) with W [in, out] named `w` + ".weight" (and b [out] `w` + ".bias"), as
    /// torch.onnx exports nn.Linear on an input of rank > 2: MatMul, then Add.
    std::string linear(const std::string& x, const std::string& w, int64_t in, int64_t out, bool bias);
    /// nn.Linear on a 2-D input `x` [rows, in] as torch.onnx exports it: Gemm (transB = 1) with
    /// weight [out, in] named `w` + ".weight" and, with `bias`, bias [out] `w` + ".bias".
    std::string fc(const std::string& x, const std::string& w, int64_t in, int64_t out, bool bias = true);
    /// Dropout in training mode with probability `p` (x itself when p = 0): outputs the kept
    /// values and the mask.
    std::string dropout(const std::string& x, double p);
    /// LayerNorm over the last axis as one LayerNormalization operator (opset 17), with bias.
    std::string layer_norm(const std::string& x, const std::string& w, int64_t d);
    /// LayerNorm (with bias) or RMSNorm over the last axis, decomposed into ONNX primitives as
    /// torch.onnx exports them at opset 13.
    std::string norm(const std::string& x, const std::string& w, int64_t d, bool rms);
    onnx::GraphProto& graph() { return m_g; }
    /// The node name prefix.
    const std::string& prefix() const { return m_prefix; }

private:
    std::string constant_name() { return m_prefix + "/c" + std::to_string(m_consts++); }

    onnx::GraphProto& m_g;
    std::string m_prefix;
    std::map<std::string, int> m_count;
    int m_consts = 0;
};
}  // namespace archsim::gen
