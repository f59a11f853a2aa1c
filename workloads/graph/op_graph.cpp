#include "workloads/graph/op_graph.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <functional>
#include <queue>

#include "sim/base/error.h"

namespace archsim {

/// Operators as vertices (property: operator index), tensors as edges (property: tensor index).
struct OpGraphTopology {
    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, int32_t, int32_t>;
    Graph g;
};

int64_t Tensor::elems() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

const char* to_string(OpClass c) {
    switch (c) {
        case OpClass::Contraction: return "contraction";
        case OpClass::Elementwise: return "elementwise";
        case OpClass::Reduction: return "reduction";
        case OpClass::Pooling: return "pooling";
        case OpClass::DataMovement: return "data_movement";
        case OpClass::ShapeOnly: return "shape_only";
        case OpClass::Unsupported: return "unsupported";
    }
    return "?";
}

double OpCost::arithmetic_intensity() const {
    int64_t b = bytes_read + bytes_written;
    return b > 0 ? static_cast<double>(flops) / static_cast<double>(b) : 0.0;
}

bool OpCost::is_gemm_operand(int32_t t) const {
    for (const auto& g : gemms)
        if (g.a.tensor == t || g.b.tensor == t) return true;
    return false;
}

std::string shape_string(const std::vector<int64_t>& shape) {
    if (shape.empty()) return "scalar";
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s;
}

OpGraph::OpGraph(std::string model_name, std::string source, std::vector<Tensor> tensors, std::vector<Operator> ops)
    : m_model_name(std::move(model_name)), m_source(std::move(source)), m_tensors(std::move(tensors)),
      m_ops(std::move(ops)), m_topology(std::make_unique<OpGraphTopology>()) {
    auto& g = m_topology->g;
    const auto n_ops = static_cast<int32_t>(m_ops.size());
    for (int32_t i = 0; i < n_ops; ++i) boost::add_vertex(i, g);

    std::vector<int32_t>& producer = m_producer;
    producer.assign(m_tensors.size(), -1);
    m_consumers.assign(m_tensors.size(), 0);
    for (int32_t i = 0; i < n_ops; ++i)
        for (int32_t t : m_ops[i].outputs) {
            if (producer[t] >= 0)
                throw UserError(m_source + ": node '" + m_ops[i].name + "'",
                                "tensor '" + m_tensors[t].name + "' is also produced by node '" +
                                    m_ops[producer[t]].name + "'");
            producer[t] = i;
        }
    for (int32_t i = 0; i < n_ops; ++i)
        for (int32_t t : m_ops[i].inputs) {
            if (t < 0) continue;
            ++m_consumers[t];
            if (producer[t] >= 0) boost::add_edge(producer[t], i, t, g);
            else if (m_tensors[t].role == TensorRole::Activation)
                throw UserError(m_source + ": node '" + m_ops[i].name + "' (" + m_ops[i].op_type + ")",
                                "input '" + m_tensors[t].name +
                                    "' is not produced by any node, graph input or initializer");
        }

    // Kahn's algorithm with a min-heap on the operator index: a topological order that keeps
    // the file order wherever dependencies allow, and names an operator on a cycle if any.
    std::vector<int32_t> indeg(n_ops, 0);
    for (int32_t i = 0; i < n_ops; ++i) indeg[i] = static_cast<int32_t>(boost::in_degree(i, g));
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
    for (int32_t i = 0; i < n_ops; ++i)
        if (indeg[i] == 0) ready.push(i);
    m_topo.reserve(n_ops);
    while (!ready.empty()) {
        int32_t v = ready.top();
        ready.pop();
        m_topo.push_back(v);
        for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
            auto w = static_cast<int32_t>(boost::target(*e, g));
            if (--indeg[w] == 0) ready.push(w);
        }
    }
    if (static_cast<int32_t>(m_topo.size()) != n_ops) {
        int32_t on_cycle = 0;
        for (int32_t i = 0; i < n_ops; ++i)
            if (indeg[i] > 0) { on_cycle = i; break; }
        throw UserError(m_source + ": node '" + m_ops[on_cycle].name + "' (" + m_ops[on_cycle].op_type + ")",
                        "the graph has a cycle through this node");
    }
}

OpGraph::OpGraph(std::string model_name, std::string source, std::vector<Tensor> tensors, std::vector<Operator> ops,
                 std::string runtime)
    : OpGraph(std::move(model_name), std::move(source), std::move(tensors), std::move(ops)) {
    m_runtime = std::move(runtime);
}

OpGraph::~OpGraph() = default;
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;

std::vector<int32_t> OpGraph::predecessors(int32_t op) const {
    std::vector<int32_t> out;
    for (auto [e, end] = boost::in_edges(op, m_topology->g); e != end; ++e)
        out.push_back(static_cast<int32_t>(boost::source(*e, m_topology->g)));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

size_t OpGraph::edge_count() const { return boost::num_edges(m_topology->g); }

int64_t OpGraph::total_macs() const {
    int64_t s = 0;
    for (const auto& o : m_ops) s += o.cost.macs;
    return s;
}

int64_t OpGraph::total_flops() const {
    int64_t s = 0;
    for (const auto& o : m_ops) s += o.cost.flops;
    return s;
}

int64_t OpGraph::total_params() const {
    int64_t s = 0;
    for (const auto& t : m_tensors)
        if (t.role == TensorRole::Weight) s += t.elems();
    return s;
}

}  // namespace archsim
