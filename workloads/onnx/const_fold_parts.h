#pragma once
// The pieces of constant folding (const_fold.h) that its files share: the helpers, what a folding
// rule sees of a node, and the (op_type -> rule) table (const_fold_ops.cpp). Internal to
// workloads/onnx.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workloads/onnx/const_fold.h"

namespace archsim::fold {

/// A fold's outputs, or nothing when the node is left to run.
using Result = std::optional<std::vector<ConstTensor>>;

/// Whether `dt` is an integer (or bool) ONNX element type.
bool is_int_type(int32_t dt);
/// `v` as an int64: NaN -> 0, beyond the range -> the nearest end.
int64_t saturate_i64(double v);
/// The numpy broadcast of the tensors' shapes, or nothing when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast(const std::vector<const ConstTensor*>& ts);
/// The flat index into `t` of flat element `flat` of the broadcast shape `out_shape`.
int64_t broadcast_index(const ConstTensor& t, const std::vector<int64_t>& out_shape, int64_t flat);
/// Attribute `name` of `n`, or nullptr; its integer (`def` when absent); its integer list.
const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name);
int64_t attr_i(const onnx::NodeProto& n, const char* name, int64_t def);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name);
/// An int64 tensor of `shape` holding `v`.
ConstTensor make_int(std::vector<int64_t> shape, std::vector<int64_t> v);
/// A negative axis counted from the end of `rank` axes.
int64_t norm_axis(int64_t axis, int64_t rank);
/// One output, unless it exceeds kMaxFoldElems.
Result one(ConstTensor c);
/// An elementwise n-ary op `f` with numpy broadcasting, the result of element type `out_dtype`.
Result elementwise(const std::vector<const ConstTensor*>& in, int32_t out_dtype, const std::function<double(const std::vector<double>&)>& f);
/// Slice (inputs at opset >= 10, attributes before), Gather, Concat of constants.
Result fold_slice(const onnx::NodeProto& node, const std::vector<const ConstTensor*>& in, int64_t opset);
Result fold_gather(const onnx::NodeProto& node, const ConstTensor& data, const ConstTensor& idx);
Result fold_concat(const onnx::NodeProto& node, const std::vector<const ConstTensor*>& in);
/// Reshape's output shape for `in_shape` and the target `spec` (0 copies a dim unless
/// `allowzero`, -1 infers one), or nothing when it does not fit.
std::optional<std::vector<int64_t>> reshape_target(const std::vector<int64_t>& in_shape, const ConstTensor& spec, bool allowzero);

/// What a rule sees of a node: the node (its attributes), its inputs' constant values (nullptr
/// for an omitted optional input; empty for a rule that reads shapes only), the static shapes
/// known, and the model's opset.
struct FoldArgs {
    const onnx::NodeProto& node;
    std::vector<const ConstTensor*> in;
    const ShapeMap& shapes;
    int64_t opset = 0;
};

/// How one op type folds: whether every input must be a known constant (the first one present),
/// and the fold itself (nothing: leave the node to run).
struct FoldRule {
    bool constant_inputs = true;
    std::function<Result(const FoldArgs&)> fold;
};

/// The rule for `op_type` (default domain), or nullptr: the op is never folded.
const FoldRule* find_fold_rule(const std::string& op_type);

}  // namespace archsim::fold
