#pragma once
// Small helpers for writing ONNX graphs in memory (the generators' output), shape-only weights.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace archsim::gen {

/// Starts a model: IR 7, default-domain opset 13, graph `name`.
onnx::GraphProto& start_model(onnx::ModelProto& model, const std::string& name);
/// Declares a float graph input or output of `dims`.
void add_input(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
void add_output(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
/// A float initializer of `dims` with no data (the importer reads dims only; weights never load).
void add_weight(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims);
/// A node; returns it for attributes.
onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
/// An integer attribute.
void set_int(onnx::NodeProto& n, const std::string& name, int64_t v);

}  // namespace archsim::gen
