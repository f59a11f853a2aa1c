#pragma once
// Constant folding of the shape-computation subgraphs exporters leave in ONNX files
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape and the like), so static shapes resolve.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace archsim {

/// A small constant tensor held by value during folding: integers (and bools) in `i`, floats in
/// `f`. Limited to kMaxFoldElems elements: shape data, never weights.
struct ConstTensor {
    std::vector<int64_t> shape;
    int32_t dtype = onnx::TensorProto_DataType_INT64;
    std::vector<int64_t> i;
    std::vector<double> f;

    bool is_float() const;
    int64_t elems() const;
    /// Element `k` as a double / as an integer, whatever the storage.
    double as_double(int64_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
    int64_t as_int(int64_t k) const { return is_float() ? static_cast<int64_t>(f[k]) : i[k]; }
};

/// Largest tensor the folder evaluates (elements); bigger results are left to run on the machine.
constexpr int64_t kMaxFoldElems = 1 << 16;

/// Reads the value of an initializer or Constant payload if it is small and its bytes are in
/// the file (inline). External data is never read here: shape-only models keep weights out.
std::optional<ConstTensor> const_from_proto(const onnx::TensorProto& t);

/// Writes a folded value back as an initializer named `name`.
onnx::TensorProto const_to_proto(const ConstTensor& c, const std::string& name);

/// Static shape of a value if every dim is known.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

/// Evaluates `node` if it is a foldable op whose inputs are all known constants (or, for
/// Shape/Size, whose input shape is static). Returns its outputs, or nullopt if it cannot be
/// folded. Never throws on odd input: anything unexpected leaves the node unfolded.
std::optional<std::vector<ConstTensor>> fold_node(const onnx::NodeProto& node,
                                                  const std::map<std::string, ConstTensor>& consts,
                                                  const ShapeMap& shapes, int64_t opset);

}  // namespace archsim
