#pragma once
// The (domain, op_type) -> cost handler table of the ONNX importer (STYLE.md rule 7).
#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// What a handler sees of one node: its proto (for attributes), its resolved input and output
/// tensors (nullptr for an omitted optional input), and the opset of its domain.
struct NodeContext {
    const onnx::NodeProto* node = nullptr;
    std::vector<const Tensor*> in;
    std::vector<const Tensor*> out;
    std::vector<int32_t> in_ids;   ///< tensor indices of the inputs (-1 for an omitted optional input)
    std::vector<int32_t> out_ids;  ///< tensor indices of the outputs
    int64_t opset = 0;
    std::string where;  ///< "model.onnx: node 'name' (OpType)" for errors

    int64_t attr_int(const std::string& name, int64_t def) const;
    double attr_float(const std::string& name, double def) const;
    std::string attr_string(const std::string& name, const std::string& def) const;
    std::vector<int64_t> attr_ints(const std::string& name) const;
    /// Input `i`; throws UserError(where, ...) if the node lacks it.
    const Tensor& input(size_t i) const;
    /// Output `i`; throws UserError(where, ...) if the node lacks it.
    const Tensor& output(size_t i) const;
    /// Tensor index of input `i`, -1 if omitted or absent.
    int32_t input_id(size_t i) const { return i < in_ids.size() ? in_ids[i] : -1; }
    /// Tensor index of output `i`, -1 if absent.
    int32_t output_id(size_t i) const { return i < out_ids.size() ? out_ids[i] : -1; }
};

/// Computes the machine-independent cost of one node; throws UserError on inconsistent shapes.
using OpHandler = std::function<OpCost(const NodeContext&)>;

/// The handler for (domain, op_type), or nullptr. Domain "" and "ai.onnx" are the same.
const OpHandler* find_op_handler(const std::string& domain, const std::string& op_type);

/// Every (domain, op_type) in the table, as "op_type" or "domain:op_type", sorted.
std::vector<std::string> supported_ops();

namespace op_cost {
/// Shared pieces of the handlers (op_handlers.cpp), for the handler files beside it.
/// Reads every input and writes every output once; counts Weight-role inputs as params.
OpCost base_cost(const NodeContext& c, OpClass cls);
/// Makes `k` read only `elems` elements of its input `input` (a lookup's gathered rows, a
/// loss's picked log-probabilities) when that is fewer than the input holds: its read_elems
/// and bytes_read shrink to them; every other input is read whole.
void read_part(OpCost& k, const NodeContext& c, size_t input, int64_t elems);
/// The convolution cost (Conv's handler) of inputs (X, W[, B]) and output Y.
OpCost conv(const NodeContext& c);
/// The matrix product cost (MatMul's handler) of inputs (A, B) and output Y.
OpCost matmul(const NodeContext& c);
/// The handlers of the operators op_handlers_more.cpp prices (losses, signal processing,
/// detection, quantized contractions, text, training operators, optionals and sequences), each
/// given to `add(domain, op_type, handler)`.
void add_more_handlers(const std::function<void(const std::string&, const std::string&, OpHandler)>& add);
}  // namespace op_cost

}  // namespace archsim
