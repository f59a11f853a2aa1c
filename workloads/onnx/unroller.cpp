#include "workloads/onnx/unroller.h"

#include <algorithm>

#include "sim/base/error.h"

namespace archsim {

namespace {

/// Counts the nodes of `g` and of every subgraph inside it.
int64_t node_count(const onnx::GraphProto& g) {
    int64_t n = 0;
    for (const auto& node : g.node()) {
        ++n;
        for (const auto& a : node.attribute()) {
            if (a.has_g()) n += node_count(a.g());
            for (const auto& sub : a.graphs()) n += node_count(sub);
        }
    }
    return n;
}

/// Renames the references to `names` inside a subgraph (an If nested in a Loop body reads the
/// body's values from the outer scope).
void rename_refs(onnx::GraphProto& g, const std::map<std::string, std::string>& names) {
    for (auto& node : *g.mutable_node()) {
        for (auto& in : *node.mutable_input()) {
            auto it = names.find(in);
            if (it != names.end()) in = it->second;
        }
        for (auto& a : *node.mutable_attribute()) {
            if (a.has_g()) rename_refs(*a.mutable_g(), names);
            for (auto& sub : *a.mutable_graphs()) rename_refs(sub, names);
        }
    }
}

void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

}  // namespace

const onnx::AttributeProto* node_attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

int64_t node_attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
    const auto* a = node_attr(n, name);
    return a ? a->i() : def;
}

int64_t node_attr_at(const onnx::NodeProto& n, const std::string& name, int k, int64_t def) {
    const auto* a = node_attr(n, name);
    return a && k < a->ints_size() ? a->ints(k) : def;
}

std::string node_label(const onnx::NodeProto& n, int k) { return n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name(); }

std::optional<int64_t> known_scalar(const std::map<std::string, ConstTensor>& consts, const std::string& name) {
    auto it = consts.find(name);
    if (it == consts.end() || it->second.elems() != 1) return std::nullopt;
    return it->second.as_int(0);
}

void check_unroll_size(int64_t iterations, const onnx::GraphProto& body, const std::string& where) {
    const int64_t per = std::max<int64_t>(1, node_count(body));
    if (iterations > kMaxUnrolledNodes / per)
        throw UserError(where, std::to_string(iterations) + " iterations of " + std::to_string(per) + " operators exceed the " +
                                   std::to_string(kMaxUnrolledNodes) + " operators archsim unrolls");
}

std::vector<std::string> Unroller::body(const onnx::GraphProto& body, const std::string& tag, const std::vector<std::string>& inputs) {
    const std::string p = m_prefix + "/" + tag + "/";
    std::map<std::string, std::string> names;
    for (int i = 0; i < body.input_size() && i < static_cast<int>(inputs.size()); ++i) names[body.input(i).name()] = inputs[static_cast<size_t>(i)];
    for (const auto& t : body.initializer()) {
        if (names.count(t.name())) continue;  // a default value the caller binds
        onnx::TensorProto c = t;
        c.set_name(p + t.name());
        names[t.name()] = c.name();
        add_initializer(std::move(c));
    }
    int k = 0;
    for (const auto& node : body.node()) {
        onnx::NodeProto n = node;
        n.set_name(p + (node.name().empty() ? node.op_type() + "_" + std::to_string(k) : node.name()));
        ++k;
        for (auto& in : *n.mutable_input()) {
            auto it = names.find(in);
            if (it != names.end()) in = it->second;
        }
        for (auto& out : *n.mutable_output()) {
            if (out.empty()) continue;
            names[out] = p + out;
            out = p + out;
        }
        for (auto& a : *n.mutable_attribute()) {
            if (a.has_g()) rename_refs(*a.mutable_g(), names);
            for (auto& sub : *a.mutable_graphs()) rename_refs(sub, names);
        }
        m_nodes.push_back(std::move(n));
    }
    std::vector<std::string> outs;
    for (const auto& o : body.output()) {
        auto it = names.find(o.name());
        outs.push_back(it != names.end() ? it->second : o.name());
    }
    return outs;
}

std::string Unroller::scalar(int64_t v, bool boolean) {
    onnx::TensorProto t;
    t.set_name(m_prefix + "/c" + std::to_string(m_consts++));
    t.set_data_type(boolean ? onnx::TensorProto::BOOL : onnx::TensorProto::INT64);
    if (boolean) t.add_int32_data(v != 0);
    else t.add_int64_data(v);
    return add_initializer(std::move(t));
}

std::string Unroller::ints(const std::vector<int64_t>& v) {
    onnx::TensorProto t;
    t.set_name(m_prefix + "/c" + std::to_string(m_consts++));
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t.add_int64_data(x);
    return add_initializer(std::move(t));
}

std::string Unroller::node(const std::string& op, const std::vector<std::string>& inputs, std::string output, onnx::NodeProto** made) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(m_prefix + "/" + op + "_" + std::to_string(m_nodes.size()));
    for (const auto& i : inputs) n.add_input(i);
    if (output.empty()) output = n.name() + "_output_0";
    n.add_output(output);
    m_nodes.push_back(std::move(n));
    if (made) *made = &m_nodes.back();
    return output;
}

std::string Unroller::unsqueeze(const std::string& x, int64_t axis) {
    if (m_opset >= 13) return node("Unsqueeze", {x, ints({axis})});
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Unsqueeze", {x}, "", &n);
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(axis);
    return y;
}

std::string Unroller::take(const std::string& x, int64_t index, int64_t axis) {
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Gather", {x, scalar(index)}, "", &n);
    set_int(*n, "axis", axis);
    return y;
}

std::string Unroller::slice(const std::string& x, int64_t begin, int64_t end, int64_t axis) {
    return node("Slice", {x, ints({begin}), ints({end}), ints({axis})});
}

std::string Unroller::concat(const std::vector<std::string>& parts, int64_t axis, const std::string& output) {
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Concat", parts, output, &n);
    set_int(*n, "axis", axis);
    return y;
}

std::string Unroller::stack(const std::vector<std::string>& parts, int64_t axis, const std::string& output) {
    std::vector<std::string> u;
    for (const auto& p : parts) u.push_back(unsqueeze(p, axis));
    return concat(u, axis, output);
}

std::string Unroller::add_initializer(onnx::TensorProto t) {
    if (m_declare_inputs) {
        auto* in = m_g.add_input();
        in->set_name(t.name());
        auto* tt = in->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(t.data_type());
        auto* shape = tt->mutable_shape();
        for (const int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
    }
    *m_g.add_initializer() = t;
    return t.name();
}

}  // namespace archsim
