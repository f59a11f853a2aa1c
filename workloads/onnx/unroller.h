#pragma once
// Writing the operators a subgraph runs into the main graph: one body copied per iteration
// under a unique name prefix, with the small glue nodes (Gather, Unsqueeze, Concat, Identity)
// that thread values between copies. Used by control_flow.cpp (If, Loop, Scan) and
// sequences.cpp (SequenceMap, sequence operators rewritten on their elements).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/onnx/const_fold.h"

namespace archsim {

/// Most operators one control-flow node may unroll into (trip count x body operators); a larger
/// one is a UserError, not a silent truncation.
constexpr int64_t kMaxUnrolledNodes = 100000;

/// The attribute `name` of `n`, or nullptr.
const onnx::AttributeProto* node_attr(const onnx::NodeProto& n, const std::string& name);
/// The INT attribute `name` of `n`, or `def`.
int64_t node_attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def);
/// Element `k` of the INTS attribute `name` of `n`, or `def`.
int64_t node_attr_at(const onnx::NodeProto& n, const std::string& name, int k, int64_t def);
/// The node's name, or its op type and position `k`, for names and messages.
std::string node_label(const onnx::NodeProto& n, int k);
/// The value of `name` in `consts` if it is a known scalar (one element).
std::optional<int64_t> known_scalar(const std::map<std::string, ConstTensor>& consts, const std::string& name);
/// Throws UserError at `where` when `iterations` copies of `body` (its nodes and its subgraphs')
/// exceed kMaxUnrolledNodes.
void check_unroll_size(int64_t iterations, const onnx::GraphProto& body, const std::string& where);

/// Writes the replacement of one node: new nodes and initializers, named under a prefix so that
/// every name stays unique. The initializers go into the graph at once; the nodes are collected
/// in nodes() for the caller to splice in the replaced node's place.
class Unroller {
public:
    /// `g`: the graph the initializers go into. `prefix`: the replaced node's label. `opset`: the
    /// model's default-domain opset (Unsqueeze's axes form). `ir_version`: below 4 an initializer
    /// is visible to shape inference only as a graph input too, so one is declared.
    Unroller(onnx::GraphProto& g, std::string prefix, int64_t opset, int64_t ir_version)
        : m_g(g), m_prefix(std::move(prefix)), m_opset(opset), m_declare_inputs(ir_version < 4) {}

    /// Copies `body`'s initializers and nodes under "<prefix>/<tag>/": body input i reads
    /// `inputs[i]`; other names the body does not define are the outer scope's. Returns the
    /// outer names of the body's outputs.
    std::vector<std::string> body(const onnx::GraphProto& body, const std::string& tag, const std::vector<std::string>& inputs);
    /// An int64 (or bool) scalar initializer; returns its name.
    std::string scalar(int64_t v, bool boolean = false);
    /// A 1-D int64 initializer; returns its name.
    std::string ints(const std::vector<int64_t>& v);
    /// A node of `op` on `inputs` writing `output` (a fresh name when empty); returns the output.
    /// `made`, when given, points at the node (valid until the next node is added).
    std::string node(const std::string& op, const std::vector<std::string>& inputs, std::string output = "",
                     onnx::NodeProto** made = nullptr);
    /// `x` with an axis `axis` added (of the result's rank), as the opset spells Unsqueeze.
    std::string unsqueeze(const std::string& x, int64_t axis);
    /// Element `index` of `x` along `axis` (the axis removed): Gather with a scalar index.
    std::string take(const std::string& x, int64_t index, int64_t axis);
    /// `x[begin:end]` along `axis` (the axis kept): Slice with its bounds as inputs (opset >= 10).
    std::string slice(const std::string& x, int64_t begin, int64_t end, int64_t axis);
    /// `parts` joined along the existing axis `axis` (Concat), written to `output` (a fresh name
    /// when empty); returns the output.
    std::string concat(const std::vector<std::string>& parts, int64_t axis, const std::string& output = "");
    /// `parts` stacked along a new axis `axis` (Unsqueeze each, Concat), written to `output` (a
    /// fresh name when empty); returns the output.
    std::string stack(const std::vector<std::string>& parts, int64_t axis, const std::string& output = "");

    std::vector<onnx::NodeProto>& nodes() { return m_nodes; }

private:
    std::string add_initializer(onnx::TensorProto t);

    onnx::GraphProto& m_g;
    std::string m_prefix;
    int64_t m_opset;
    bool m_declare_inputs;
    int64_t m_consts = 0;
    std::vector<onnx::NodeProto> m_nodes;
};

}  // namespace archsim
